/**
 * Transcriptions end to end: the real app (build()) on 127.0.0.1 with the
 * carrier simulator on a ManualScheduler; a call recorded with
 * `transcribe: DEFAULT`, bridged by `<Call>` to a simulated party whose
 * route says words; the TRANSCRIPTION_READY webhook taken by a real local
 * receiver (signatures checked with node:crypto); the transcription read
 * over gRPC, gRPC-Web, Connect and REST, its utterances checked against the
 * words said and against where the speech is in the recording's WAV
 * (downloaded through its signed link and read by a parser written here).
 */

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromJsonString } from "@bufbuild/protobuf";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  TranscribeOption,
  CallRecordingConfig_CallRecordingTrigger as Trigger,
} from "../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import { Call_State } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { Recording_State, Recordings } from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import {
  Transcription_State,
  TranscriptionSchema,
  Transcriptions,
  TranscriptionView,
} from "../../gen/enfonica/voice/v1beta1/transcriptions_pb.js";
import { SimulatorAdmin, SimulatorRoute_Audio } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { sharedSpeech } from "../../src/media/speech/index.js";
import {
  bearer,
  errorReason,
  expectCode,
  expectInvalid,
  newApiKey,
  newProject,
  TEST_OPERATOR_TOKEN,
} from "../support/app.js";
import { callHarness, expectSigned, keyOf, sleep, xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import type { ReceivedRequest } from "../support/receiver.js";
import { newSipDomainId } from "../voice/support.js";

const RATE = 8000;
const SAY = "Welcome to the restaurant";
const WORDS = "I would like to book a table";

const msOf = (t: { seconds: bigint; nanos: number } | undefined): number =>
  t === undefined ? Number.NaN : Number(t.seconds) * 1000 + Math.round(t.nanos / 1e6);

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

describe.each(testDatabases())("transcriptions on $name", (backend) => {
  const database = useTestDatabase(backend);
  let blobDir: string;
  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), "switchboard-transcriptions-"));
  });
  afterAll(async () => {
    if (blobDir) await rm(blobDir, { recursive: true, force: true });
  });
  const harness = callHarness(database, {
    env: () => ({ BLOB_DIR: blobDir }),
    destinations: "+614915704",
    drain: true,
  });
  const { handler, states: hooks, owner, route, runToEnd, serve } = harness;
  const grpc = harness.client(Transcriptions, "grpc");
  const connect = harness.client(Transcriptions);
  const recordings = harness.client(Recordings);
  const sip = harness.client(SipDomains);
  const simulator = harness.client(SimulatorAdmin);
  const grpcWeb = () =>
    createClient(
      Transcriptions,
      createGrpcWebTransport({
        baseUrl: harness.base,
        httpVersion: "1.1",
        interceptors: [bearer(TEST_OPERATOR_TOKEN)],
      }),
    );

  async function rest(method: string, path: string, token = TEST_OPERATOR_TOKEN) {
    const res = await fetch(`${harness.base}/v1beta1/${path}`, {
      method,
      headers: { authorization: `Bearer ${token}` },
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  }

  /** Waits (real time, bounded) for the TRANSCRIPTION_READY webhooks at `path`. */
  async function readyHooks(path: string, n: number): Promise<ReceivedRequest[]> {
    const of = () => hooks.requests.filter((r) => r.path === path);
    for (let i = 0; i < 1000 && of().length < n; i++) await sleep(10);
    return of();
  }

  /**
   * A call that says SAY, then is bridged to a party saying WORDS for 3 s
   * (one saying of its 7 words: 2.8 s), recorded from the answer with
   * transcription on; returns its project, call and the webhook path.
   */
  async function transcribedCall() {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300, audio: SimulatorRoute_Audio.SILENCE });
    const agent = await route({ ringSeconds: 1, talkSeconds: 3, words: WORDS });
    serve({ "/start": xml(`<Say>${SAY}</Say><Call><Endpoint>${agent}</Endpoint></Call>`) });
    const path = `/transcribed/${project.split("/")[1]}`;
    const created = await harness.connect.createCall({
      parent: project,
      call: {
        to,
        from,
        options: {
          handlerUris: [`${handler.base}/start`],
          recording: {
            trigger: Trigger.ANSWER,
            transcribe: TranscribeOption.DEFAULT,
            transcriptionReadyUri: `${hooks.base}${path}`,
          },
        },
      },
    });
    const call = await runToEnd(created.name);
    expect(call.state).toBe(Call_State.COMPLETED);
    expect(call.options?.recording?.transcribe).toBe(TranscribeOption.DEFAULT);
    return { project, call, path };
  }

  it("a recorded call is transcribed with the words said: Say text on channel 0, the route's words on channel 1", async () => {
    const { project, call, path } = await transcribedCall();
    const [hook, ...more] = await readyHooks(path, 1);
    expect(more).toEqual([]);
    expectSigned(hook!, await keyOf(database.db, project), `${hooks.base}${path}`, "TRANSCRIPTION_READY");
    const sent = fromJsonString(TranscriptionSchema, hook!.body);
    expect(sent.state).toBe(Transcription_State.COMPLETED);

    const list = await grpc.listTranscriptions({ parent: call.name });
    expect(list.transcriptions).toHaveLength(1);
    const basic = list.transcriptions[0]!;
    // BASIC by default in lists: no utterances.
    expect(basic.utterances).toEqual([]);
    const got = await grpc.getTranscription({ name: basic.name });
    expect(got).toEqual(sent);
    expect(got.name).toMatch(new RegExp(`^${call.name}/transcriptions/[a-z0-9]+$`));
    expect(got.state).toBe(Transcription_State.COMPLETED);
    expect(got.channelCount).toBe(2);
    expect(got.readyUri).toBe(`${hooks.base}${path}`);
    expect(msOf(got.updateTime)).toBeGreaterThanOrEqual(msOf(got.createTime));
    expect(got.utterances.map((u) => [u.channel, u.text])).toEqual([
      [0, SAY],
      [1, WORDS],
    ]);
    // The agent said its 7 words at 0.4 s each; the Say lasted as long as the speech engine's
    // audio of it (the process's engine: its cache holds what the call said).
    const spoken = await sharedSpeech().synthesize(SAY, {});
    // Whole milliseconds: audio lasting n.5 ms may read as either neighbour.
    expect(Math.abs(msOf(got.utterances[0]!.duration) - spoken.length / 8)).toBeLessThanOrEqual(1);
    expect(msOf(got.utterances[1]!.duration)).toBe(2800);

    // The recording it transcribes, and where the speech is in its audio.
    const recording = await recordings.getRecording({ name: got.recording });
    expect(recording.state).toBe(Recording_State.SUCCEEDED);
    expect(got.recording.startsWith(`${call.name}/recordings/`)).toBe(true);
    expect(msOf(got.duration)).toBe(msOf(recording.duration));
    const wav = recording.audio.find((a) => a.mimeType === "audio/x-wav")!;
    const res = await fetch(wav.uri.startsWith("http") ? wav.uri : `${harness.base}${wav.uri}`);
    const channels = wavChannels(Buffer.from(await res.arrayBuffer()));
    expect(channels).toHaveLength(2);
    for (const [c, samples] of channels.entries()) {
      const spans = got.utterances
        .filter((u) => u.channel === c)
        .map((u) => [
          Math.round((msOf(u.offset) * RATE) / 1000),
          Math.round(((msOf(u.offset) + msOf(u.duration)) * RATE) / 1000),
        ]);
      expect(spans.length).toBeGreaterThan(0);
      // Sound inside every utterance, none outside them (the remote party of
      // channel 0 is silent; channel 1 is silent outside the bridge).
      for (const [from, to] of spans) {
        expect(samples.subarray(from!, to!).some((s) => Math.abs(s) > 1000)).toBe(true);
      }
      const outside = samples.findIndex((s, i) => s !== 0 && !spans.some(([a, b]) => i >= a! && i < b!));
      expect(outside, `channel ${c}: sound outside the utterances at sample ${outside}`).toBe(-1);
    }
    // The agent spoke after the Say, once bridged.
    expect(msOf(got.utterances[1]!.offset)).toBeGreaterThan(
      msOf(got.utterances[0]!.offset) + msOf(got.utterances[0]!.duration),
    );
  });

  it("Get, List (both bindings, views, pages) and Delete over gRPC, gRPC-Web, Connect and REST", async () => {
    const { project, call } = await transcribedCall();
    const web = grpcWeb();
    const [listed] = (await connect.listTranscriptions({ parent: project })).transcriptions;
    const name = listed!.name;
    for (const client of [grpc, web, connect]) {
      const full = await client.getTranscription({ name });
      expect(full.utterances).toHaveLength(2);
      const basic = await client.getTranscription({ name, view: TranscriptionView.BASIC });
      expect(basic.utterances).toEqual([]);
      expect(basic.name).toBe(name);
      for (const parent of [project, call.name]) {
        const page = await client.listTranscriptions({ parent, view: TranscriptionView.FULL });
        expect(page.transcriptions.map((t) => t.name)).toEqual([name]);
        expect(page.transcriptions[0]!.utterances).toHaveLength(2);
        expect(page.nextPageToken).toBe("");
      }
    }
    const got = await rest("GET", name);
    expect(got.status).toBe(200);
    expect(got.json.state).toBe("COMPLETED");
    expect((got.json.utterances as { text: string; channel?: number }[]).map((u) => u.text)).toEqual([
      SAY,
      WORDS,
    ]);
    expect((await rest("GET", `${name}?view=TRANSCRIPTION_VIEW_BASIC`)).json.utterances).toBeUndefined();
    for (const parent of [project, call.name]) {
      const listedRest = await rest("GET", `${parent}/transcriptions`);
      expect(listedRest.status).toBe(200);
      expect((listedRest.json.transcriptions as { name: string }[]).map((t) => t.name)).toEqual([name]);
    }

    // Keyset pages: a second transcribed call in the same project.
    const second = await transcribedCallIn(project);
    const page1 = await grpc.listTranscriptions({ parent: project, pageSize: 1 });
    expect(page1.transcriptions.map((t) => t.name)).toEqual([second]);
    const page2 = await grpc.listTranscriptions({
      parent: project,
      pageSize: 1,
      pageToken: page1.nextPageToken,
    });
    expect(page2.transcriptions.map((t) => t.name)).toEqual([name]);
    expect(page2.nextPageToken).toBe("");
    await expectInvalid(
      grpc.listTranscriptions({ parent: call.name, pageSize: 1, pageToken: page1.nextPageToken }),
      ["page_token"],
    );

    // Delete: Empty on every transport, then NOT_FOUND; the recording stays.
    expect(await web.deleteTranscription({ name })).toEqual(expect.objectContaining({}));
    const gone = await expectCode(grpc.getTranscription({ name }), Code.NotFound);
    expect(errorReason(gone)).toBe("RESOURCE_NOT_FOUND");
    await expectCode(connect.deleteTranscription({ name }), Code.NotFound);
    expect((await rest("DELETE", name)).status).toBe(404);
    const recording = await recordings.getRecording({ name: listed!.recording });
    expect(recording.state).toBe(Recording_State.SUCCEEDED);
    const del = await rest("DELETE", second);
    expect(del.status).toBe(200);
    expect(del.json).toEqual({});
    expect((await grpc.listTranscriptions({ parent: project })).transcriptions).toEqual([]);
  });

  /** Like transcribedCall, in `project`; returns the transcription's name. */
  async function transcribedCallIn(project: string): Promise<string> {
    const to = await route({ ringSeconds: 1, talkSeconds: 2, words: "Hello there" });
    serve({ "/start": xml("<Say>Hi</Say>") });
    // The caller ID must be one of the project's numbers: its earlier call's.
    const numbers = await ownNumber(project);
    const created = await harness.connect.createCall({
      parent: project,
      call: {
        to,
        from: numbers,
        options: {
          handlerUris: [`${handler.base}/start`],
          recording: { trigger: Trigger.ANSWER, transcribe: TranscribeOption.DEFAULT },
        },
      },
    });
    await runToEnd(created.name);
    for (let i = 0; i < 1000; i++) {
      const [t] = (await grpc.listTranscriptions({ parent: created.name })).transcriptions;
      if (t !== undefined && t.state !== Transcription_State.PENDING) {
        expect(t.state).toBe(Transcription_State.COMPLETED);
        const full = await grpc.getTranscription({ name: t.name });
        // One channel: the Say and the party's words (cut where the call ended: we hung up after the Say).
        expect(full.utterances.every((u) => u.channel === 0)).toBe(true);
        const texts = full.utterances.map((u) => u.text);
        expect(texts).toContain("Hi");
        expect(texts.filter((x) => x !== "Hi").every((x) => "Hello there".startsWith(x))).toBe(true);
        expect(texts.length).toBeGreaterThan(1);
        return t.name;
      }
      await sleep(10);
    }
    throw new Error("no transcription");
  }

  /** The number the project's earlier call came from (owner() gives each project one). */
  async function ownNumber(project: string): Promise<string> {
    const calls = await harness.connect.listCalls({ parent: project, pageSize: 1 });
    return calls.calls[0]!.from;
  }

  it("a SIP domain's call_recording with transcribe DEFAULT: its calls are transcribed", async () => {
    const project = await newProject(database.db);
    const path = `/transcribed/${project.split("/")[1]}`;
    const domain = await sip.createSipDomain({
      parent: project,
      sipDomainId: newSipDomainId("tr"),
      sipDomain: {
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: [`${handler.base}/sip`],
        cidrBlocks: [{ cidrBlock: "203.0.113.0/24" }],
        callRecording: {
          trigger: Trigger.ANSWER,
          transcribe: TranscribeOption.DEFAULT,
          transcriptionReadyUri: `${hooks.base}${path}`,
        },
      },
    });
    serve({ "/sip": xml("<Say>Hello SIP caller</Say>") });
    const res = await simulator.injectIncomingCall({
      to: "1001",
      from: "alice",
      sipDomain: domain.fqdn,
      sourceIp: "203.0.113.10",
    });
    await runToEnd(res.call);
    const [hook] = await readyHooks(path, 1);
    expectSigned(hook!, await keyOf(database.db, project), `${hooks.base}${path}`, "TRANSCRIPTION_READY");
    const sent = fromJsonString(TranscriptionSchema, hook!.body);
    expect(sent.state).toBe(Transcription_State.COMPLETED);
    expect(sent.name.startsWith(`${res.call}/transcriptions/`)).toBe(true);
    // The caller's speech has no words (its route has none): only what was said to it.
    expect(sent.utterances.map((u) => [u.channel, u.text])).toEqual([[0, "Hello SIP caller"]]);
  });

  it("deleting a recording deletes its transcriptions", async () => {
    const { call } = await transcribedCall();
    const [t] = (await grpc.listTranscriptions({ parent: call.name })).transcriptions;
    await recordings.deleteRecording({ name: t!.recording });
    await expectCode(grpc.getTranscription({ name: t!.name }), Code.NotFound);
    expect((await grpc.listTranscriptions({ parent: call.name })).transcriptions).toEqual([]);
  });

  it("bad requests name their field on every transport; other projects are PERMISSION_DENIED", async () => {
    const mine = await newProject(database.db);
    const other = await newProject(database.db);
    for (const client of [grpc, grpcWeb(), connect]) {
      await expectInvalid(client.getTranscription({ name: "projects/p/calls/c" }), ["name"]);
      await expectInvalid(
        client.getTranscription({ name: `${mine}/calls/c/transcriptions/t`, view: 9 as TranscriptionView }),
        ["view"],
      );
      await expectInvalid(client.listTranscriptions({ parent: "projects/p/sipDomains/x" }), ["parent"]);
      await expectInvalid(client.listTranscriptions({ parent: mine, pageSize: -1 }), ["page_size"]);
      await expectInvalid(client.listTranscriptions({ parent: mine, pageToken: "garbage" }), ["page_token"]);
      await expectInvalid(client.deleteTranscription({ name: "" }), ["name"]);
    }
    const bad = await rest("GET", `${mine}/transcriptions?pageSize=-1`);
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.json)).toContain("page_size");

    const key = await newApiKey(database.db, [{ project: mine, roles: ["roles/voice.admin"] }]);
    const outsider = createClient(
      Transcriptions,
      createGrpcWebTransport({
        baseUrl: harness.base,
        httpVersion: "1.1",
        interceptors: [bearer(key.secret)],
      }),
    );
    await expectCode(outsider.listTranscriptions({ parent: other }), Code.PermissionDenied);
    await expectCode(
      outsider.getTranscription({ name: `${other}/calls/c/transcriptions/t` }),
      Code.PermissionDenied,
    );
    expect((await rest("DELETE", `${other}/calls/c/transcriptions/t`, key.secret)).status).toBe(403);
    await expectCode(outsider.getTranscription({ name: `${mine}/calls/c/transcriptions/t` }), Code.NotFound);
    // Only the transcription permissions are needed.
    const reader = await newApiKey(database.db, [
      { project: mine, permissions: ["voice.transcriptions.list"] },
    ]);
    expect((await rest("GET", `${mine}/transcriptions`, reader.secret)).status).toBe(200);
    expect((await rest("GET", `${mine}/calls/c/transcriptions/t`, reader.secret)).status).toBe(403);
  });
});
