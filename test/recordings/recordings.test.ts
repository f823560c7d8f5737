/**
 * Recordings end to end: the real app (build()) listening on 127.0.0.1
 * serving the API (REST and Connect) and the signed download links, the
 * domain API the call engine uses to create and complete recordings, the
 * filesystem blob store in a temporary directory, and RECORDING_READY
 * webhooks delivered by a real worker to a real receiver (signature checked
 * with node:crypto).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostProcessing } from "../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import {
  Recording_ErrorCode,
  Recording_State,
  RecordingAudio_AudioEncoding,
  Recordings,
  RecordingView,
} from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import { projects, webhookEvents } from "../../src/db/schema/index.js";
import { WebhookWorker } from "../../src/events/worker.js";
import { createLogger } from "../../src/log.js";
import { silence, speechLike } from "../../src/recordings/audio/signal.js";
import type { BlobStore } from "../../src/recordings/blobs.js";
import { createRecordings, type Recording, type RecordingsDomain } from "../../src/recordings/index.js";
import { type App, build } from "../../src/server.js";
import { bearer, expectCode, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { parseWav } from "./audio.js";

const RATE = 8000;
const log = createLogger("silent");

describe.each(testDatabases())("recordings on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock("2026-03-01T10:00:00.000Z");
  let blobDir: string;
  let env: NodeJS.ProcessEnv;
  let app: App;
  let base: string;
  let domain: RecordingsDomain;
  let receiver: Receiver;

  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), "switchboard-blobs-"));
    env = { BLOB_DIR: blobDir, ROLE: "api", WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true" };
    app = await build({ config: testConfig(env), db: database.db, clock });
    const address = await app.listen(0, "127.0.0.1");
    base = `http://127.0.0.1:${address.port}`;
    // The engine's view: the same database, blob directory and link secret.
    domain = createRecordings({ config: testConfig(env), clock, log, db: database.db });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await app?.close();
    await receiver?.close();
    if (blobDir) await rm(blobDir, { recursive: true, force: true });
  });

  const client = () =>
    createClient(
      Recordings,
      createConnectTransport({
        baseUrl: base,
        httpVersion: "1.1",
        interceptors: [bearer(TEST_OPERATOR_TOKEN)],
      }),
    );
  const rest = (method: string, path: string) =>
    fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` } });

  async function record(
    project: string,
    options: {
      callId?: string;
      channels?: Int16Array[];
      trim?: boolean;
      readyUri?: string;
      d?: RecordingsDomain;
    } = {},
  ): Promise<Recording> {
    const channels = options.channels ?? [speechLike({ seed: 1, durationMs: 3000, sampleRate: RATE })];
    const d = options.d ?? domain;
    const pending = await d.createPending({
      projectId: project.split("/")[1]!,
      callId: options.callId ?? "call-1",
      source: "RECORD_ACTION",
      postProcessing: options.trim ? ["TRIM_SILENCE"] : [],
      readyUri: options.readyUri ?? "",
      channelCount: channels.length,
    });
    expect(pending.state).toBe("PENDING");
    return d.complete(pending.id, { channels, sampleRate: RATE, startTime: clock.now() });
  }

  async function download(uri: string): Promise<Response> {
    return fetch(uri.startsWith("http") ? uri : `${base}${uri}`);
  }

  it("stores WAV and MP3 renditions and serves both through the signed links of the FULL view", async () => {
    const project = await newProject(database.db);
    const done = await record(project);
    expect(done).toMatchObject({ state: "SUCCEEDED", durationMs: 3000, channelCount: 1 });

    const got = await client().getRecording({ name: done.name });
    expect(got.state).toBe(Recording_State.SUCCEEDED);
    expect(Number(got.duration?.seconds)).toBe(3);
    expect(got.startTime).toBeDefined();
    expect(got.audio.map((a) => [a.mimeType, a.encoding, a.sampleRate])).toEqual([
      ["audio/x-wav", RecordingAudio_AudioEncoding.PCM_16BIT, 8000],
      ["audio/mpeg", RecordingAudio_AudioEncoding.MP3, 8000],
    ]);
    const [wav, mp3] = got.audio;
    expect(wav!.uri).toMatch(/\/audio\/wav\?expires=\d+&sig=/);

    const wavRes = await download(wav!.uri);
    expect(wavRes.status).toBe(200);
    expect(wavRes.headers.get("content-type")).toBe("audio/x-wav");
    expect(Number(wavRes.headers.get("content-length"))).toBe(wav!.sizeBytes);
    const wavFile = Buffer.from(await wavRes.arrayBuffer());
    expect(wavFile.length).toBe(wav!.sizeBytes);
    expect(parseWav(wavFile)).toMatchObject({
      channels: 1,
      sampleRate: 8000,
      bitsPerSample: 16,
      frames: 24000,
    });

    const mp3Res = await download(mp3!.uri);
    expect(mp3Res.status).toBe(200);
    expect(mp3Res.headers.get("content-type")).toBe("audio/mpeg");
    expect(Number(mp3Res.headers.get("content-length"))).toBe(mp3!.sizeBytes);
    expect((await mp3Res.arrayBuffer()).byteLength).toBe(mp3!.sizeBytes);
  });

  it("refuses expired and tampered links with 403, and serves HEAD", async () => {
    const project = await newProject(database.db);
    const done = await record(project, {
      channels: [speechLike({ seed: 2, durationMs: 1000, sampleRate: RATE })],
    });
    const got = await client().getRecording({ name: done.name });
    const uri = got.audio[0]!.uri;
    const head = await fetch(`${base}${uri}`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String(got.audio[0]!.sizeBytes));

    const sig = new URL(uri, base).searchParams.get("sig")!;
    const flipped = `${sig[0] === "A" ? "B" : "A"}${sig.slice(1)}`;
    const refused = [
      uri.replace(`sig=${sig}`, `sig=${flipped}`), // tampered signature
      uri.replace("/audio/wav", "/audio/mp3"), // another rendition with this one's signature
      uri.replace(/expires=(\d+)/, (_, e: string) => `expires=${Number(e) + 3600}`), // extended
      uri.split("?")[0]!, // unsigned
    ];
    for (const u of refused) {
      const res = await download(u);
      expect(res.status, u).toBe(403);
      expect(((await res.json()) as { error: { status: string } }).error.status).toBe("PERMISSION_DENIED");
    }
    clock.advance(59 * 60 * 1000);
    expect((await download(uri)).status).toBe(200);
    clock.advance(61 * 1000);
    expect((await download(uri)).status).toBe(403);
    // a fresh Get gives a fresh link
    const again = await client().getRecording({ name: done.name });
    expect((await download(again.audio[0]!.uri)).status).toBe(200);
  });

  it("returns links in Get (FULL by default) but not in List (BASIC by default), newest first, both parents", async () => {
    const project = await newProject(database.db);
    const made: Recording[] = [];
    for (const callId of ["call-a", "call-a", "call-b"]) {
      clock.advance(1000);
      made.push(
        await record(project, {
          callId,
          channels: [speechLike({ seed: 9, durationMs: 500, sampleRate: RATE })],
        }),
      );
    }
    const get = await client().getRecording({ name: made[0]!.name });
    expect(get.audio.every((a) => a.uri !== "")).toBe(true);
    const basic = await client().getRecording({ name: made[0]!.name, view: RecordingView.BASIC });
    expect(basic.audio.map((a) => a.uri)).toEqual(["", ""]);

    const all = await client().listRecordings({ parent: project });
    expect(all.recordings.map((r) => r.name)).toEqual(made.map((r) => r.name).reverse());
    expect(all.recordings.every((r) => r.audio.length === 2 && r.audio.every((a) => a.uri === ""))).toBe(
      true,
    );
    const full = await client().listRecordings({ parent: project, view: RecordingView.FULL });
    expect(full.recordings.every((r) => r.audio.every((a) => a.uri !== ""))).toBe(true);

    const page1 = await client().listRecordings({ parent: `${project}/calls/call-a`, pageSize: 1 });
    expect(page1.recordings.map((r) => r.name)).toEqual([made[1]!.name]);
    const page2 = await client().listRecordings({
      parent: `${project}/calls/call-a`,
      pageSize: 1,
      pageToken: page1.nextPageToken,
    });
    expect(page2.recordings.map((r) => r.name)).toEqual([made[0]!.name]);
    expect(page2.nextPageToken).toBe("");

    // REST: both bindings of ListRecordings, and GetRecording
    const byCall = await rest("GET", `/v1beta1/${project}/calls/call-b/recordings`);
    expect(byCall.status).toBe(200);
    const byCallBody = (await byCall.json()) as { recordings: { name: string; audio: { uri?: string }[] }[] };
    expect(byCallBody.recordings.map((r) => r.name)).toEqual([made[2]!.name]);
    expect(byCallBody.recordings[0]!.audio[0]!.uri).toBeUndefined();
    const byProject = (await (await rest("GET", `/v1beta1/${project}/recordings?pageSize=2`)).json()) as {
      recordings: unknown[];
      nextPageToken: string;
    };
    expect(byProject.recordings).toHaveLength(2);
    expect(byProject.nextPageToken).not.toBe("");
    const one = (await (await rest("GET", `/v1beta1/${made[2]!.name}`)).json()) as {
      state: string;
      audio: { uri: string; mimeType: string }[];
    };
    expect(one.state).toBe("SUCCEEDED");
    expect(one.audio[1]!.mimeType).toBe("audio/mpeg");
    expect((await download(one.audio[1]!.uri)).status).toBe(200);

    // the call in the name must match
    await expectCode(
      client().getRecording({ name: `${project}/calls/call-b/recordings/${made[0]!.id}` }),
      Code.NotFound,
    );
  });

  it("deletes a recording with its audio: returned once, then NOT_FOUND and 404 downloads", async () => {
    const project = await newProject(database.db);
    const done = await record(project);
    const got = await client().getRecording({ name: done.name });
    const files = () => readdir(join(blobDir, "recordings", project.split("/")[1]!));
    expect((await files()).sort()).toEqual([`${done.id}.mp3`, `${done.id}.wav`]);

    const res = await rest("DELETE", `/v1beta1/${done.name}`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { name: string }).name).toBe(done.name);
    expect(await files()).toEqual([]);
    for (const a of got.audio) expect((await download(a.uri)).status).toBe(404);
    await expectCode(client().getRecording({ name: done.name }), Code.NotFound);
    await expectCode(client().deleteRecording({ name: done.name }), Code.NotFound);
  });

  it("ends EMPTY, without audio, when the recording is entirely silent", async () => {
    const project = await newProject(database.db);
    const done = await record(project, { channels: [silence(3000, RATE), silence(3000, RATE)] });
    expect(done.state).toBe("EMPTY");
    const got = await client().getRecording({ name: done.name });
    expect(got).toMatchObject({ state: Recording_State.EMPTY, channelCount: 2, audio: [] });
    expect(got.duration).toBeUndefined();
    expect(existsSync(join(blobDir, "recordings", project.split("/")[1]!, `${done.id}.wav`))).toBe(false);
  });

  it("trims leading and trailing silence with TRIM_SILENCE (measured in the file)", async () => {
    const project = await newProject(database.db);
    const speech = speechLike({ seed: 4, durationMs: 2000, sampleRate: RATE });
    const padded = Int16Array.from([...silence(1000, RATE), ...speech, ...silence(1500, RATE)]);
    const plain = await record(project, { channels: [padded] });
    const trimmed = await record(project, { channels: [padded], trim: true });
    expect(plain.durationMs).toBe(4500);
    expect(trimmed.durationMs).toBeLessThanOrEqual(2020);
    expect(trimmed.durationMs).toBeGreaterThan(1000);

    const got = await client().getRecording({ name: trimmed.name });
    expect(got.postProcessing).toEqual([PostProcessing.TRIM_SILENCE]);
    const file = parseWav(Buffer.from(await (await download(got.audio[0]!.uri)).arrayBuffer()));
    expect(file.frames).toBe((trimmed.durationMs! * RATE) / 1000);
    expect(file.frames).toBeLessThan(padded.length / 2);
    expect(file.firstChannel.subarray(0, 160).some((s) => s !== 0)).toBe(true);
    const plainFile = parseWav(
      Buffer.from(
        await (
          await download((await client().getRecording({ name: plain.name })).audio[0]!.uri)
        ).arrayBuffer(),
      ),
    );
    expect(plainFile.frames).toBe(padded.length);
  });

  it("fails with TIMEOUT when processing overruns its deadline, INTERNAL_ERROR on a fault", async () => {
    const project = await newProject(database.db);
    const slow = createRecordings({
      config: testConfig({ ...env, RECORDING_PROCESSING_TIMEOUT_MS: "50" }),
      clock,
      log,
      db: database.db,
      processor: () => new Promise(() => {}),
    });
    const timedOut = await record(project, { d: slow });
    expect(timedOut).toMatchObject({ state: "FAILED", errorCode: "TIMEOUT" });
    // work that blocks the event loop past the deadline also times out
    const blocking = createRecordings({
      config: testConfig({ ...env, RECORDING_PROCESSING_TIMEOUT_MS: "30" }),
      clock,
      log,
      db: database.db,
      processor: async () => {
        const until = performance.now() + 80;
        while (performance.now() < until) {
          // busy
        }
        return { empty: true };
      },
    });
    expect(await record(project, { d: blocking })).toMatchObject({ state: "FAILED", errorCode: "TIMEOUT" });

    const broken = createRecordings({
      config: testConfig(env),
      clock,
      log,
      db: database.db,
      processor: async () => {
        throw new Error("encoder exploded");
      },
    });
    expect(await record(project, { d: broken })).toMatchObject({
      state: "FAILED",
      errorCode: "INTERNAL_ERROR",
    });

    const full: BlobStore = {
      put: async () => {
        throw new Error("disk full");
      },
      get: async () => undefined,
      stream: async () => undefined,
      size: async () => undefined,
      delete: async () => {},
    };
    const noSpace = createRecordings({ config: testConfig(env), clock, log, db: database.db, blobs: full });
    const failed = await record(project, { d: noSpace });
    expect(failed).toMatchObject({ state: "FAILED", errorCode: "INTERNAL_ERROR", renditions: [] });

    const got = await client().getRecording({ name: failed.name });
    expect(got).toMatchObject({
      state: Recording_State.FAILED,
      errorCode: Recording_ErrorCode.INTERNAL_ERROR,
    });
    expect((await client().getRecording({ name: timedOut.name })).errorCode).toBe(
      Recording_ErrorCode.TIMEOUT,
    );

    // terminal means terminal
    await expectCode(
      domain.complete(failed.id, { channels: [silence(10, RATE)], sampleRate: RATE, startTime: clock.now() }),
      Code.FailedPrecondition,
    );
    const pending = await domain.createPending({
      projectId: project.split("/")[1]!,
      callId: "call-1",
      source: "CALL_RECORDING",
      postProcessing: [],
      readyUri: "",
      channelCount: 1,
    });
    expect(await domain.fail(pending.id, "TIMEOUT")).toMatchObject({ state: "FAILED", errorCode: "TIMEOUT" });
  });

  it("sends RECORDING_READY, signed, to ready_uri at the terminal state", async () => {
    const project = await newProject(database.db);
    const projectId = project.split("/")[1]!;
    const readyUri = `${receiver.base}/ready?x=1`;
    const worker = new WebhookWorker({ db: database.db, clock, config: testConfig(env).webhooks, log });
    const done = await record(project, { readyUri });
    const silent = await record(project, { readyUri, channels: [silence(1000, RATE)] });
    await worker.runOnce();
    expect(receiver.requests).toHaveLength(2);

    const [row] = await database.db
      .select({ key: projects.signingKey })
      .from(projects)
      .where(eq(projects.id, projectId));
    const key = Buffer.from(row!.key, "base64");
    for (const req of receiver.requests) {
      expect(req.path).toBe("/ready?x=1");
      expect(req.headers["x-enfonica-event"]).toBe("RECORDING_READY");
      expect(req.headers["content-type"]).toBe("application/json; charset=utf-8");
      const expected = createHmac("sha256", key)
        .update(`${readyUri}RECORDING_READY${req.body}`, "utf8")
        .digest();
      const given = Buffer.from(String(req.headers["x-enfonica-signature"]), "base64");
      expect(given.length).toBe(expected.length);
      expect(timingSafeEqual(given, expected)).toBe(true);
    }
    const bodies = receiver.requests.map(
      (r) =>
        JSON.parse(r.body) as { name: string; state: string; readyUri: string; audio?: { uri: string }[] },
    );
    const ready = bodies.find((b) => b.name === done.name)!;
    expect(ready).toMatchObject({ state: "SUCCEEDED", readyUri, source: "RECORD_ACTION", duration: "3s" });
    expect(ready.audio).toHaveLength(2);
    expect((await download(ready.audio![1]!.uri)).status).toBe(200);
    expect(bodies.find((b) => b.name === silent.name)).toMatchObject({ state: "EMPTY" });

    // no ready_uri, no webhook
    await record(project);
    const events = await database.db
      .select()
      .from(webhookEvents)
      .where(eq(webhookEvents.projectId, projectId));
    expect(events).toHaveLength(2);
  });

  it("refuses a bad ready_uri or channel count from the engine", async () => {
    const project = await newProject(database.db);
    const base = {
      projectId: project.split("/")[1]!,
      callId: "c",
      source: "RECORD_ACTION" as const,
      postProcessing: [],
    };
    await expectCode(
      domain.createPending({ ...base, readyUri: "ftp://x/y", channelCount: 1 }),
      Code.InvalidArgument,
    );
    await expectCode(domain.createPending({ ...base, readyUri: "", channelCount: 3 }), Code.InvalidArgument);
  });
});
