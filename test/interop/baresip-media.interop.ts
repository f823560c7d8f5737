/**
 * Interop, media: baresip (Debian's `baresip-core` 1.0), a real softphone
 * run headless (test/interop/support/baresip.ts: a WAV file as its
 * microphone, what it hears saved by its `sndfile` module, driven through
 * `ctrl_tcp`), registered as a SIP user of a PROGRAMMABLE domain, calls a
 * number of the domain whose handler (a real local HTTP server) answers
 * - `<Say>` of a greeting: the audio baresip decoded holds the speech
 *   engine's greeting — sound for most of the engine's length of it, at
 *   its level, not silence;
 * - `<Input>`: the keys baresip sends (RFC 4733 telephone-events, its
 *   `sndcode` command) reach the handler as the Input's digits;
 * - `<Record>`: a message baresip says (its microphone file: the speech
 *   engine's audio of a sentence) is stored as a recording with sound for
 *   the sentence's length, at its level; the silence after it ends it.
 * Run by `npm run test:interop` only.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Recording_State, Recordings } from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipUsers } from "../../gen/switchboard/voice/v1/sip_users_pb.js";
import { systemClock } from "../../src/clock.js";
import { type CallRow, calls } from "../../src/db/schema/index.js";
import { sharedSpeech } from "../../src/media/speech/index.js";
import { type App, build } from "../../src/server.js";
import { parseWav } from "../recordings/audio.js";
import { createTestClient, newProject, testConfig } from "../support/app.js";
import { xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { newSipDomainId } from "../voice/support.js";
import { FRAME, sound } from "./support/audio.js";
import { Baresip } from "./support/baresip.js";

const GREETING = "Welcome to Switchboard. This greeting was synthesized for the interop test.";
const MESSAGE = "Hi, this is alice on baresip. Please call me back tomorrow morning.";
const PASSWORD = "baresip-media-s3cret";

describe.each(testDatabases())(
  "baresip calling a PROGRAMMABLE domain on $name: audio and keys",
  (backend) => {
    const database = useTestDatabase(backend);
    let app: App;
    let udp: number;
    let base: string;
    let handler: Receiver;
    let fqdn: string;
    let project: string;
    /** Calls already checked by an earlier test. */
    const seen = new Set<string>();
    /** The markup the handler answers with at its first request; "" after that (the call ends). */
    let markup = "";
    const phones: Baresip[] = [];

    beforeAll(async () => {
      // baresip 1.0 answers only MD5 challenges (docs/connect.md).
      app = await build({
        config: testConfig({
          SIP_PORT: "0",
          RTP_PORT_MIN: "0",
          SIP_DIGEST_ALGORITHMS: "MD5",
          LOG_LEVEL: "silent",
          WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
        }),
        db: database.db,
      });
      udp = (await app.listenSip()).local("UDP")!.port;
      base = `http://127.0.0.1:${(await app.listen(0)).port}`;
      handler = await startReceiver();
      handler.handle((req, res) => {
        res.setHeader("content-type", "application/xml");
        res.end(xml(req.path.startsWith("/voice") ? markup : ""));
      });
      project = await newProject(database.db);
      const d = await createTestClient(SipDomains, database.db, systemClock).createSipDomain({
        parent: project,
        sipDomainId: newSipDomainId("bm"),
        sipDomain: {
          allowRegister: true,
          callTerminationMode: Mode.PROGRAMMABLE,
          callTerminationHandlerUris: [`${handler.base}/voice`],
          cidrBlocks: [{ cidrBlock: "127.0.0.1/32" }],
        },
      });
      fqdn = d.fqdn;
      await createTestClient(SipUsers, database.db, systemClock).createSipUser({
        parent: d.name,
        sipUserId: "alice",
        sipUser: { username: "alice", password: PASSWORD },
      });
    });

    afterAll(async () => {
      for (const p of phones) await p.stop();
      await handler?.close();
      await app?.close();
    });

    /**
     * A registered baresip whose microphone says `microphone` (silence by default), padded
     * with silence to two minutes: baresip 1.0 hangs up when its aufile source ends.
     */
    async function phone(microphone = new Int16Array(0), codec: "PCMU" | "PCMA" = "PCMU"): Promise<Baresip> {
      const p = await Baresip.start({
        aor: `sip:alice@${fqdn}`,
        password: PASSWORD,
        edgePort: udp,
        microphone,
        codec,
      });
      phones.push(p);
      await p.registered();
      return p;
    }

    /** The call's row once it has ended. */
    async function ended(p: Baresip): Promise<CallRow> {
      let row: CallRow | undefined;
      await p.until(
        async () => {
          const rows = await database.db
            .select()
            .from(calls)
            .where(eq(calls.projectId, project.split("/")[1]!));
          row = rows.find(
            (r) =>
              !seen.has(r.id) &&
              ["COMPLETED", "FAILED", "BUSY", "REJECTED", "NOT_ANSWERED"].includes(r.state),
          );
          return row !== undefined;
        },
        "the call's end",
        60_000,
      );
      seen.add(row!.id);
      return row!;
    }

    it.each(["PCMU", "PCMA"] as const)(
      "hears the synthesized greeting of <Say> over %s (sound for the engine's length of it, not silence)",
      async (codec) => {
        markup = `<Say>${GREETING}</Say>`;
        const p = await phone(undefined, codec);
        const dialled = await p.command("dial", `sip:1001@${fqdn}`);
        expect(dialled.ok, JSON.stringify(dialled)).toBe(true);
        await p.until(() => p.events("CALL_ESTABLISHED").length > 0, "the answer");
        // The service hangs up once the Say is over (the handler has nothing more).
        await p.until(() => p.events("CALL_CLOSED").length > 0, "the service's BYE", 60_000);
        const row = await ended(p);
        expect(row.state).toBe("COMPLETED");
        expect(row.transport).toBe("SIP");

        const spoken = await sharedSpeech().synthesize(GREETING);
        const expected = sound(spoken);
        const file = p.dump("dec");
        expect(file, `sndfile wrote no dump:\n${p.output()}`).toBeDefined();
        const wav = parseWav(file!);
        expect(wav.sampleRate).toBe(8000);
        expect(wav.channels).toBe(1);
        expect(p.output()).toContain(`Set audio decoder: ${codec} 8000Hz`);
        const heard = sound(wav.firstChannel);
        // The greeting's stretch, from its first to its last sound, lasts as long as the engine's
        // (±10%: baresip's jitter buffer may stretch or drop a packet or two), and most of it is sound.
        expect(heard.spanFrames, `heard ${heard.spanFrames * FRAME} samples`).toBeGreaterThan(
          expected.spanFrames * 0.9,
        );
        expect(heard.spanFrames).toBeLessThan(expected.spanFrames * 1.1);
        expect(heard.soundFrames).toBeGreaterThan(expected.soundFrames * 0.85);
        // At the engine's level (G.711 keeps it within a few per cent).
        expect(heard.rms).toBeGreaterThan(expected.rms * 0.7);
        expect(heard.rms).toBeLessThan(expected.rms * 1.3);
      },
      150_000,
    );

    it("sends keys that <Input> receives (RFC 4733 events from baresip's sndcode)", async () => {
      markup = '<Input NumDigits="3" TimeoutSeconds="20" NextUri="/digits"/>';
      const p = await phone();
      handler.requests.length = 0;
      await p.command("dial", `sip:1002@${fqdn}`);
      await p.until(() => p.events("CALL_ESTABLISHED").length > 0, "the answer");
      await p.until(() => handler.requests.some((r) => r.path.startsWith("/voice")), "the handler's request");
      await new Promise((r) => setTimeout(r, 1000));
      for (const key of ["3", "1", "4"]) {
        await p.command("sndcode", key);
        await new Promise((r) => setTimeout(r, 400));
      }
      await p.until(() => p.events("CALL_CLOSED").length > 0, "the service's BYE", 60_000);
      const row = await ended(p);
      expect(row.state).toBe("COMPLETED");
      const next = handler.requests.find((r) => r.path.startsWith("/digits"));
      expect(next, "no request to the NextUri").toBeDefined();
      expect(JSON.parse(next!.body).parameters).toMatchObject({ digits: "314" });
    }, 150_000);
    it("leaves a message that <Record> stores: the speech baresip sent, for its length, at its level", async () => {
      markup = '<Record PlayBeep="false" TimeoutSeconds="3" MaxDurationSeconds="30"/>';
      // The microphone: one second of silence, then the message, then silence.
      const message = await sharedSpeech().synthesize(MESSAGE);
      const microphone = new Int16Array(8000 + message.length);
      microphone.set(message, 8000);
      const p = await phone(microphone);
      await p.command("dial", `sip:1003@${fqdn}`);
      await p.until(() => p.events("CALL_ESTABLISHED").length > 0, "the answer");
      // The silence after the message ends the recording; the document is over: BYE.
      await p.until(() => p.events("CALL_CLOSED").length > 0, "the service's BYE", 60_000);
      const row = await ended(p);
      expect(row.state).toBe("COMPLETED");

      const recordings = createTestClient(Recordings, database.db, systemClock);
      const parent = `${project}/calls/${row.id}`;
      const deadline = Date.now() + 30_000;
      let rec = (await recordings.listRecordings({ parent })).recordings[0];
      while (rec === undefined || rec.state === Recording_State.PENDING) {
        if (Date.now() > deadline) throw new Error("no recording");
        await new Promise((r) => setTimeout(r, 100));
        rec = (await recordings.listRecordings({ parent })).recordings[0];
      }
      expect(rec.state).toBe(Recording_State.SUCCEEDED);
      const full = await recordings.getRecording({ name: rec.name });
      const audio = full.audio.find((a) => a.mimeType === "audio/x-wav")!;
      const res = await fetch(audio.uri.startsWith("http") ? audio.uri : `${base}${audio.uri}`);
      expect(res.status).toBe(200);
      const heard = sound(parseWav(Buffer.from(await res.arrayBuffer())).firstChannel);
      const expected = sound(message);
      expect(heard.spanFrames, `recorded ${heard.spanFrames * FRAME} samples of sound`).toBeGreaterThan(
        expected.spanFrames * 0.9,
      );
      expect(heard.spanFrames).toBeLessThan(expected.spanFrames * 1.1);
      expect(heard.soundFrames).toBeGreaterThan(expected.soundFrames * 0.85);
      expect(heard.rms).toBeGreaterThan(expected.rms * 0.7);
      expect(heard.rms).toBeLessThan(expected.rms * 1.3);
    }, 150_000);
  },
);
