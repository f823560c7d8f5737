/**
 * A SIP call's recording transcribed end to end: the real app (build(),
 * listenSip()) on free ports, a raw-socket phone (./phone.ts) calling a
 * PROGRAMMABLE domain whose call_recording asks for a transcription; the
 * phone sends a second of a tone over RTP and hangs up with its key.
 * - With TRANSCRIBER_URL set, the stub recognizer (on 127.0.0.1) receives
 *   each channel of the stored recording as a WAV (compared sample by
 *   sample with the recording's WAV download), the model and the key, and
 *   the transcription is COMPLETED with the recognizer's words.
 * - With none set, the transcription ends FAILED and nothing is sent.
 * On PGlite and PostgreSQL.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  TranscribeOption,
  CallRecordingConfig_CallRecordingTrigger as Trigger,
} from "../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import { Recording_State, Recordings } from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import {
  Transcription_State,
  Transcriptions,
  TranscriptionView,
} from "../../gen/enfonica/voice/v1beta1/transcriptions_pb.js";
import { systemClock } from "../../src/clock.js";
import { type CallRow, calls } from "../../src/db/schema/index.js";
import { type App, build } from "../../src/server.js";
import { parseWav } from "../recordings/audio.js";
import { createTestClient, newProject, testConfig } from "../support/app.js";
import { xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { type StubRecognizer, startStubRecognizer, wavSamples } from "../transcriptions/stub-recognizer.js";
import { newSipDomainId } from "../voice/support.js";
import { Phone } from "./phone.js";

describe.each(testDatabases())("a SIP call's recording transcribed on $name", (backend) => {
  const database = useTestDatabase(backend);
  let withRecognizer: { app: App; port: number; base: string };
  let without: { app: App; port: number; base: string };
  let handler: Receiver;
  let stub: StubRecognizer;
  const phones: Phone[] = [];

  async function start(env: NodeJS.ProcessEnv) {
    const app = await build({
      config: testConfig({
        SIP_PORT: "0",
        RTP_PORT_MIN: "0",
        LOG_LEVEL: "silent",
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
        ...env,
      }),
      db: database.db,
    });
    const port = (await app.listenSip()).local("UDP")!.port;
    const base = `http://127.0.0.1:${(await app.listen(0)).port}`;
    return { app, port, base };
  }

  beforeAll(async () => {
    stub = await startStubRecognizer();
    handler = await startReceiver();
    handler.handle((_req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(xml('<Record PlayBeep="false" StopKey="#" MaxDurationSeconds="20"/>'));
    });
    withRecognizer = await start({
      TRANSCRIBER_URL: stub.url,
      TRANSCRIBER_MODEL: "tiny.en",
      TRANSCRIBER_API_KEY: "sk-sip-test",
      TRANSCRIBER_TIMEOUT_MS: "10000",
    });
    without = await start({});
  });

  afterAll(async () => {
    for (const p of phones) p.close();
    await handler?.close();
    await withRecognizer?.app.close();
    await without?.app.close();
    await stub?.close();
  });

  async function row(callId: string): Promise<CallRow> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const [r] = await database.db.select().from(calls).where(eq(calls.sipCallId, callId));
      if (r !== undefined && ["COMPLETED", "FAILED"].includes(r.state)) return r;
      if (Date.now() > deadline) throw new Error(`call ${callId} not ended`);
      await new Promise((res) => setTimeout(res, 50));
    }
  }

  /** A recorded, transcribed call through `server`: the phone sends a tone, then `#`. */
  async function call(server: { port: number }) {
    const project = await newProject(database.db);
    const d = await createTestClient(SipDomains, database.db, systemClock).createSipDomain({
      parent: project,
      sipDomainId: newSipDomainId("tr"),
      sipDomain: {
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: [`${handler.base}/voice`],
        cidrBlocks: [{ cidrBlock: "127.0.0.1/32" }],
        callRecording: { trigger: Trigger.ANSWER, transcribe: TranscribeOption.DEFAULT },
      },
    });
    const p = await Phone.open(server.port);
    phones.push(p);
    const uri = `sip:1001@${d.fqdn}`;
    const { branch, cseq } = p.invite(uri);
    const ok = await p.sip.inbox.next((m) => m.text.includes(branch) && (m.status ?? 0) >= 200, 15_000);
    expect(ok.status).toBe(200);
    p.learn(ok);
    p.inDialog("ACK", uri, { cseq });
    const rtpPort = Phone.mediaPort(ok.body);
    await new Promise((r) => setTimeout(r, 300));
    const tone = Int16Array.from({ length: 8000 }, (_, i) =>
      Math.round(12000 * Math.cos((2 * Math.PI * 440 * i) / 8000)),
    );
    await p.sendAudio(rtpPort, tone);
    await new Promise((r) => setTimeout(r, 200));
    p.sendDigit(rtpPort, "#", 5000 + 8000 + 1600, 500);
    const bye = await p.sip.inbox.next((m) => m.method === "BYE", 15_000);
    p.ok(bye);
    const r = await row(p.callId);
    const parent = `${project}/calls/${r.id}`;
    const transcriptions = createTestClient(Transcriptions, database.db, systemClock);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const [t] = (await transcriptions.listTranscriptions({ parent, view: TranscriptionView.FULL }))
        .transcriptions;
      if (t !== undefined && t.state !== Transcription_State.PENDING) {
        // The call recording transcribed (the <Record> makes another one, not transcribed).
        const recording = await createTestClient(Recordings, database.db, systemClock).getRecording({
          name: t.recording,
        });
        return { transcription: t, recording };
      }
      if (Date.now() > deadline) throw new Error("no terminal transcription");
      await new Promise((res) => setTimeout(res, 100));
    }
  }

  it("with TRANSCRIBER_URL: the recognizer gets each channel of the recording as a WAV, its words are the transcription", async () => {
    stub.received.length = 0;
    stub.answer = (n) => ({
      status: 200,
      body: JSON.stringify({
        text: "t",
        segments: [{ start: 0.1, end: 0.6, text: `heard on channel ${n}` }],
      }),
    });
    const { transcription, recording } = await call(withRecognizer);
    expect(recording.state).toBe(Recording_State.SUCCEEDED);
    expect(transcription.state).toBe(Transcription_State.COMPLETED);
    expect(transcription.channelCount).toBe(recording.channelCount);
    expect(stub.received).toHaveLength(recording.channelCount);
    expect(transcription.utterances.map((u) => [u.channel, u.text])).toEqual(
      stub.received.map((_, n) => [n, `heard on channel ${n}`]),
    );

    // What the recognizer got is the stored recording, channel by channel.
    const wav = recording.audio.find((a) => a.mimeType === "audio/x-wav")!;
    const res = await fetch(wav.uri.startsWith("http") ? wav.uri : `${withRecognizer.base}${wav.uri}`);
    const stored = Buffer.from(await res.arrayBuffer());
    const info = parseWav(stored);
    const data = stored.subarray(stored.length - info.dataBytes);
    for (const [channel, r] of stub.received.entries()) {
      expect(r.auth).toBe("Bearer sk-sip-test");
      expect(r.fields).toEqual({ model: "tiny.en", response_format: "verbose_json" });
      const sent = wavSamples(r.file);
      expect(sent.sampleRate).toBe(info.sampleRate);
      const expected = Array.from({ length: info.frames }, (_, i) =>
        data.readInt16LE(i * info.blockAlign + channel * 2),
      );
      expect([...sent.samples]).toEqual(expected);
    }
    // The caller's tone is in it (not silence).
    expect(stub.received.some((r) => wavSamples(r.file).samples.some((s) => Math.abs(s) > 5000))).toBe(true);
  });

  it("without a recognizer: the transcription of the SIP call's recording is FAILED, nothing made up or sent", async () => {
    stub.received.length = 0;
    const { transcription, recording } = await call(without);
    expect(recording.state).toBe(Recording_State.SUCCEEDED);
    expect(transcription.state).toBe(Transcription_State.FAILED);
    expect(transcription.utterances).toEqual([]);
    expect(stub.received).toEqual([]);
  });
});
