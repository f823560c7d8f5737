/**
 * Media streams end to end: the real app (build()) listening on 127.0.0.1
 * with the carrier simulator on a ManualScheduler, real HTTP receivers
 * serving the VoiceML, and two independent clients of Streams.StreamCall
 * (@grpc/grpc-js, and connect-node's Connect protocol over HTTP/2), on
 * PGlite and PostgreSQL. The output audio is decoded (G.711 to PCM) and
 * compared with the call's recording (WAV, read by the test's own parser);
 * the input audio is found in that recording.
 *
 * Call time moves only in scheduler.advance(). The call is answered with the
 * clock frozen (at +1.1 s: setup 0.1 + ring 1), so the markup's RecordCall
 * and Stream run at the answer: the recording and the output audio start
 * at the same sample.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromJsonString } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallRequestSchema } from "../../gen/enfonica/voice/v1beta1/call_request_pb.js";
import { Call_State } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import {
  type Recording,
  Recording_State,
  Recordings,
} from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import { SimulatorRoute_Audio } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { ALL_PERMISSIONS } from "../../src/auth/permissions.js";
import { decodeG711, encodeG711 } from "../../src/telephony/g711.js";
import { newApiKey, newProject, TEST_OPERATOR_TOKEN } from "../support/app.js";
import { callHarness, sleep, xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import {
  connectClient,
  type Encoding,
  type Event,
  grpcJsClient,
  type OpenStream,
  type StreamClient,
} from "./clients.js";

const RATE = 8000;
/** Samples per output_audio chunk (0.16 s). */
const FRAME = 1280;

/** Polls `condition` in real time (5 ms steps, bounded); call time does not move meanwhile. */
async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** A tone of `ms` at `hz`, level 0.3. */
function tone(ms: number, hz: number): Int16Array {
  const out = new Int16Array((ms * RATE) / 1000);
  for (let i = 0; i < out.length; i++)
    out[i] = Math.round(0.3 * 32767 * Math.sin((2 * Math.PI * hz * i) / RATE));
  return out;
}

const enc = (e: Encoding) => (e === "MULAW" ? "mulaw" : "alaw");

/** Channel 0 of a RIFF/WAVE PCM 16-bit file, read chunk by chunk. */
function wavChannel0(file: Buffer): Int16Array {
  let offset = 12;
  let channels = 0;
  while (offset + 8 <= file.length) {
    const id = file.toString("ascii", offset, offset + 4);
    const size = file.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === "fmt ") {
      channels = file.readUInt16LE(body + 2);
      expect(file.readUInt32LE(body + 4)).toBe(RATE);
      expect(file.readUInt16LE(body + 14)).toBe(16);
    }
    if (id === "data") {
      const frames = size / (2 * channels);
      const out = new Int16Array(frames);
      for (let i = 0; i < frames; i++) out[i] = file.readInt16LE(body + i * channels * 2);
      return out;
    }
    offset = body + size + (size % 2);
  }
  throw new Error("no data chunk");
}

/** The largest G.711 quantization error of a sample of magnitude |x| (with margin). */
const tolerance = (x: number) => Math.abs(x) / 16 + 40;

function outputOf(events: Event[]): Uint8Array[] {
  return events.flatMap((e) => (e.kind === "outputAudio" ? [e.audio] : []));
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}

describe.each(testDatabases())("media streams on $name", (backend) => {
  const database = useTestDatabase(backend);
  let blobDir: string;
  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), "switchboard-streams-"));
  });
  afterAll(async () => {
    for (const c of Object.values(clients)) c.close();
    if (blobDir) await rm(blobDir, { recursive: true, force: true });
  });
  const harness = callHarness(database, {
    env: () => ({ BLOB_DIR: blobDir }),
    // Its own destinations (transcriptions takes +614915704; on PostgreSQL routes are shared).
    destinations: "+614915706",
    drain: true,
  });
  const { scheduler, handler, owner, route, serve, runToEnd, createCall } = harness;
  const recordings = harness.client(Recordings);

  const clients: Record<string, StreamClient> = {};
  /** The client `which`, made on first use (the app listens by then). */
  async function clientFor(which: string): Promise<StreamClient> {
    if (clients[which] === undefined) {
      const url = new URL(harness.base);
      clients[which] =
        which === "grpc" ? await grpcJsClient(`${url.hostname}:${url.port}`) : connectClient(harness.base);
    }
    return clients[which]!;
  }

  const newStreamId = () => `s-${randomBytes(6).toString("hex")}`;

  /** Opens a stream as the operator and waits until the service holds it. */
  async function openStream(client: StreamClient, name: string, encoding: Encoding): Promise<OpenStream> {
    const before = harness.app.engine.streams.size;
    const stream = client.open(TEST_OPERATOR_TOKEN);
    stream.send({ setup: { stream: name, encoding, sampleRateHertz: 8000 } });
    await until(() => harness.app.engine.streams.size > before || stream.finished, "the stream to open");
    return stream;
  }

  /** Creates a call and answers it at +1.1 s, the clock frozen there until the stream is connected. */
  async function answeredWithStream(
    project: string,
    from: string,
    to: string,
    stream: OpenStream,
    path = "/start",
  ) {
    // Placing the call arms two timers (its setup and its timeout).
    const before = scheduler.pendingCount;
    const created = await createCall(project, from, to, path);
    await until(() => scheduler.pendingCount >= before + 2, "the call to be placed");
    await scheduler.advance(1.1);
    await until(() => stream.events.length > 0 || stream.finished, "call_connected");
    return created;
  }

  /** Advances call time in 0.1 s steps until `condition` (bounded). */
  async function advanceUntil(condition: () => boolean, what: string, maxSeconds = 60) {
    for (let t = 0; t < maxSeconds * 10 && !condition(); t++) {
      await scheduler.advance(0.1);
      await sleep(1);
    }
    expect(condition(), what).toBe(true);
  }

  async function settledRecordings(call: string): Promise<Recording[]> {
    const list = await recordings.listRecordings({ parent: call, pageSize: 10 });
    return Promise.all(
      list.recordings.map(async (r) => {
        let got = await recordings.getRecording({ name: r.name });
        const deadline = Date.now() + 10_000;
        while (got.state === Recording_State.PENDING && Date.now() < deadline) {
          await sleep(5);
          got = await recordings.getRecording({ name: r.name });
        }
        return got;
      }),
    );
  }

  async function wavOf(recording: Recording): Promise<Int16Array> {
    const wav = recording.audio.find((a) => a.mimeType === "audio/x-wav")!;
    const res = await fetch(wav.uri.startsWith("http") ? wav.uri : `${harness.base}${wav.uri}`);
    expect(res.status).toBe(200);
    return wavChannel0(Buffer.from(await res.arrayBuffer()));
  }

  function parametersAt(path: string): Record<string, string> {
    const req = handler.requests.find((r) => r.path === path);
    expect(req, `no request to ${path}`).toBeDefined();
    return { ...fromJsonString(CallRequestSchema, req!.body).parameters };
  }

  describe.each([
    { client: "grpc", encoding: "MULAW" as Encoding, inputEncoding: "ALAW" as Encoding },
    { client: "connect", encoding: "ALAW" as Encoding, inputEncoding: undefined },
  ])("with $client ($encoding)", ({ client: which, encoding, inputEncoding }) => {
    it("bridges a call: call_connected, the caller's audio out, input audio into the recording, buffer empty, parameters on the next request after the client closes", async () => {
      const client = await clientFor(which);
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 300, audio: SimulatorRoute_Audio.SPEECH });
      const id = newStreamId();
      const name = `${project}/streams/${id}`;
      serve({
        "/start": xml(`<RecordCall/><Stream Name="${id}"/><Redirect>/after</Redirect>`),
        "/after": xml("<Say>Goodbye</Say>"),
      });
      const stream = await openStream(client, name, encoding);
      const created = await answeredWithStream(project, from, to, stream);
      expect(stream.events[0]).toEqual({ kind: "callConnected", call: created.name });

      // Half a second of a 1000 Hz tone, in the stream's encoding or (grpc-js) transcoded from A-law.
      const played = tone(500, 1000);
      const inputBytes = encodeG711(enc(inputEncoding ?? encoding), played);
      const heard = decodeG711(enc(inputEncoding ?? encoding), inputBytes);
      stream.send({ input: { audio: inputBytes, ...(inputEncoding && { encoding: inputEncoding }) } });
      stream.send({ parameters: { greeting: "hi", n: "1" } });
      stream.send({ parameters: { n: "2" } });
      await advanceUntil(
        () => stream.events.some((e) => e.kind === "inputAudioBufferEmpty"),
        "input_audio_buffer_empty",
      );
      const chunksBeforeEmpty = outputOf(
        stream.events.slice(
          0,
          stream.events.findIndex((e) => e.kind === "inputAudioBufferEmpty"),
        ),
      ).length;
      // 4000 samples take more than three 1280-sample frames to play, after a frame of latency.
      expect(chunksBeforeEmpty).toBeGreaterThanOrEqual(4);
      await scheduler.advance(1);
      stream.close();
      const outcome = await stream.done;
      expect(outcome.code).toBe("OK");
      const ended = await runToEnd(created.name);
      expect(ended.state).toBe(Call_State.COMPLETED);
      expect(parametersAt("/after")).toEqual({ greeting: "hi", n: "2" });

      // Events: call_connected first and once, output chunks of one frame, one buffer-empty.
      expect(stream.events.filter((e) => e.kind === "callConnected")).toHaveLength(1);
      expect(stream.events.filter((e) => e.kind === "inputAudioBufferEmpty")).toHaveLength(1);
      const chunks = outputOf(stream.events);
      expect(chunks.length).toBeGreaterThanOrEqual(10);
      for (const c of chunks) expect(c.length).toBe(FRAME);
      const output = decodeG711(enc(encoding), concat(chunks));

      // The recording starts at the answer, as the stream does: channel 0 is the caller
      // plus what was played; minus the output (the caller) it leaves the input alone.
      const [recording] = await settledRecordings(created.name);
      expect(recording?.state).toBe(Recording_State.SUCCEEDED);
      const wav = await wavOf(recording!);
      expect(wav.length).toBeGreaterThan(output.length);
      let energy = 0;
      const residual = new Int16Array(output.length);
      for (let i = 0; i < output.length; i++) {
        energy += Math.abs(output[i]!);
        residual[i] = wav[i]! - output[i]!;
      }
      expect(energy / output.length).toBeGreaterThan(500); // the caller speaks
      // The input starts at the first frame boundary after it was sent (the clock was frozen).
      for (let i = 0; i < output.length; i++) {
        const inInput = i >= FRAME && i < FRAME + played.length;
        const expected = inInput ? heard[i - FRAME]! : 0;
        const error = Math.abs(residual[i]! - expected);
        if (error > tolerance(output[i]!)) {
          throw new Error(`sample ${i}: recording ${wav[i]}, output ${output[i]}, input ${expected}`);
        }
      }
    });

    it("ends OK when the call ends, with the caller's audio up to the end", async () => {
      const client = await clientFor(which);
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 2, audio: SimulatorRoute_Audio.SILENCE });
      const id = newStreamId();
      serve({ "/start": xml(`<Stream Name="${id}"/>`) });
      const stream = await openStream(client, `${project}/streams/${id}`, encoding);
      const created = await answeredWithStream(project, from, to, stream);
      await advanceUntil(() => stream.finished, "the stream to end");
      expect((await stream.done).code).toBe("OK");
      const ended = await runToEnd(created.name);
      expect(ended.state).toBe(Call_State.COMPLETED);
      const output = decodeG711(enc(encoding), concat(outputOf(stream.events)));
      // Two seconds of talk, all of it silence (A-law has no zero: its quietest codes are ±8).
      expect(output.length).toBe(2 * RATE);
      expect(output.every((s) => Math.abs(s) <= 8)).toBe(true);
      expect(harness.app.engine.streams.size).toBe(0);
    });

    it("a cancelled stream resumes the markup at NextUri and frees its name", async () => {
      const client = await clientFor(which);
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 300 });
      const id = newStreamId();
      const name = `${project}/streams/${id}`;
      serve({
        "/start": xml(`<Stream Name="${name}" NextUri="/next"/>`),
        "/next": xml("<Say>Back</Say>"),
      });
      const stream = await openStream(client, name, encoding);
      const created = await answeredWithStream(project, from, to, stream);
      stream.send({ parameters: { intent: "billing" } });
      await scheduler.advance(0.5);
      stream.cancel();
      expect((await stream.done).code).toBe("CANCELED");
      await until(() => harness.app.engine.streams.size === 0, "the stream to be released");
      const ended = await runToEnd(created.name);
      expect(ended.state).toBe(Call_State.COMPLETED);
      const params = parametersAt("/next");
      expect(params).toMatchObject({ action: "STREAM", stream: name, endedBy: "cancelled" });
      // The name is free again.
      const again = await openStream(client, name, encoding);
      expect(again.finished).toBe(false);
      again.close();
      expect((await again.done).code).toBe("OK");
    });

    it("fails DEADLINE_EXCEEDED when no call connects within 30 s of call time", async () => {
      const client = await clientFor(which);
      const project = await newProject(database.db);
      const name = `${project}/streams/${newStreamId()}`;
      const stream = await openStream(client, name, encoding);
      await scheduler.advance(29.9);
      await sleep(20);
      expect(stream.finished).toBe(false);
      await scheduler.advance(0.2);
      const outcome = await stream.done;
      expect(outcome).toMatchObject({ code: "DEADLINE_EXCEEDED", reason: "STREAM_NOT_CONNECTED" });
      await until(() => harness.app.engine.streams.size === 0, "the stream to be released");
    });

    it("rejects a stream without voice.streams.create on its project, before anything else", async () => {
      const client = await clientFor(which);
      const mine = await newProject(database.db);
      const theirs = await newProject(database.db);
      const key = await newApiKey(database.db, [{ project: mine, permissions: ["voice.streams.create"] }]);
      const denied = client.open(key.secret);
      // Malformed audio config too: the permission is checked first.
      denied.send({ setup: { stream: `${theirs}/streams/x`, encoding: "UNSPECIFIED" } });
      expect(await denied.done).toMatchObject({ code: "PERMISSION_DENIED", reason: "PERMISSION_DENIED" });
      // A key holding every other permission on the stream's own project.
      const lacking = await newApiKey(database.db, [
        {
          project: mine,
          permissions: ALL_PERMISSIONS.filter((p) => p !== "voice.streams.create"),
        },
      ]);
      const without = client.open(lacking.secret);
      without.send({ setup: { stream: `${mine}/streams/${newStreamId()}`, encoding } });
      expect(await without.done).toMatchObject({ code: "PERMISSION_DENIED", reason: "PERMISSION_DENIED" });
      const none = client.open("not-a-key");
      none.send({ setup: { stream: `${mine}/streams/x`, encoding } });
      expect((await none.done).code).toBe("UNAUTHENTICATED");
      // Its own project: allowed.
      const allowed = client.open(key.secret);
      allowed.send({ setup: { stream: `${mine}/streams/${newStreamId()}`, encoding } });
      await until(() => harness.app.engine.streams.size > 0, "the stream to open");
      allowed.close();
      expect((await allowed.done).code).toBe("OK");
      // The operator naming a project that does not exist.
      const missing = client.open(TEST_OPERATOR_TOKEN);
      missing.send({ setup: { stream: "projects/no-such-project-x/streams/a", encoding } });
      expect((await missing.done).code).toBe("NOT_FOUND");
    });

    it.each([
      ["no setup first", { input: { audio: new Uint8Array(8) } }, "setup"],
      ["a malformed name", { setup: { stream: "streams/abc" } }, "setup.stream"],
      ["an id over 36 characters", { setup: { stream: `{p}/streams/${"a".repeat(37)}` } }, "setup.stream"],
      ["no audio config", { setup: { stream: "{p}/streams/a", noConfig: true } }, "setup.audio_config"],
      [
        "an unspecified encoding",
        { setup: { stream: "{p}/streams/a", encoding: "UNSPECIFIED" as Encoding } },
        "setup.audio_config.audio_encoding",
      ],
      [
        "a 16 kHz rate",
        { setup: { stream: "{p}/streams/a", sampleRateHertz: 16000 } },
        "setup.audio_config.sample_rate_hertz",
      ],
    ])("rejects a setup with %s, naming the field", async (_what, message, field) => {
      const client = await clientFor(which);
      const project = await newProject(database.db);
      const stream = client.open(TEST_OPERATOR_TOKEN);
      const m = structuredClone(message) as { setup?: { stream: string } };
      if (m.setup) m.setup.stream = m.setup.stream.replace("{p}", project);
      stream.send(m);
      stream.close();
      const outcome = await stream.done;
      expect(outcome).toMatchObject({ code: "INVALID_ARGUMENT", reason: "INVALID_ARGUMENT" });
      expect(outcome.fields).toEqual([field]);
      expect(harness.app.engine.streams.size).toBe(0);
    });

    it("refuses a second open stream of the same name, bad input configs and oversized parameters", async () => {
      const client = await clientFor(which);
      const project = await newProject(database.db);
      const name = `${project}/streams/${newStreamId()}`;
      const first = await openStream(client, name, encoding);
      const second = client.open(TEST_OPERATOR_TOKEN);
      second.send({ setup: { stream: name, encoding } });
      expect((await second.done).code).toBe("ALREADY_EXISTS");
      first.send({ input: { audio: new Uint8Array(160), encoding: "UNSPECIFIED" } });
      expect(await first.done).toMatchObject({
        code: "INVALID_ARGUMENT",
        fields: ["input_audio.config.audio_encoding"],
      });

      const other = await openStream(client, `${project}/streams/${newStreamId()}`, encoding);
      other.send({ parameters: { a: "x".repeat(30_000) } });
      other.send({ parameters: { b: "y".repeat(30_000) } });
      expect(await other.done).toMatchObject({
        code: "INVALID_ARGUMENT",
        fields: ["update_request_parameters.parameters"],
      });
      await until(() => harness.app.engine.streams.size === 0, "the streams to be released");
    });
  });

  it("<Stream> naming no open stream ends the call FAILED STREAM_UNAVAILABLE after TimeoutSeconds", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    serve({ "/start": xml('<Stream Name="nobody-here" TimeoutSeconds="2"/>') });
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.FAILED);
    expect(ended.errorCode).toBe("STREAM_UNAVAILABLE");
    expect(ended.errorMessage).toContain("within 2 seconds");
  });

  it("a stream is bound to its project and to one call: <Stream> elsewhere is STREAM_UNAVAILABLE", async () => {
    const client = await clientFor("grpc");
    const { project, from } = await owner();
    const other = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    const id = newStreamId();
    const name = `${project}/streams/${id}`;
    serve({
      "/first": xml(`<Stream Name="${id}"/>`),
      "/second": xml(`<Stream Name="${id}" TimeoutSeconds="0"/>`),
      "/foreign": xml(`<Stream Name="${name}" TimeoutSeconds="0"/>`),
    });
    const stream = await openStream(client, name, "MULAW");
    const first = await answeredWithStream(project, from, to, stream, "/first");
    expect(stream.events[0]).toEqual({ kind: "callConnected", call: first.name });
    const second = await createCall(project, from, to, "/second");
    const foreign = await createCall(other.project, other.from, to, "/foreign");
    for (const [call, why] of [
      [second, "connected to another call"],
      [foreign, "not of the call's project"],
    ] as const) {
      await advanceUntil(
        () => handler.requests.filter((r) => r.path !== "/first").length >= 2,
        "both calls to ask for markup",
      );
      // runToEnd would wait for the first call too: poll this one.
      let ended = await harness.connect.getCall({ name: call.name });
      for (let i = 0; i < 100 && ended.state !== Call_State.FAILED; i++) {
        await scheduler.advance(0.1);
        await sleep(5);
        ended = await harness.connect.getCall({ name: call.name });
      }
      expect(ended.state).toBe(Call_State.FAILED);
      expect(ended.errorCode).toBe("STREAM_UNAVAILABLE");
      expect(ended.errorMessage).toContain(why);
    }
    // The first call is still bridged: its stream still open, until the client closes it.
    expect(stream.finished).toBe(false);
    stream.close();
    expect((await stream.done).code).toBe("OK");
    expect((await runToEnd(first.name)).state).toBe(Call_State.COMPLETED);
  });
});
