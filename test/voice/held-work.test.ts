/**
 * PENDING recordings and transcriptions that no engine holds
 * (src/work-holder.ts, the sweep in src/voice/calls/liveness.ts):
 *
 * - a dead (or stopped) engine's PENDING recordings end FAILED TIMEOUT and
 *   its PENDING transcriptions FAILED at another engine's sweep, whatever
 *   became of their calls, each with its webhook queued once; a recording's
 *   transcription is then made (FAILED) by the engine that swept it;
 * - a live engine's sweep leaves what it holds alone, and ends what it let
 *   go unfinished: a recording whose insert's reply was lost (it committed);
 * - a recording's end is tried again for as long as its engine runs, past
 *   the bound that holds once the engine has stopped; given up, it is the
 *   sweep's.
 *
 * Real parts: call engines (createCallEngine) on the test database, the
 * recordings domain they share, PostgreSQL behind a TCP proxy for the faults
 * (test/support/pg-proxy.ts). Rows of a crashed process are written as it
 * would have left them.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { and, eq, like, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newResourceId } from "../../src/api/ids.js";
import type { Db } from "../../src/db/client.js";
import { type Database, openPostgres } from "../../src/db/client.js";
import { recordings, transcriptions, webhookEvents } from "../../src/db/schema/index.js";
import { createLogger } from "../../src/log.js";
import type { NewRecording, Recording, RecordingsDomain } from "../../src/recordings/domain.js";
import { createRecordings } from "../../src/recordings/index.js";
import { type AudioProcessor, defaultProcessor } from "../../src/recordings/processing.js";
import { createCallEngine } from "../../src/services.js";
import type { CallEngine } from "../../src/voice/calls/engine.js";
import { WorkHolder } from "../../src/work-holder.js";
import { newProject, testConfig } from "../support/app.js";
import { sleep } from "../support/calls.js";
import { TestClock } from "../support/clock.js";
import { describePostgres, postgresTestBackend, testDatabases, useTestDatabase } from "../support/db.js";
import { type PgProxy, startPgProxy } from "../support/pg-proxy.js";
import { ManualScheduler } from "../support/scheduler.js";

const log = createLogger("silent");

/** One second of a 440 Hz tone at 8 kHz, mono. */
function tone(): Int16Array[] {
  const samples = new Int16Array(8000);
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000));
  return [samples];
}

function setup(getDb: () => Db, processor?: AudioProcessor) {
  const scheduler = new ManualScheduler(new TestClock("2026-03-01T00:00:00.000Z"));
  let blobDir = "";
  const engines: CallEngine[] = [];
  beforeAll(async () => {
    blobDir = await mkdtemp(join(tmpdir(), "switchboard-held-work-"));
  });
  afterAll(async () => {
    for (const e of engines) await e.liveness.stop();
    if (blobDir !== "") await rm(blobDir, { recursive: true, force: true });
  });
  const config = () => testConfig({ ENGINE_HEARTBEAT_SECONDS: "0", BLOB_DIR: blobDir });
  const domain = (): RecordingsDomain =>
    createRecordings({
      config: config(),
      clock: scheduler.clock,
      log,
      db: getDb(),
      ...(processor === undefined ? {} : { processor }),
    });
  /** A registered engine with recordings of its own. */
  const engine = async (): Promise<CallEngine> => {
    const e = createCallEngine(
      { config: config(), clock: scheduler.clock, log, db: getDb(), recordings: domain() },
      { scheduler },
    );
    engines.push(e);
    await e.begin();
    return e;
  };
  return { engine, domain };
}

/** The webhooks queued of `type` whose body names `name`. */
async function webhooksNaming(db: Db, type: string, name: string) {
  return db
    .select()
    .from(webhookEvents)
    .where(and(eq(webhookEvents.eventType, type), like(webhookEvents.body, `%"${name}"%`)));
}

/** A PENDING recording `holder` holds, on a call of its own (no call row: only the engine matters). */
function createHeld(
  recs: RecordingsDomain,
  holder: WorkHolder,
  projectId: string,
  extra: Partial<NewRecording> = {},
): Promise<Recording> {
  return recs.createPending(
    {
      projectId,
      callId: newResourceId(),
      source: "CALL_RECORDING",
      postProcessing: [],
      readyUri: "",
      channelCount: 1,
      ...extra,
    },
    holder,
  );
}

describe.each(testDatabases())("recordings and transcriptions no engine holds, on $name", (backend) => {
  const database = useTestDatabase(backend);
  const { engine } = setup(() => database.db);

  const recordingRow = async (id: string) =>
    (await database.db.select().from(recordings).where(eq(recordings.id, id)))[0];

  it("a stopped engine's PENDING recording ends FAILED TIMEOUT at another's sweep, its webhook and transcription once", async () => {
    const projectId = (await newProject(database.db)).split("/")[1]!;
    const a = await engine();
    const b = await engine();
    // Recorded on a call that has ended already (no call row at all): only the engine matters.
    const pending = await createHeld(a.options.recordings, a.holder, projectId, {
      readyUri: "http://127.0.0.1:9/ready",
      transcribe: true,
      transcriptionReadyUri: "http://127.0.0.1:9/transcribed",
    });
    expect((await recordingRow(pending.id))?.engineId).toBe(a.id);

    // a lives: b's sweep leaves it; a holds it: a's own sweep leaves it.
    await b.liveness.sweep();
    await a.liveness.sweep();
    expect((await recordingRow(pending.id))?.state).toBe("PENDING");

    // a stops without finishing it (its row goes, as it does after 3 silent heartbeats).
    await a.liveness.stop();
    await b.liveness.sweep();
    expect(await recordingRow(pending.id)).toMatchObject({ state: "FAILED", errorCode: "TIMEOUT" });
    const [transcription, ...more] = await database.db
      .select()
      .from(transcriptions)
      .where(eq(transcriptions.recordingId, pending.id));
    expect(more).toHaveLength(0);
    // Written FAILED with the recording's end: no engine ever holds it.
    expect(transcription).toMatchObject({ state: "FAILED", engineId: null });

    // A second sweep changes nothing: one webhook each.
    await b.liveness.sweep();
    expect(await webhooksNaming(database.db, "RECORDING_READY", pending.name)).toHaveLength(1);
    expect(
      await database.db.select().from(transcriptions).where(eq(transcriptions.recordingId, pending.id)),
    ).toHaveLength(1);
    const name = `projects/${projectId}/calls/${pending.callId}/transcriptions/${transcription!.id}`;
    expect(await webhooksNaming(database.db, "TRANSCRIPTION_READY", name)).toHaveLength(1);
  });

  it("a crashed process's PENDING recording and transcription end FAILED; rows no engine ever claimed are left", async () => {
    const projectId = (await newProject(database.db)).split("/")[1]!;
    const b = await engine();
    const callId = newResourceId();
    const crashed = `engine-${newResourceId()}`;
    const recording = (id: string, engineId: string | null) => ({
      id,
      projectId,
      callId,
      source: "RECORD_ACTION" as const,
      state: "PENDING" as const,
      channelCount: 1,
      readyUri: "http://127.0.0.1:9/ready",
      createTime: new Date(),
      engineId,
    });
    const [lost, unclaimed] = [newResourceId(), newResourceId()];
    await database.db.insert(recordings).values([recording(lost, crashed), recording(unclaimed, null)]);
    const transcriptionId = newResourceId();
    await database.db.insert(transcriptions).values({
      id: transcriptionId,
      projectId,
      callId,
      recordingId: newResourceId(),
      state: "PENDING",
      channelCount: 1,
      readyUri: "http://127.0.0.1:9/transcribed",
      createTime: new Date(),
      updateTime: new Date(),
      engineId: crashed,
    });

    await b.liveness.sweep();
    expect(await recordingRow(lost)).toMatchObject({ state: "FAILED", errorCode: "TIMEOUT" });
    expect(
      await webhooksNaming(
        database.db,
        "RECORDING_READY",
        `projects/${projectId}/calls/${callId}/recordings/${lost}`,
      ),
    ).toHaveLength(1);
    const [t] = await database.db.select().from(transcriptions).where(eq(transcriptions.id, transcriptionId));
    expect(t?.state).toBe("FAILED");
    expect(
      await webhooksNaming(
        database.db,
        "TRANSCRIPTION_READY",
        `projects/${projectId}/calls/${callId}/transcriptions/${transcriptionId}`,
      ),
    ).toHaveLength(1);
    // Written before engines stamped their rows: no engine is known to have lost it.
    expect((await recordingRow(unclaimed))?.state).toBe("PENDING");
  });

  it("a recording ends with its transcription or not at all: while the transcription cannot be written, it stays PENDING", async () => {
    const projectId = (await newProject(database.db)).split("/")[1]!;
    const a = await engine();
    const pending = await createHeld(a.options.recordings, a.holder, projectId, {
      readyUri: "http://127.0.0.1:9/ready",
      transcribe: true,
      transcriptionReadyUri: "http://127.0.0.1:9/transcribed",
    });
    // This recording's transcription cannot be written: a fault the driver takes as transient
    // (SQLSTATE 53400, the server out of resources), so its end is tried again.
    const refuse = `refuse_${pending.id}`;
    await database.db.execute(
      sql.raw(`create function ${refuse}() returns trigger language plpgsql as $$
        begin
          if new.recording_id = '${pending.id}' then
            raise exception 'refused by the test' using errcode = '53400';
          end if;
          return new;
        end $$`),
    );
    await database.db.execute(
      sql.raw(`create trigger ${refuse} before insert on transcriptions
        for each row execute function ${refuse}()`),
    );
    const completing = a.options.recordings.complete(
      pending.id,
      {
        channels: tone(),
        sampleRate: 8000,
        startTime: new Date(),
        speech: [{ channel: 0, offsetMs: 0, durationMs: 1000, text: "quokka" }],
      },
      a.holder,
    );
    try {
      await sleep(600);
      // Not ended without it: a crash now would leave a PENDING recording, which the sweep ends.
      expect((await recordingRow(pending.id))?.state).toBe("PENDING");
      expect(await webhooksNaming(database.db, "RECORDING_READY", pending.name)).toHaveLength(0);
      expect(a.holder.holds(pending.id)).toBe(true);
    } finally {
      await database.db.execute(sql.raw(`drop trigger ${refuse} on transcriptions`));
      await database.db.execute(sql.raw(`drop function ${refuse}()`));
    }
    expect((await completing).state).toBe("SUCCEEDED");
    const made = await database.db
      .select()
      .from(transcriptions)
      .where(eq(transcriptions.recordingId, pending.id));
    expect(made).toMatchObject([{ state: "COMPLETED", engineId: a.id }]);
    expect(made[0]!.utterances.map((u) => u.text)).toEqual(["quokka"]);
    expect(await webhooksNaming(database.db, "RECORDING_READY", pending.name)).toHaveLength(1);
    const name = `projects/${projectId}/calls/${pending.callId}/transcriptions/${made[0]!.id}`;
    expect(await webhooksNaming(database.db, "TRANSCRIPTION_READY", name)).toHaveLength(1);
    expect(a.holder.holds(pending.id) || a.holder.holds(made[0]!.id)).toBe(false);
  });

  it("two engines sweeping at once end a lost recording once: one webhook, one transcription", async () => {
    const projectId = (await newProject(database.db)).split("/")[1]!;
    const [a, b, c] = [await engine(), await engine(), await engine()];
    const pending = await createHeld(a.options.recordings, a.holder, projectId, {
      readyUri: "http://127.0.0.1:9/ready",
      transcribe: true,
    });
    await a.liveness.stop();
    await Promise.all([b.liveness.sweep(), c.liveness.sweep()]);
    expect((await recordingRow(pending.id))?.state).toBe("FAILED");
    expect(await webhooksNaming(database.db, "RECORDING_READY", pending.name)).toHaveLength(1);
    const made = await database.db
      .select()
      .from(transcriptions)
      .where(eq(transcriptions.recordingId, pending.id));
    expect(made.map((t) => t.state)).toEqual(["FAILED"]);
  });

  it("an engine's own sweep ends the recordings it let go, and leaves the ones it holds", async () => {
    const projectId = (await newProject(database.db)).split("/")[1]!;
    const a = await engine();
    const create = () => createHeld(a.options.recordings, a.holder, projectId);
    const [held, letGo] = [await create(), await create()];
    a.holder.release(letGo.id);
    await a.liveness.sweep();
    expect((await recordingRow(held.id))?.state).toBe("PENDING");
    expect(await recordingRow(letGo.id)).toMatchObject({ state: "FAILED", errorCode: "TIMEOUT" });
  });
});

const postgresBackend = postgresTestBackend();

describePostgres("a recording's end over a failing connection", () => {
  const direct = useTestDatabase(postgresBackend!);
  let proxy: PgProxy;
  let proxied: Database;
  /** What the next processing does first (the test's fault). */
  let beforeProcessing: () => void = () => {};
  beforeAll(async () => {
    proxy = await startPgProxy(direct.url!);
    // A statement meeting the outage fails within 0.3 s (a server that closes connections: startup-close.test.ts).
    const url = new URL(proxy.url);
    url.searchParams.set("connect_timeout", "0.3");
    proxied = openPostgres(url.toString());
  });
  afterAll(async () => {
    proxy?.refuse(false);
    await proxied?.close();
    await proxy?.close();
  });
  const { engine, domain } = setup(
    () => proxied.db,
    (audio) => {
      beforeProcessing();
      beforeProcessing = () => {};
      return defaultProcessor(audio);
    },
  );
  const recordingRow = async (id: string) =>
    (await direct.db.select().from(recordings).where(eq(recordings.id, id)))[0];

  /** Cuts the database off for `ms` once processing starts: the end's write meets it. */
  const outageDuringProcessing = (ms: number) => {
    beforeProcessing = () => {
      proxy.refuse(true);
      setTimeout(() => proxy.refuse(false), ms).unref();
    };
  };

  const newPending = async (recs: RecordingsDomain, holder: WorkHolder) =>
    createHeld(recs, holder, (await newProject(direct.db)).split("/")[1]!);
  const audio = () => ({ channels: tone(), sampleRate: 8000, startTime: new Date() });

  it("is tried again for as long as the engine runs, past the bound of a stopped one", async () => {
    const recs = domain();
    // Once stopped, 200 ms; the outage lasts 1.5 s.
    const holder = new WorkHolder(`engine-${newResourceId()}`, 200);
    const pending = await newPending(recs, holder);
    outageDuringProcessing(1500);
    const done = await recs.complete(pending.id, audio(), holder);
    expect(done.state).toBe("SUCCEEDED");
    expect((await recordingRow(pending.id))?.state).toBe("SUCCEEDED");
    expect(holder.holds(pending.id)).toBe(false);
  });

  it("given up once its engine stopped, the recording is the sweep's", async () => {
    const recs = domain();
    const holder = new WorkHolder(`engine-${newResourceId()}`, 200);
    const pending = await newPending(recs, holder);
    holder.stop();
    outageDuringProcessing(1500);
    await expect(recs.complete(pending.id, audio(), holder)).rejects.toThrow();
    expect(holder.holds(pending.id)).toBe(false);
    expect((await recordingRow(pending.id))?.state).toBe("PENDING");
    await sleep(1500);
    // Its engine (never registered here, as after its stop) is not alive: any engine's sweep ends it.
    const b = await engine();
    await b.liveness.sweep();
    expect(await recordingRow(pending.id)).toMatchObject({ state: "FAILED", errorCode: "TIMEOUT" });
  });

  it("a recording whose insert's reply was lost is ended by its engine's next sweep", async () => {
    const a = await engine();
    const readyUri = `http://127.0.0.1:9/ready-${newResourceId()}`;
    const projectId = (await newProject(direct.db)).split("/")[1]!;
    const lostBefore = proxy.lost();
    proxy.loseReplyTo(readyUri, { at: "INSERT" });
    await expect(createHeld(a.options.recordings, a.holder, projectId, { readyUri })).rejects.toThrow();
    expect(proxy.lost()).toBe(lostBefore + 1);
    const [row] = await direct.db.select().from(recordings).where(eq(recordings.readyUri, readyUri));
    expect(row).toMatchObject({ state: "PENDING", engineId: a.id });
    await a.liveness.sweep();
    expect(await recordingRow(row!.id)).toMatchObject({ state: "FAILED", errorCode: "TIMEOUT" });
    expect(
      await webhooksNaming(
        direct.db,
        "RECORDING_READY",
        `projects/${projectId}/calls/${row!.callId}/recordings/${row!.id}`,
      ),
    ).toHaveLength(1);
  });
});
