/**
 * A call's writes when the connection to the database fails on the way:
 *
 * - CreateCall whose transaction committed but whose reply never came is
 *   UNAVAILABLE to the client, and the call is never placed: the engine
 *   that created it (its id is on the row from the insert) ends it FAILED
 *   ENGINE_LOST about a second later, its state update sent.
 * - So is an incoming call whose insert's reply was lost (the caller is
 *   refused).
 * - A recording's end is made again likewise; a repeat that finds it made
 *   (its reply lost) keeps its audio, and RECORDING_READY is sent once; the
 *   transcription opened with that end is made once. So is a
 *   transcription's end.
 * - A heartbeat that failed makes the next new call register its engine
 *   again first: the others may have swept it meanwhile.
 * - A transition whose statement failed (the database out of reach) or
 *   whose reply was lost is sent again until it answers: the call still
 *   ends in the database, and each state update is sent once.
 *
 * Real parts: the app (build()) on a loopback port, PostgreSQL behind a TCP
 * proxy that loses a reply or drops connections on the test's word
 * (test/support/pg-proxy.ts), real receivers. The rows are read on a
 * connection of their own, not through the proxy. PostgreSQL only.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  TranscribeOption,
  CallRecordingConfig_CallRecordingTrigger as Trigger,
} from "../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import { Call_State } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import {
  type Recording,
  Recording_State,
  Recordings,
  RecordingView,
} from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import {
  Transcription_State,
  Transcriptions,
  TranscriptionView,
} from "../../gen/enfonica/voice/v1beta1/transcriptions_pb.js";
import { SimulatorAdmin } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { type Database, openPostgres } from "../../src/db/client.js";
import { callEngines, calls } from "../../src/db/schema/index.js";
import { createLogger } from "../../src/log.js";
import { createCallEngine } from "../../src/services.js";
import { ENGINE_LOST } from "../../src/voice/calls/liveness.js";
import { captureLog } from "../observability/support.js";
import { testConfig } from "../support/app.js";
import { callHarness, keyOf, sleep, xml } from "../support/calls.js";
import { describePostgres, postgresTestBackend, useTestDatabase } from "../support/db.js";
import { type PgProxy, startPgProxy } from "../support/pg-proxy.js";
import { spokenSeconds } from "../support/speech.js";

const postgresBackend = postgresTestBackend();

describePostgres("a call's writes over a failing connection", () => {
  const direct = useTestDatabase(postgresBackend!);
  let proxy: PgProxy;
  let proxied: Database;
  let blobDir: string;
  beforeAll(async () => {
    proxy = await startPgProxy(direct.url!);
    proxied = openPostgres(proxy.url);
    blobDir = await mkdtemp(join(tmpdir(), "switchboard-lost-writes-"));
  });
  afterAll(async () => {
    proxy?.refuse(false);
    await proxied?.close();
    await proxy?.close();
    if (blobDir) await rm(blobDir, { recursive: true, force: true });
  });
  const log = captureLog("warn");
  const harness = callHarness(
    {
      get db() {
        return proxied.db;
      },
    },
    // Its own destinations: on PostgreSQL simulator routes are shared by the files.
    { log: log.logger, env: () => ({ BLOB_DIR: blobDir }), destinations: "+614915707" },
  );
  const recordingsClient = harness.client(Recordings);

  /** The call's one recording, once it is no longer PENDING (up to 10 s), FULL view. */
  async function recordingOf(call: string): Promise<Recording | undefined> {
    for (let i = 0; i < 200; i++) {
      const [listed] = (await recordingsClient.listRecordings({ parent: call })).recordings;
      if (listed !== undefined && listed.state !== Recording_State.PENDING) {
        return recordingsClient.getRecording({ name: listed.name, view: RecordingView.FULL });
      }
      await sleep(50);
    }
    return undefined;
  }

  /** The WAV rendition of `recording`, downloaded through its signed link. */
  async function wavOf(recording: Recording): Promise<Response> {
    const uri = recording.audio.find((a) => a.mimeType === "audio/x-wav")?.uri ?? "";
    return fetch(uri.startsWith("http") ? uri : `${harness.base}${uri}`);
  }
  const { owner, route, serve, states, handler, scheduler } = harness;

  /** The call's row, read directly. */
  const rowOf = async (id: string) => (await direct.db.select().from(calls).where(eq(calls.id, id)))[0];

  /** Waits (real time, up to 10 s) for `check` to hold. */
  async function eventually<T>(read: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
    let value = await read();
    for (let i = 0; i < 200 && !check(value); i++) {
      await sleep(50);
      value = await read();
    }
    return value;
  }

  /** Creates a call marked by the label `mark` (a bound parameter of the create: the proxy can find it). */
  const create = (
    project: string,
    from: string,
    to: string,
    mark: string,
    recording?: {
      trigger: Trigger;
      recordingReadyUri?: string;
      transcribe?: TranscribeOption;
      transcriptionReadyUri?: string;
    },
  ) =>
    harness.connect.createCall({
      parent: project,
      call: {
        to,
        from,
        labels: { mark },
        options: {
          handlerUris: [`${handler.base}/start`],
          stateUpdateUri: `${states.base}/state`,
          ...(recording === undefined ? {} : { recording }),
        },
      },
    });

  it("a create whose commit reply was lost is UNAVAILABLE, and the call is ended, never placed", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 5 });
    serve({ "/start": xml("<Say>hello</Say>") });
    const mark = `in-doubt-${randomBytes(4).toString("hex")}`;
    const lostBefore = proxy.lost();
    // The reply to the create's COMMIT is lost (the commit happened).
    proxy.loseReplyTo(mark, { at: "COMMIT" });
    const err = await create(project, from, to, mark).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.Unavailable);
    expect(proxy.lost()).toBe(lostBefore + 1);

    // It committed, named by the engine that created it...
    const [row] = await direct.db.select().from(calls).where(sql`${calls.labels}->>'mark' = ${mark}`);
    expect(row?.engineId).toBe(harness.app.engine.id);
    // ...which ends it rather than place it late.
    const ended = await eventually(
      () => rowOf(row!.id),
      (r) => r?.state === "FAILED",
    );
    expect(ended).toMatchObject({
      state: "FAILED",
      errorCode: ENGINE_LOST,
      errorMessage: "The call's creation did not complete; it was not placed",
      startTime: null,
    });
    const updates = await harness.stateUpdates(2, await keyOf(direct.db, project), `${states.base}/state`);
    expect(updates.map((u) => u.state)).toEqual([Call_State.QUEUED, Call_State.FAILED]);
    expect(updates[1]?.errorCode).toBe(ENGINE_LOST);
    await scheduler.advance(10);
    expect(handler.requests).toHaveLength(0);
    expect((await rowOf(row!.id))?.state).toBe("FAILED");
  });

  it("a transition that failed on the way is sent again until it answers, its state update sent once", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 5 });
    serve({ "/start": xml('<Wait Seconds="600"/>') });
    const lostBefore = proxy.lost();
    // The reply to the RINGING transition (its state update's body is a bound parameter) is lost.
    proxy.loseReplyTo('"state":"RINGING"');
    // Recorded: the recording ends (is processed and stored) while the database is away too.
    const call = await create(project, from, to, "transitions", { trigger: Trigger.ANSWER });
    const id = call.name.split("/")[3]!;
    let row = await rowOf(id);
    // Call time moves until RINGING's reply is lost (the call rang) and 1.5 s more (it answers
    // 1 s after ringing), then only real time passes: the hang-up (5 s after the answer) must
    // not come while RINGING is still being sent again (its connection reconnects first), or
    // IN_PROGRESS and COMPLETED would both be written before the database is refused.
    let sinceLost = 0;
    for (let i = 0; i < 400 && row?.state !== "IN_PROGRESS"; i++) {
      if (proxy.lost() > lostBefore) sinceLost++;
      await (sinceLost <= 3 ? scheduler.advance(0.5) : sleep(20));
      await sleep(5);
      row = await rowOf(id);
    }
    expect(row?.state).toBe("IN_PROGRESS");
    expect(proxy.lost()).toBe(lostBefore + 1);

    // The database goes out of reach as the remote party hangs up.
    proxy.refuse(true);
    await scheduler.advance(6);
    await sleep(300);
    expect((await rowOf(id))?.state).toBe("IN_PROGRESS");
    proxy.refuse(false);
    const ended = await eventually(
      () => rowOf(id),
      (r) => r?.state === "COMPLETED",
    );
    expect(ended?.state).toBe("COMPLETED");
    expect(ended?.endTime).not.toBeNull();

    // Sent again, and never given up on: the repeat of the statement whose reply was lost did not fail.
    const writes = log.lines.filter((l) => l.call === call.name && String(l.msg).startsWith("call write"));
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.map((l) => l.msg)).toEqual(writes.map(() => "call write failed; retrying"));

    // The pool reconnects with a backoff that grows with the connections refused: allow it.
    for (let i = 0; i < 3000 && states.requests.length < 5; i++) await sleep(10);
    const updates = await harness.stateUpdates(5, await keyOf(direct.db, project), `${states.base}/state`);
    expect(updates.map((u) => u.state)).toEqual([
      Call_State.QUEUED,
      Call_State.STARTING,
      Call_State.RINGING,
      Call_State.IN_PROGRESS,
      Call_State.COMPLETED,
    ]);
    const recording = await recordingOf(call.name);
    expect(recording?.state).toBe(Recording_State.SUCCEEDED);
    expect((await wavOf(recording!)).status).toBe(200);
  });

  it("a recording whose end's reply was lost keeps its audio, and is ready once", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 3 });
    serve({ "/start": xml('<Wait Seconds="600"/>') });
    const lostBefore = proxy.lost();
    // The recording's end (its state a bound parameter) commits; the COMMIT's reply is lost.
    proxy.loseReplyTo("SUCCEEDED", { at: "COMMIT" });
    const call = await create(project, from, to, "recording-end", {
      trigger: Trigger.ANSWER,
      recordingReadyUri: `${states.base}/ready`,
    });
    await harness.runToEnd(call.name);
    // Until its processing is over (the end made, sent again, settled): the row is SUCCEEDED before that.
    await harness.app.engine.idle();
    const recording = await recordingOf(call.name);
    expect(proxy.lost()).toBe(lostBefore + 1);
    expect(recording?.state).toBe(Recording_State.SUCCEEDED);
    // Its audio was stored, and is still there: the repeat took the end as done.
    const wav = await wavOf(recording!);
    expect(wav.status).toBe(200);
    expect((await wav.arrayBuffer()).byteLength).toBeGreaterThan(44);
    for (let i = 0; i < 750 && !states.requests.some((r) => r.path === "/ready"); i++) await sleep(20);
    await sleep(100);
    expect(states.requests.filter((r) => r.path === "/ready")).toHaveLength(1);
  });

  it("a recording whose end's reply was lost is transcribed once, by the transcription its end opened", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 4 });
    // Synthesized first, so the call's Say comes from the engine's cache and
    // takes no call time before it is heard (the harness moves call time on
    // while work is pending).
    await spokenSeconds("Wombat lighthouse");
    serve({ "/start": xml('<Say>Wombat lighthouse</Say><Wait Seconds="600"/>') });
    const lostBefore = proxy.lost();
    // The recording's end and its transcription commit together; the COMMIT's reply is lost.
    proxy.loseReplyTo("SUCCEEDED", { at: "COMMIT" });
    const call = await create(project, from, to, "recording-end-transcribed", {
      trigger: Trigger.ANSWER,
      recordingReadyUri: `${states.base}/ready-transcribed`,
      transcribe: TranscribeOption.DEFAULT,
      transcriptionReadyUri: `${states.base}/transcribed-once`,
    });
    await harness.runToEnd(call.name);
    await harness.app.engine.idle();
    expect(proxy.lost()).toBe(lostBefore + 1);
    expect((await recordingOf(call.name))?.state).toBe(Recording_State.SUCCEEDED);
    const { transcriptions } = await harness
      .client(Transcriptions)
      .listTranscriptions({ parent: call.name, view: TranscriptionView.FULL });
    expect(transcriptions.map((t) => t.state)).toEqual([Transcription_State.COMPLETED]);
    expect(transcriptions[0]?.utterances.map((u) => u.text)).toEqual(["Wombat lighthouse"]);
    const sent = (path: string) => states.requests.filter((r) => r.path === path);
    for (let i = 0; i < 750 && sent("/transcribed-once").length === 0; i++) await sleep(20);
    await sleep(100);
    expect(sent("/ready-transcribed")).toHaveLength(1);
    expect(sent("/transcribed-once")).toHaveLength(1);
  });

  it("an incoming call whose insert reply was lost is refused, and the call is ended, never answered", async () => {
    const { number } = await harness.single([`${handler.base}/start`]);
    serve({ "/start": xml("<Say>hello</Say>") });
    // A caller of this test's own: its number is a bound parameter of the insert.
    const caller = `+6149157${String(1000 + Math.floor(Math.random() * 9000))}`;
    const lostBefore = proxy.lost();
    proxy.loseReplyTo(caller, { at: "INSERT" });
    const err = await harness
      .client(SimulatorAdmin)
      .injectIncomingCall({ to: number, from: caller })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(err?.code).toBe(Code.Unavailable);
    expect(proxy.lost()).toBe(lostBefore + 1);

    const [row] = await direct.db.select().from(calls).where(eq(calls.from, caller));
    expect(row?.engineId).toBe(harness.app.engine.id);
    const ended = await eventually(
      () => rowOf(row!.id),
      (r) => r?.state === "FAILED",
    );
    expect(ended).toMatchObject({ state: "FAILED", errorCode: ENGINE_LOST, answerTime: null });
    await scheduler.advance(5);
    expect(handler.requests).toHaveLength(0);
  });

  it("a transcription whose end never reached the database is ended again, ready once", async () => {
    const { project, from } = await owner();
    // The callee hangs up 6 s after answering: the whole Say must be heard
    // before. Synthesized first, so the Say takes no call time before it is
    // heard (the harness moves call time on while work is pending: CI saw
    // the hang-up cut it to "Zanzibar quokka" when it was synthesized during
    // the call, with 4 s).
    const to = await route({ ringSeconds: 1, talkSeconds: 6 });
    await spokenSeconds("Zanzibar quokka marmalade");
    serve({ "/start": xml('<Say>Zanzibar quokka marmalade</Say><Wait Seconds="600"/>') });
    const lostBefore = proxy.lost();
    // The file's one transcription update: its text goes out with it (a connection prepares it once).
    proxy.loseReplyTo('update "transcriptions"', { before: true });
    const call = await create(project, from, to, "transcription-end", {
      trigger: Trigger.ANSWER,
      transcribe: TranscribeOption.DEFAULT,
      transcriptionReadyUri: `${states.base}/transcribed`,
    });
    await harness.runToEnd(call.name);
    await harness.app.engine.idle();
    expect(proxy.lost()).toBe(lostBefore + 1);
    const [transcription] = (
      await harness
        .client(Transcriptions)
        .listTranscriptions({ parent: call.name, view: TranscriptionView.FULL })
    ).transcriptions;
    expect(transcription?.state).toBe(Transcription_State.COMPLETED);
    expect(transcription?.utterances.map((u) => u.text)).toEqual(["Zanzibar quokka marmalade"]);
    for (let i = 0; i < 750 && !states.requests.some((r) => r.path === "/transcribed"); i++) await sleep(20);
    await sleep(100);
    expect(states.requests.filter((r) => r.path === "/transcribed")).toHaveLength(1);
  });

  it("after a heartbeat that failed, a new call registers its engine again before carrying its id", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 5 });
    serve({ "/start": xml('<Wait Seconds="600"/>') });
    const engine = harness.app.engine;
    // A heartbeat finds the database out of reach; meanwhile the others take the engine for dead.
    proxy.refuse(true);
    await expect(engine.liveness.beat()).rejects.toBeDefined();
    await direct.db.delete(callEngines).where(eq(callEngines.id, engine.id));
    proxy.refuse(false);

    const call = await create(project, from, to, "after-a-failed-heartbeat");
    expect((await direct.db.select().from(callEngines)).map((e) => e.id)).toContain(engine.id);
    // So another engine's sweep leaves the new call alone.
    const other = createCallEngine(
      { config: testConfig(), clock: scheduler.clock, log: createLogger("silent"), db: direct.db },
      { scheduler },
    );
    await other.begin();
    await other.stop();
    const row = await rowOf(call.name.split("/")[3]!);
    expect(row?.state).not.toBe("FAILED");
    expect(row?.engineId).toBe(engine.id);
  });
});
