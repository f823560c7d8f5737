/**
 * Recordings made by calls, end to end: the real app (build()) on
 * 127.0.0.1 with the carrier simulator on a ManualScheduler, real HTTP
 * receivers serving the markup and taking RECORDING_READY webhooks
 * (signatures checked with node:crypto), recordings read back through the
 * API (FULL view) and their audio downloaded through the signed links and
 * measured with independent readers (a WAV parser and an MP3 frame reader
 * written here, mpg123 for decoding the MP3).
 *
 * Call time only moves in scheduler.advance(); where a test measures an
 * exact call time it stops advancing ("freezes") until the engine reached
 * the point measured (e.g. the Record's beep timer is set), so that real
 * HTTP latency cannot move it.
 */

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromJsonString } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PhoneNumberInstance_RecordingTrigger as InstanceTrigger } from "../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import {
  PostProcessing,
  CallRecordingConfig_CallRecordingTrigger as Trigger,
} from "../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import { CallRequestSchema } from "../../gen/enfonica/voice/v1beta1/call_request_pb.js";
import { type Call, Call_State } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import {
  type Recording,
  Recording_Source,
  Recording_State,
  Recordings,
  RecordingView,
} from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SimulatorAdmin, SimulatorRoute_Audio } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { decodeForCall } from "../../src/media/decode/index.js";
import { sharedSpeech } from "../../src/media/speech/index.js";
import { encodeWav } from "../../src/recordings/audio/wav.js";
import { addBlock, numberingClients } from "../numbering/support.js";
import { newProject } from "../support/app.js";
import { callHarness, expectSigned, keyOf, sleep, xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import type { ReceivedRequest, Receiver } from "../support/receiver.js";
import { newSipDomainId } from "../voice/support.js";
import { decodeMp3Frames, parseWav, probeMp3 } from "./audio.js";

const RATE = 8000;
/** Samples in one MP3 frame at 8 kHz (MPEG-2.5 layer III), and LAME's fixed delay. */
const MP3_FRAME = 576;
const LAME_DELAY = 576 + 529;
/** The beep before a Record (PlayBeep) and the simulator's digit interval. */
const BEEP_MS = 500;
const DIGIT_INTERVAL_MS = 500;
const CALLER = "+61491570156";
/** Milliseconds of a Timestamp or Duration. */
const msOf = (t: { seconds: bigint; nanos: number } | undefined): number =>
  t === undefined ? Number.NaN : Number(t.seconds) * 1000 + Math.round(t.nanos / 1e6);

/** Polls `condition` in real time (5 ms steps, bounded); call time does not move meanwhile. */
async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** Every channel of a RIFF/WAVE PCM 16-bit file, read chunk by chunk (independent of src/). */
function wavChannels(file: Buffer): Int16Array[] {
  let offset = 12;
  let channels = 0;
  while (offset + 8 <= file.length) {
    const id = file.toString("ascii", offset, offset + 4);
    const size = file.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === "fmt ") channels = file.readUInt16LE(body + 2);
    if (id === "data") {
      const frames = size / (2 * channels);
      const out = Array.from({ length: channels }, () => new Int16Array(frames));
      for (let i = 0; i < frames; i++) {
        for (let c = 0; c < channels; c++) out[c]![i] = file.readInt16LE(body + (i * channels + c) * 2);
      }
      return out;
    }
    offset = body + size + (size % 2);
  }
  throw new Error("no data chunk");
}

/** Index of the first sample whose magnitude exceeds `threshold` (-1: none). */
function firstSound(samples: Int16Array, threshold = 0): number {
  return samples.findIndex((s) => Math.abs(s) > threshold);
}

interface RecordingJson {
  name: string;
  state: string;
  source: string;
  readyUri: string;
  duration?: string;
  channelCount?: number;
  audio?: { uri: string }[];
}

describe.each(testDatabases())("recordings of calls on $name", (backend) => {
  const database = useTestDatabase(backend);
  let blobDir: string;

  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), "switchboard-call-recordings-"));
  });
  afterAll(async () => {
    if (blobDir) await rm(blobDir, { recursive: true, force: true });
  });

  const harness = callHarness(database, {
    env: () => ({ BLOB_DIR: blobDir }),
    // Its own destinations: on PostgreSQL the files share one database, and
    // simulator routes are global (child-calls-incoming takes +614915703).
    destinations: "+614915705",
    drain: true,
  });
  const { scheduler, nextBlock, handler, states: hooks, owner, route, runToEnd } = harness;
  const callsClient = harness.connect;
  const recordingsClient = harness.client(Recordings);
  const simulator = harness.client(SimulatorAdmin);
  const sip = harness.client(SipDomains);

  /** Serves markup (or a plain 200 for "ok") by path. */
  function serve(documents: Record<string, string>): void {
    handler.handle((req, res) => {
      const doc = documents[req.path.split("?")[0]!];
      if (doc === undefined) {
        res.statusCode = 404;
        res.end("no");
      } else if (doc === "ok") {
        res.end("ok");
      } else {
        res.setHeader("content-type", "application/xml");
        res.end(doc);
      }
    });
  }

  function createCall(project: string, from: string, to: string, path = "/start", extra = {}) {
    return callsClient.createCall({
      parent: project,
      call: { to, from, options: { handlerUris: [`${handler.base}${path}`], ...extra } },
    });
  }

  /**
   * Creates a call and answers it (`answerAfterSeconds` after it is placed)
   * with the clock frozen at the answer until `ready` holds.
   */
  async function answerFrozen(
    place: () => Promise<Call>,
    answerAfterSeconds: number,
    ready: () => boolean,
  ): Promise<Call> {
    const created = await place();
    await until(() => scheduler.pendingCount > 0, "the call to be placed");
    await scheduler.advance(answerAfterSeconds);
    await until(ready, "the engine to reach the measured point");
    return created;
  }

  /** Polls GetRecording (FULL) until it is no longer PENDING. */
  async function settled(name: string): Promise<Recording> {
    let got = await recordingsClient.getRecording({ name });
    const deadline = Date.now() + 10_000;
    while (got.state === Recording_State.PENDING) {
      if (Date.now() > deadline) throw new Error(`${name} stayed PENDING`);
      await sleep(5);
      got = await recordingsClient.getRecording({ name });
    }
    return got;
  }

  /** The recordings of a call (or project), oldest first, settled. */
  async function recordingsOf(parent: string): Promise<Recording[]> {
    const res = await recordingsClient.listRecordings({ parent, pageSize: 100 });
    return Promise.all([...res.recordings].reverse().map((r) => settled(r.name)));
  }

  async function callsOf(project: string): Promise<Call[]> {
    const res = await callsClient.listCalls({ parent: project, pageSize: 100 });
    return [...res.calls].reverse();
  }

  function parametersAt(path: string): Record<string, string> {
    const req = handler.requests.find((r) => r.path === path);
    expect(req, `no request to ${path}`).toBeDefined();
    return fromJsonString(CallRequestSchema, req!.body).parameters;
  }

  async function download(uri: string): Promise<Buffer> {
    const res = await fetch(uri.startsWith("http") ? uri : `${harness.base}${uri}`);
    expect(res.status).toBe(200);
    return Buffer.from(await res.arrayBuffer());
  }

  /** The WAV rendition (downloaded through the FULL view's signed link), checked 8 kHz 16-bit. */
  async function wavOf(recording: Recording, channels: number) {
    const wav = recording.audio.find((a) => a.mimeType === "audio/x-wav");
    expect(wav?.uri).toMatch(/\/audio\/wav\?expires=\d+&sig=/);
    const file = await download(wav!.uri);
    const info = parseWav(file);
    expect(info).toMatchObject({ format: 1, channels, sampleRate: RATE, bitsPerSample: 16 });
    expect(info.frames).toBe((msOf(recording.duration) * RATE) / 1000);
    return { info, channels: wavChannels(file) };
  }

  /**
   * The MP3 rendition decodes (mpg123) to `frames` plus LAME's fixed delay and its end padding.
   * lamejs writes no gapless (LAME) header, so the decoder returns the padding too: up to the
   * frame boundary, and LAME's final flush can reach a few dozen samples into the next frame
   * (measured over many lengths: 58 to 613 samples). Bounded here by 1.25 frames (90 ms).
   */
  async function expectMp3(recording: Recording, channels: number, frames: number): Promise<void> {
    const mp3 = recording.audio.find((a) => a.mimeType === "audio/mpeg");
    const file = await download(mp3!.uri);
    const probe = probeMp3(file);
    expect(probe).toMatchObject({ codec: "mp3", sampleRate: RATE, channels });
    const decoded = await decodeMp3Frames(file, RATE);
    expect(decoded).toBe(probe.frames * MP3_FRAME);
    const padding = decoded - frames - LAME_DELAY;
    expect(padding).toBeGreaterThanOrEqual(0);
    expect(padding).toBeLessThan(MP3_FRAME * 1.25);
  }

  /** Waits (real time) for a request to `path` at `receiver`. */
  async function requestAt(receiver: Receiver, path: string): Promise<ReceivedRequest> {
    await until(() => receiver.requests.some((r) => r.path === path), `a request to ${path}`);
    return receiver.requests.find((r) => r.path === path)!;
  }

  describe("<Record>", () => {
    it("records a speaking caller to MaxDurationSeconds: NextUri parameters, SUCCEEDED, WAV and MP3 measured, beep first", async () => {
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 300 });
      serve({
        "/start": xml('<Record MaxDurationSeconds="4" NextUri="/done"/>'),
        "/done": xml("<Say>Thanks</Say>"),
      });
      // Answered at +1.1 s (setup 0.1 + ring 1); the clock stays there until the beep is playing.
      const created = await answerFrozen(
        () => createCall(project, from, to),
        1.1,
        () => handler.requests.length > 0 && scheduler.pendingCount >= 2,
      );
      const ended = await runToEnd(created.name);
      expect(ended.state).toBe(Call_State.COMPLETED);

      const params = parametersAt("/done");
      expect(params).toEqual({
        action: "RECORD",
        recording: expect.stringMatching(new RegExp(`^${created.name}/recordings/[^/]+$`)),
        estimatedDurationSeconds: "4",
        endedBy: "max-duration",
      });
      const recording = await settled(params.recording!);
      expect(recording).toMatchObject({
        name: params.recording,
        state: Recording_State.SUCCEEDED,
        source: Recording_Source.RECORD_ACTION,
        channelCount: 1,
        readyUri: "",
      });
      expect(msOf(recording.duration)).toBe(4000);
      // PlayBeep defaults to true: recording starts 0.5 s after the Record began (at the answer).
      expect(msOf(recording.startTime) - msOf(ended.answerTime)).toBe(BEEP_MS);

      const { info } = await wavOf(recording, 1);
      expect(info.frames).toBe(4 * RATE);
      await expectMp3(recording, 1, 4 * RATE);
    });

    it('PlayBeep="false" starts recording when the Record begins', async () => {
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 300 });
      serve({
        "/start": xml('<Record MaxDurationSeconds="2" PlayBeep="false" NextUri="/done"/>'),
        "/done": xml(""),
      });
      const created = await answerFrozen(
        () => createCall(project, from, to),
        1.1,
        () => handler.requests.length > 0 && scheduler.pendingCount >= 2,
      );
      const ended = await runToEnd(created.name);
      const recording = await settled(parametersAt("/done").recording!);
      expect(recording.state).toBe(Recording_State.SUCCEEDED);
      expect(msOf(recording.startTime)).toBe(msOf(ended.answerTime));
      expect(msOf(recording.duration)).toBe(2000);
    });

    it("a silent caller ends the Record after TimeoutSeconds: endedBy=silence, EMPTY, no audio", async () => {
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 300, audio: SimulatorRoute_Audio.SILENCE });
      serve({ "/start": xml('<Record TimeoutSeconds="2" NextUri="/done"/>'), "/done": xml("") });
      const created = await createCall(project, from, to);
      const ended = await runToEnd(created.name);
      expect(ended.state).toBe(Call_State.COMPLETED);
      const params = parametersAt("/done");
      expect(params).toMatchObject({ action: "RECORD", endedBy: "silence", estimatedDurationSeconds: "2" });
      const recording = await settled(params.recording!);
      expect(recording).toMatchObject({
        state: Recording_State.EMPTY,
        source: Recording_Source.RECORD_ACTION,
        channelCount: 1,
        audio: [],
      });
      expect(recording.duration).toBeUndefined();
    });

    it("StopKey: the caller's keys 1, 2, # end it at the third key (3 x 0.5 s): endedBy=stop-key", async () => {
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 300, digits: "12#" });
      serve({ "/start": xml('<Record StopKey="#" NextUri="/done"/>'), "/done": xml("") });
      const created = await createCall(project, from, to);
      await runToEnd(created.name);
      const params = parametersAt("/done");
      expect(params).toMatchObject({ action: "RECORD", endedBy: "stop-key", estimatedDurationSeconds: "2" });
      const recording = await settled(params.recording!);
      expect(recording.state).toBe(Recording_State.SUCCEEDED);
      expect(msOf(recording.duration)).toBe(3 * DIGIT_INTERVAL_MS);
      const { info } = await wavOf(recording, 1);
      expect(info.frames).toBe((3 * DIGIT_INTERVAL_MS * RATE) / 1000);
    });

    it("the caller hanging up during the Record: the recording still completes, no NextUri request", async () => {
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 4 });
      serve({ "/start": xml('<Record MaxDurationSeconds="60" NextUri="/done"/>'), "/done": xml("") });
      const created = await createCall(project, from, to);
      const ended = await runToEnd(created.name);
      expect(ended.state).toBe(Call_State.COMPLETED);
      expect(msOf(ended.answerDuration)).toBe(4000);
      expect(handler.requests.map((r) => r.path)).toEqual(["/start"]);
      const [recording, ...others] = await recordingsOf(created.name);
      expect(others).toEqual([]);
      expect(recording).toMatchObject({
        state: Recording_State.SUCCEEDED,
        source: Recording_Source.RECORD_ACTION,
        channelCount: 1,
      });
      // It ran from after the beep to the hang-up.
      expect(msOf(recording!.startTime) + msOf(recording!.duration)).toBe(msOf(ended.endTime));
      expect(msOf(recording!.startTime)).toBeGreaterThanOrEqual(msOf(ended.answerTime) + BEEP_MS);
      await wavOf(recording!, 1);
    });

    it("RecordingReadyUri (relative, resolved against the document) receives a signed RECORDING_READY", async () => {
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 300 });
      serve({
        "/flows/start": xml('<Record MaxDurationSeconds="2" RecordingReadyUri="ready?x=1" NextUri="/done"/>'),
        "/done": xml(""),
        "/flows/ready": "ok",
      });
      const created = await createCall(project, from, to, "/flows/start");
      await runToEnd(created.name);
      const name = parametersAt("/done").recording!;
      const readyUri = `${handler.base}/flows/ready?x=1`;
      const req = await requestAt(handler, "/flows/ready?x=1");
      expectSigned(req, await keyOf(database.db, project), readyUri, "RECORDING_READY");
      const body = JSON.parse(req.body) as RecordingJson;
      expect(body).toMatchObject({
        name,
        state: "SUCCEEDED",
        source: "RECORD_ACTION",
        readyUri,
        duration: "2s",
        channelCount: 1,
      });
      expect(body.audio).toHaveLength(2);
      // the webhook's links work too
      expect(parseWav(await download(body.audio![0]!.uri)).frames).toBe(2 * RATE);
      expect((await settled(name)).readyUri).toBe(readyUri);
    });
  });

  describe("call recording triggers", () => {
    it("options.recording ANSWER: one CALL_RECORDING from answer to end, 1 channel, RECORDING_READY", async () => {
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 300 });
      serve({ "/start": xml('<Say>Hello there</Say><Wait Seconds="3"/>') });
      const readyUri = `${hooks.base}/call-ready`;
      const created = await createCall(project, from, to, "/start", {
        recording: { trigger: Trigger.ANSWER, recordingReadyUri: readyUri },
      });
      const ended = await runToEnd(created.name);
      expect(ended.state).toBe(Call_State.COMPLETED);
      const all = await recordingsOf(project);
      expect(all).toHaveLength(1);
      const recording = all[0]!;
      expect(recording.name.startsWith(`${created.name}/recordings/`)).toBe(true);
      expect(recording).toMatchObject({
        state: Recording_State.SUCCEEDED,
        source: Recording_Source.CALL_RECORDING,
        channelCount: 1,
        readyUri,
      });
      expect(msOf(recording.duration)).toBe(msOf(ended.answerDuration));
      expect(msOf(recording.startTime)).toBe(msOf(ended.answerTime));
      const { info } = await wavOf(recording, 1);
      expect(info.frames).toBe((msOf(ended.answerDuration) * RATE) / 1000);
      await expectMp3(recording, 1, info.frames);

      const req = await requestAt(hooks, "/call-ready");
      expectSigned(req, await keyOf(database.db, project), readyUri, "RECORDING_READY");
      expect(JSON.parse(req.body)).toMatchObject({
        name: recording.name,
        state: "SUCCEEDED",
        source: "CALL_RECORDING",
      });
    });

    /** A parent that says something, then bridges an agent; the caller hangs up 20 s after answering. */
    async function bridgedCall(trigger: Trigger) {
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 20 });
      const agent = await route({ ringSeconds: 1, talkSeconds: 300 });
      serve({ "/start": xml(`<Say>Connecting you now</Say><Call><Endpoint>${agent}</Endpoint></Call>`) });
      const created = await createCall(project, from, to, "/start", { recording: { trigger } });
      const parent = await runToEnd(created.name);
      expect(parent.state).toBe(Call_State.COMPLETED);
      expect(parent.bridged).toBe(true);
      const all = await callsOf(project);
      expect(all).toHaveLength(2);
      const child = all[1]!;
      expect(child.originatingCall).toBe(parent.name);
      expect(child.bridged).toBe(true);
      // The bridge ran from the agent's answer to the caller's hang-up.
      const bridgedMs = msOf(parent.endTime) - msOf(child.answerTime);
      const preBridgeMs = msOf(child.answerTime) - msOf(parent.answerTime);
      expect(preBridgeMs).toBeGreaterThan(2000); // the Say (1.2 s) and the agent ringing (1.1 s)
      const recordings = await recordingsOf(project);
      expect(recordings).toHaveLength(1);
      const recording = recordings[0]!;
      // under the parent, never the child
      expect(recording.name.startsWith(`${parent.name}/recordings/`)).toBe(true);
      expect((await recordingsClient.listRecordings({ parent: child.name })).recordings).toEqual([]);
      expect(recording).toMatchObject({
        state: Recording_State.SUCCEEDED,
        source: Recording_Source.CALL_RECORDING,
        channelCount: 2,
      });
      const { info, channels } = await wavOf(recording, 2);
      return { parent, child, bridgedMs, preBridgeMs, recording, info, channels };
    }

    it("BRIDGE excludes the pre-bridge audio, measured in the file; ANSWER keeps it (agent channel silent first)", async () => {
      const bridge = await bridgedCall(Trigger.BRIDGE);
      expect(msOf(bridge.recording.startTime)).toBe(msOf(bridge.child.answerTime));
      expect(msOf(bridge.recording.duration)).toBe(bridge.bridgedMs);
      expect(bridge.info.frames).toBe((bridge.bridgedMs * RATE) / 1000);
      // channel 2, the agent, speaks from the start of the file (within the 10 ms fade-in)
      const agentStart = firstSound(bridge.channels[1]!);
      expect(agentStart).toBeGreaterThanOrEqual(0);
      expect(agentStart).toBeLessThan(RATE / 100);
      // channel 1, the caller, is there too (a speaker's pause lasts at most 0.4 s)
      expect(firstSound(bridge.channels[0]!)).toBeGreaterThanOrEqual(0);
      expect(firstSound(bridge.channels[0]!)).toBeLessThan(RATE / 2);
      await expectMp3(bridge.recording, 2, bridge.info.frames);

      const answer = await bridgedCall(Trigger.ANSWER);
      expect(msOf(answer.recording.startTime)).toBe(msOf(answer.parent.answerTime));
      expect(msOf(answer.recording.duration)).toBe(msOf(answer.parent.answerDuration));
      const preBridge = (answer.preBridgeMs * RATE) / 1000;
      const bridged = (answer.bridgedMs * RATE) / 1000;
      expect(answer.info.frames).toBe(preBridge + bridged);
      // channel 2 is silent for exactly the pre-bridge part, then the agent speaks
      const silentPrefix = firstSound(answer.channels[1]!);
      expect(silentPrefix).toBeGreaterThanOrEqual(preBridge);
      expect(silentPrefix).toBeLessThan(preBridge + RATE / 100);
      // while channel 1 (the caller and the Say) is heard from the start
      expect(firstSound(answer.channels[0]!)).toBeLessThan(RATE / 100);
      expect(answer.info.frames).toBeGreaterThan(bridge.info.frames);
    });

    it("an incoming call to an instance with call_recording_trigger ANSWER (set by update) is recorded", async () => {
      const project = await newProject(database.db);
      const c = numberingClients(database.db, scheduler.clock);
      const number = await addBlock(c, nextBlock(), 10);
      const instance = await c.instances.createPhoneNumberInstance({
        parent: project,
        phoneNumberInstance: {
          phoneNumber: { phoneNumber: number },
          incomingCallHandlerUris: [`${handler.base}/in`],
        },
      });
      await c.instances.updatePhoneNumberInstance({
        name: instance.name,
        phoneNumberInstance: { callRecordingTrigger: InstanceTrigger.ANSWER },
        updateMask: { paths: ["call_recording_trigger"] },
      });
      serve({ "/in": xml('<Say>Welcome to the line</Say><Wait Seconds="2"/>') });
      const res = await simulator.injectIncomingCall({ to: number, from: CALLER });
      const ended = await runToEnd(res.call);
      expect(ended.state).toBe(Call_State.COMPLETED);
      const all = await recordingsOf(res.call);
      expect(all).toHaveLength(1);
      expect(all[0]).toMatchObject({
        state: Recording_State.SUCCEEDED,
        source: Recording_Source.CALL_RECORDING,
        channelCount: 1,
      });
      expect(msOf(all[0]!.startTime)).toBe(msOf(ended.answerTime));
      expect(msOf(all[0]!.duration)).toBe(msOf(ended.answerDuration));
      await wavOf(all[0]!, 1);
    });

    it("a PROGRAMMABLE SIP domain's call_recording records its calls; its ready URI gets RECORDING_READY", async () => {
      const project = await newProject(database.db);
      const readyUri = `${hooks.base}/sip-ready?d=1`;
      const domain = await sip.createSipDomain({
        parent: project,
        sipDomainId: newSipDomainId("crec"),
        sipDomain: {
          callTerminationMode: Mode.PROGRAMMABLE,
          callTerminationHandlerUris: [`${handler.base}/sip`],
          cidrBlocks: [{ cidrBlock: "203.0.113.0/24" }],
          callRecording: { trigger: Trigger.ANSWER, recordingReadyUri: readyUri },
        },
      });
      serve({ "/sip": xml('<Say>You reached the desk</Say><Wait Seconds="2"/>') });
      const res = await simulator.injectIncomingCall({
        to: "1001",
        from: "alice",
        sipDomain: domain.fqdn,
        sourceIp: "203.0.113.10",
      });
      const ended = await runToEnd(res.call);
      expect(ended.state).toBe(Call_State.COMPLETED);
      const all = await recordingsOf(res.call);
      expect(all).toHaveLength(1);
      expect(all[0]).toMatchObject({
        state: Recording_State.SUCCEEDED,
        source: Recording_Source.CALL_RECORDING,
        readyUri,
      });
      expect(msOf(all[0]!.duration)).toBe(msOf(ended.answerDuration));
      const req = await requestAt(hooks, "/sip-ready?d=1");
      expectSigned(req, await keyOf(database.db, project), readyUri, "RECORDING_READY");
      expect(JSON.parse(req.body)).toMatchObject({ name: all[0]!.name, state: "SUCCEEDED" });
    });
  });

  describe("<RecordCall>", () => {
    it('Trigger="answer" mid-call records from that point to the end', async () => {
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 300 });
      serve({
        "/start": xml('<Say>One two three four five</Say><RecordCall Trigger="answer"/><Wait Seconds="3"/>'),
      });
      const created = await createCall(project, from, to);
      const ended = await runToEnd(created.name);
      const all = await recordingsOf(created.name);
      expect(all).toHaveLength(1);
      const recording = all[0]!;
      expect(recording).toMatchObject({
        state: Recording_State.SUCCEEDED,
        source: Recording_Source.CALL_RECORDING,
        channelCount: 1,
      });
      // started when the RecordCall ran (after the Say: as long as the speech engine's audio of
      // it, the process's engine whose cache holds it), lasted the 3 s Wait
      const said = await sharedSpeech().synthesize("One two three four five", {});
      expect(said.length / RATE).toBeGreaterThan(1);
      expect(msOf(recording.duration)).toBe(3000);
      expect(msOf(recording.startTime)).toBe(msOf(ended.endTime) - 3000);
      expect(msOf(recording.startTime)).toBeGreaterThanOrEqual(
        msOf(ended.answerTime) + Math.floor((said.length * 1000) / RATE),
      );
      const { info } = await wavOf(recording, 1);
      expect(info.frames).toBe(3 * RATE);
    });

    it("the recording holds the speech engine's audio of a <Say> and the decoded file of a <Play>", async () => {
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 300, audio: SimulatorRoute_Audio.SILENCE });
      const text = "Hello from Switchboard";
      // Synthesized first: the call's Say is then served from the engine's cache (the same samples).
      const spoken = await sharedSpeech().synthesize(text, {});
      // A 16 kHz WAV of a 600 Hz tone, 0.5 s: the call plays it decoded to 8 kHz.
      const tone = Int16Array.from({ length: 8000 }, (_, i) =>
        Math.round(8000 * Math.sin((2 * Math.PI * 600 * i) / 16000)),
      );
      const file = encodeWav([tone], 16000);
      const decoded = await decodeForCall(file, "audio/wav");
      handler.handle((req, res) => {
        if (req.path.startsWith("/tone.wav")) {
          res.setHeader("content-type", "audio/wav");
          res.end(file);
          return;
        }
        res.setHeader("content-type", "application/xml");
        res.end(xml(`<RecordCall Trigger="answer"/><Say>${text}</Say><Play>/tone.wav</Play>`));
      });
      const created = await createCall(project, from, to);
      await runToEnd(created.name);
      const [recording] = await recordingsOf(created.name);
      expect(recording!.state).toBe(Recording_State.SUCCEEDED);
      const { channels } = await wavOf(recording!, 1);
      const heard = channels[0]!;
      const firstSound = (s: Int16Array, from = 0) => s.findIndex((v, i) => i >= from && v !== 0);
      const lastSound = (s: Int16Array, until: number) => {
        for (let i = until - 1; i >= 0; i--) if (s[i] !== 0) return i;
        return -1;
      };
      const rms = (s: Int16Array) => Math.sqrt(s.reduce((a, v) => a + v * v, 0) / Math.max(1, s.length));
      // The Play: the file's audio at 8 kHz, unchanged, found byte for byte.
      const heardBytes = Buffer.from(heard.buffer, heard.byteOffset, heard.byteLength);
      const decodedBytes = Buffer.from(decoded.buffer, decoded.byteOffset, decoded.byteLength);
      let playAt = heardBytes.indexOf(decodedBytes);
      while (playAt >= 0 && playAt % 2 !== 0) playAt = heardBytes.indexOf(decodedBytes, playAt + 1);
      expect(playAt).toBeGreaterThan(0);
      playAt /= 2;
      // The Say before it: the engine's speech of the text. Usually its very
      // samples (the call's Say is served from the cache the test filled);
      // when the process's engine synthesized it again, eSpeak's output may
      // differ by a few samples, so: the same length of sound (±5%) at the
      // same level (±20%), and nothing else (the remote party is silent).
      const sayFrom = firstSound(heard);
      const sayTo = lastSound(heard, playAt) + 1;
      const spokenFrom = firstSound(spoken);
      const spokenTo = lastSound(spoken, spoken.length) + 1;
      expect(sayFrom).toBeGreaterThanOrEqual(0);
      const said = heard.slice(sayFrom, sayTo);
      const expected = spoken.slice(spokenFrom, spokenTo);
      expect(Math.abs(said.length - expected.length)).toBeLessThanOrEqual(expected.length * 0.05);
      expect(Math.abs(rms(said) - rms(expected))).toBeLessThanOrEqual(rms(expected) * 0.2);
      // Nothing else was heard.
      expect(firstSound(heard, playAt + decoded.length)).toBe(-1);
    });

    it('Trigger="bridge" on a call never bridged makes no recording at all', async () => {
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 300 });
      serve({ "/start": xml('<RecordCall Trigger="bridge"/><Say>Nobody to bridge you to</Say>') });
      const created = await createCall(project, from, to);
      const ended = await runToEnd(created.name);
      expect(ended.state).toBe(Call_State.COMPLETED);
      expect(ended.bridged).toBe(false);
      expect((await recordingsClient.listRecordings({ parent: project })).recordings).toEqual([]);
    });
  });

  describe("terminal states", () => {
    it.each([
      ["without post processing", []],
      ["with TRIM_SILENCE", [PostProcessing.TRIM_SILENCE]],
    ])("a silent caller recorded from ANSWER is EMPTY %s", async (_label, postProcessing) => {
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 300, audio: SimulatorRoute_Audio.SILENCE });
      serve({ "/start": xml('<Wait Seconds="3"/>') });
      const created = await createCall(project, from, to, "/start", {
        recording: { trigger: Trigger.ANSWER, postProcessing },
      });
      const ended = await runToEnd(created.name);
      expect(ended.state).toBe(Call_State.COMPLETED);
      const all = await recordingsOf(created.name);
      expect(all).toHaveLength(1);
      expect(all[0]).toMatchObject({
        state: Recording_State.EMPTY,
        source: Recording_Source.CALL_RECORDING,
        channelCount: 1,
        postProcessing,
        audio: [],
      });
      expect(all[0]!.duration).toBeUndefined();
    });
  });

  it("lists both sources of one call under it (FULL view on request)", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    serve({ "/start": xml('<Record MaxDurationSeconds="1" PlayBeep="false"/><Say>Bye now</Say>') });
    const created = await createCall(project, from, to, "/start", { recording: { trigger: Trigger.ANSWER } });
    await runToEnd(created.name);
    const all = await recordingsOf(created.name);
    expect(all.map((r) => r.source).sort()).toEqual([
      Recording_Source.RECORD_ACTION,
      Recording_Source.CALL_RECORDING,
    ]);
    expect(all.every((r) => r.state === Recording_State.SUCCEEDED)).toBe(true);
    const full = await recordingsClient.listRecordings({ parent: created.name, view: RecordingView.FULL });
    expect(full.recordings.every((r) => r.audio.every((a) => a.uri !== ""))).toBe(true);
  });
});
