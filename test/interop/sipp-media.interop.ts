/**
 * Interop, media: SIPp (Debian's `sip-tester`) calls a PROGRAMMABLE domain
 * with real RTP played by `play_pcap_audio` (scenarios/rtp-input-record.xml):
 * - the keys 1 2 3 as RFC 2833 telephone-events, from the captures Debian
 *   ships with SIPp (/usr/share/sip-tester/dtmf_2833_*.pcap), for `<Input>`:
 *   the handler's NextUri receives the digits;
 * - then the caller's speech (the speech engine's audio of a sentence,
 *   G.711 μ-law in 20 ms packets, written by the test as a pcap continuing
 *   the keys' RTP stream: same SSRC, next sequence numbers and timestamps)
 *   for `<Record>`: the recording holds sound for the sentence's length at
 *   its level; its silence timeout ends it and the service hangs up.
 * SIPp sends pcap audio through a raw socket: it runs as root (as CI does).
 * Run by `npm run test:interop` only.
 */
import { createSocket } from "node:dgram";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Recording_State, Recordings } from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { systemClock } from "../../src/clock.js";
import { calls } from "../../src/db/schema/index.js";
import { sharedSpeech } from "../../src/media/speech/index.js";
import { type App, build } from "../../src/server.js";
import { parseWav } from "../recordings/audio.js";
import { mulaw } from "../sip-carrier/phone.js";
import { createTestClient, newProject, testConfig } from "../support/app.js";
import { xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { readPcap } from "../support/pcap.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { newSipDomainId } from "../voice/support.js";
import { FRAME, sound } from "./support/audio.js";
import { rtpPackets, writeRtpPcap } from "./support/rtp-pcap.js";
import { SCENARIOS, sipp } from "./support/sipp.js";

const SPOKEN = "Hello, this is SIP p leaving a message for the record test. Goodbye.";
const DEBIAN_PCAPS = "/usr/share/sip-tester";

/** A free even UDP port on 127.0.0.1 for SIPp's media (closed again at once). */
async function freeMediaPort(): Promise<number> {
  for (;;) {
    const socket = createSocket("udp4");
    await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
    const { port } = socket.address();
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    if (port % 2 === 0 && port < 65_000) return port;
  }
}

describe.each(testDatabases())(
  "SIPp with RTP on $name: RFC 2833 keys for <Input>, G.711 speech for <Record>",
  (backend) => {
    const database = useTestDatabase(backend);
    let app: App;
    let udp: number;
    let base: string;
    let handler: Receiver;
    let dir: string;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "sb-sipp-media-"));
      app = await build({
        config: testConfig({
          SIP_PORT: "0",
          RTP_PORT_MIN: "0",
          LOG_LEVEL: "silent",
          WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
        }),
        db: database.db,
      });
      udp = (await app.listenSip()).local("UDP")!.port;
      base = `http://127.0.0.1:${(await app.listen(0)).port}`;
      handler = await startReceiver();
    });

    afterAll(async () => {
      await handler?.close();
      await app?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it("hands the keys to <Input> and records the speech SIPp played", async () => {
      for (const key of ["1", "2", "3"]) {
        expect(existsSync(join(DEBIAN_PCAPS, `dtmf_2833_${key}.pcap`)), "Debian's sip-tester pcaps").toBe(
          true,
        );
      }
      handler.handle((req, res) => {
        res.setHeader("content-type", "application/xml");
        if (req.path.startsWith("/voice")) {
          res.end(xml('<Input NumDigits="3" TimeoutSeconds="20" NextUri="/digits"/>'));
        } else if (req.path.startsWith("/digits")) {
          res.end(
            xml('<Record PlayBeep="false" TimeoutSeconds="4" MaxDurationSeconds="30" NextUri="/recorded"/>'),
          );
        } else res.end(xml(""));
      });
      const project = await newProject(database.db);
      const domain = await createTestClient(SipDomains, database.db, systemClock).createSipDomain({
        parent: project,
        sipDomainId: newSipDomainId("sm"),
        sipDomain: {
          callTerminationMode: Mode.PROGRAMMABLE,
          callTerminationHandlerUris: [`${handler.base}/voice`],
          cidrBlocks: [{ cidrBlock: "127.0.0.1/32" }],
        },
      });

      // The caller's speech continues the RTP stream of the last key's capture.
      const keys = await readPcap(readFileSync(join(DEBIAN_PCAPS, "dtmf_2833_3.pcap")));
      const last = keys.packets.at(-1)!.payloadBytes;
      const spoken = await sharedSpeech().synthesize(SPOKEN);
      const payloads: Buffer[] = [];
      for (let at = 0; at < spoken.length; at += FRAME) {
        payloads.push(Buffer.from(Array.from({ length: FRAME }, (_, i) => mulaw(spoken[at + i] ?? 0))));
      }
      const packets = rtpPackets(
        {
          payloadType: 0,
          ssrc: last.readUInt32BE(8),
          sequence: last.readUInt16BE(2) + 1,
          // After the event's start and its duration (the event payload's bytes 2..3), plus 0.5 s.
          timestamp: last.readUInt32BE(4) + last.readUInt16BE(12 + 2) + 4000,
        },
        payloads,
      );
      writeRtpPcap(join(dir, "speech.pcap"), packets);

      const run = await sipp(
        [
          `127.0.0.1:${udp}`,
          "-sf",
          join(SCENARIOS, "rtp-input-record.xml"),
          "-s",
          domain.fqdn,
          "-i",
          "127.0.0.1",
          "-mi",
          "127.0.0.1",
          "-mp",
          String(await freeMediaPort()),
        ],
        "60s",
        dir,
      );
      expect(run.code, run.output).toBe(0);

      const digits = handler.requests.find((r) => r.path.startsWith("/digits"));
      expect(digits, "no request to the Input's NextUri").toBeDefined();
      expect(JSON.parse(digits!.body).parameters).toMatchObject({ digits: "123" });
      const recorded = handler.requests.find((r) => r.path.startsWith("/recorded"));
      expect(recorded, "no request to the Record's NextUri").toBeDefined();

      const [row] = await database.db
        .select()
        .from(calls)
        .where(eq(calls.projectId, project.split("/")[1]!));
      expect(row).toBeDefined();
      const recordings = createTestClient(Recordings, database.db, systemClock);
      const parent = `${project}/calls/${row!.id}`;
      const deadline = Date.now() + 30_000;
      let rec = (await recordings.listRecordings({ parent })).recordings[0];
      while (rec === undefined || rec.state === Recording_State.PENDING) {
        if (Date.now() > deadline) throw new Error("no recording");
        await new Promise((r) => setTimeout(r, 100));
        rec = (await recordings.listRecordings({ parent })).recordings[0];
      }
      expect(rec.state).toBe(Recording_State.SUCCEEDED);
      const full = await recordings.getRecording({ name: rec.name });
      const wavAudio = full.audio.find((a) => a.mimeType === "audio/x-wav")!;
      const res = await fetch(wavAudio.uri.startsWith("http") ? wavAudio.uri : `${base}${wavAudio.uri}`);
      expect(res.status).toBe(200);
      const wav = parseWav(Buffer.from(await res.arrayBuffer()));
      expect(wav.sampleRate).toBe(8000);

      // The sentence's stretch, first sound to last, as long as the engine's (±10%: pacing by
      // SIPp and the jitter buffer may add or drop a packet or two), most of it sound, at its level.
      const expected = sound(spoken);
      const heard = sound(wav.firstChannel);
      expect(heard.spanFrames, `heard ${heard.spanFrames * FRAME} samples`).toBeGreaterThan(
        expected.spanFrames * 0.9,
      );
      expect(heard.spanFrames).toBeLessThan(expected.spanFrames * 1.1);
      expect(heard.soundFrames).toBeGreaterThan(expected.soundFrames * 0.85);
      expect(heard.rms).toBeGreaterThan(expected.rms * 0.7);
      expect(heard.rms).toBeLessThan(expected.rms * 1.3);
    }, 150_000);
  },
);
