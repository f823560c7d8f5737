/**
 * Recordings of calls that do not succeed, and shutdown: each test builds
 * its own app (build()) on 127.0.0.1 with a ManualScheduler, so that its
 * configuration can make processing fail for real — build() takes no
 * processor or blob store (BuildOptions has neither), so FAILED TIMEOUT
 * comes from RECORDING_PROCESSING_TIMEOUT_MS=1 (a real deadline overrun)
 * and FAILED INTERNAL_ERROR from a BLOB_DIR that cannot be created (a
 * regular file in its path). Shutdown: app.close() while a call is being
 * recorded leaves every recording terminal by the time it resolves (read
 * from the database afterwards).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallRecordingConfig_CallRecordingTrigger as Trigger } from "../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import { type Call, Call_State, Calls } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import {
  type Recording,
  Recording_ErrorCode,
  Recording_Source,
  Recording_State,
  Recordings,
} from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import { SimulatorAdmin } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { calls, recordings } from "../../src/db/schema/index.js";
import { type App, build } from "../../src/server.js";
import { addBlock, blockAllocator, numberingClients, provision } from "../numbering/support.js";
import { bearer, createTestClient, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { sleep, T0, TERMINAL, xml } from "../support/calls.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { ManualScheduler } from "../support/scheduler.js";

interface Running {
  app: App;
  scheduler: ManualScheduler;
  calls: Client<typeof Calls>;
  recordings: Client<typeof Recordings>;
}

describe.each(testDatabases())("recordings of calls: failures and shutdown on $name", (backend) => {
  const database = useTestDatabase(backend);
  const nextBlock = blockAllocator();
  let tmp: string;
  let handler: Receiver;
  let destination = 0;

  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), "switchboard-call-recordings-lifecycle-"));
    handler = await startReceiver();
  });
  afterAll(async () => {
    await handler?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  async function start(env: NodeJS.ProcessEnv): Promise<Running> {
    const scheduler = new ManualScheduler(new TestClock(T0));
    const app = await build({
      db: database.db,
      clock: scheduler.clock,
      scheduler,
      config: testConfig({
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
        WEBHOOKS_TIMEOUT_MS: "2000",
        WEBHOOKS_POLL_INTERVAL_MS: "20",
        ...env,
      }),
    });
    const address = await app.listen(0, "127.0.0.1");
    const transport = createConnectTransport({
      baseUrl: `http://127.0.0.1:${address.port}`,
      httpVersion: "1.1",
      interceptors: [bearer(TEST_OPERATOR_TOKEN)],
    });
    return {
      app,
      scheduler,
      calls: createClient(Calls, transport),
      recordings: createClient(Recordings, transport),
    };
  }

  /** A project owning a number, a speaking destination (30 s), the markup served, and the call created. */
  async function call(r: Running, markup: string, extra = {}): Promise<{ project: string; name: string }> {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, r.scheduler.clock);
    const from = await addBlock(c, nextBlock(), 10);
    await provision(c, project, from);
    destination++;
    const to = `+614915704${String(destination).padStart(2, "0")}`;
    await createTestClient(SimulatorAdmin, database.db, r.scheduler.clock).createRoute({
      route: { prefix: to, ringSeconds: 1, talkSeconds: 30 },
    });
    handler.handle((_req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(xml(markup));
    });
    const created = await r.calls.createCall({
      parent: project,
      call: { to, from, options: { handlerUris: [`${handler.base}/start`], ...extra } },
    });
    return { project, name: created.name };
  }

  async function runToEnd(r: Running, name: string): Promise<Call> {
    for (let t = 0; t < 6000; t++) {
      const got = await r.calls.getCall({ name });
      if (TERMINAL.has(got.state) && r.app.engine.activeCount === 0) {
        await r.app.engine.idle();
        return got;
      }
      await r.scheduler.advance(0.1);
      await sleep(1);
    }
    throw new Error(`call ${name} did not end`);
  }

  /** The recordings of a call, by source, polled (FULL view) until none is PENDING. */
  async function settledOf(r: Running, name: string): Promise<Map<Recording_Source, Recording>> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const list = (await r.recordings.listRecordings({ parent: name, pageSize: 10 })).recordings;
      if (list.length > 0 && list.every((x) => x.state !== Recording_State.PENDING)) {
        return new Map(list.map((x) => [x.source, x]));
      }
      if (Date.now() > deadline) throw new Error(`recordings of ${name} stayed PENDING`);
      await sleep(5);
    }
  }

  const BOTH_SOURCES = '<Record MaxDurationSeconds="20" PlayBeep="false"/><Say>Goodbye</Say>';

  it("FAILED TIMEOUT for both sources when processing overruns RECORDING_PROCESSING_TIMEOUT_MS", async () => {
    const r = await start({ BLOB_DIR: join(tmp, "timeout"), RECORDING_PROCESSING_TIMEOUT_MS: "1" });
    try {
      const { name } = await call(r, BOTH_SOURCES, { recording: { trigger: Trigger.ANSWER } });
      expect((await runToEnd(r, name)).state).toBe(Call_State.COMPLETED);
      const bySource = await settledOf(r, name);
      expect([...bySource.keys()].sort()).toEqual([
        Recording_Source.RECORD_ACTION,
        Recording_Source.CALL_RECORDING,
      ]);
      for (const recording of bySource.values()) {
        expect(recording).toMatchObject({
          state: Recording_State.FAILED,
          errorCode: Recording_ErrorCode.TIMEOUT,
          audio: [],
        });
        expect(recording.duration).toBeUndefined();
      }
    } finally {
      await r.app.close();
    }
  });

  it("FAILED INTERNAL_ERROR for both sources when the audio cannot be stored", async () => {
    const blocker = join(tmp, "not-a-directory");
    await writeFile(blocker, "a regular file where the blob directory should be");
    const r = await start({ BLOB_DIR: join(blocker, "blobs") });
    try {
      const { name } = await call(r, BOTH_SOURCES, { recording: { trigger: Trigger.ANSWER } });
      expect((await runToEnd(r, name)).state).toBe(Call_State.COMPLETED);
      const bySource = await settledOf(r, name);
      expect(bySource.size).toBe(2);
      for (const recording of bySource.values()) {
        expect(recording).toMatchObject({
          state: Recording_State.FAILED,
          errorCode: Recording_ErrorCode.INTERNAL_ERROR,
          audio: [],
        });
      }
    } finally {
      await r.app.close();
    }
  });

  it("app.close() while a call is recorded: every recording is terminal when close() resolves", async () => {
    const r = await start({ BLOB_DIR: join(tmp, "shutdown") });
    let closed = false;
    try {
      const { name } = await call(r, '<Say>Please speak</Say><Record MaxDurationSeconds="60"/>', {
        recording: { trigger: Trigger.ANSWER },
      });
      const callId = name.split("/")[3]!;
      const rowsOf = () => database.db.select().from(recordings).where(eq(recordings.callId, callId));
      // Until both recordings (the call recording and the Record's) are PENDING, then 3 s more.
      for (let i = 0; i < 600 && (await rowsOf()).length < 2; i++) {
        await r.scheduler.advance(0.1);
        await sleep(1);
      }
      const pending = await rowsOf();
      expect(pending.map((x) => x.state)).toEqual(["PENDING", "PENDING"]);
      await r.scheduler.advance(3);
      await r.app.close();
      closed = true;

      const [callRow] = await database.db.select().from(calls).where(eq(calls.id, callId));
      expect(callRow).toMatchObject({ state: "FAILED", errorCode: "SERVICE_SHUTDOWN" });
      const rows = await rowsOf();
      expect(rows.map((x) => [x.source, x.state]).sort()).toEqual([
        ["CALL_RECORDING", "SUCCEEDED"],
        ["RECORD_ACTION", "SUCCEEDED"],
      ]);
      const callRecording = rows.find((x) => x.source === "CALL_RECORDING")!;
      expect(callRecording.durationMs).toBe(callRow!.answerDurationMs);
      expect(callRecording.renditions).toHaveLength(2);
      const recordAction = rows.find((x) => x.source === "RECORD_ACTION")!;
      expect(recordAction.durationMs).toBeGreaterThanOrEqual(3000);
      expect(recordAction.startTime!.getTime() + recordAction.durationMs!).toBe(callRow!.endTime!.getTime());
    } finally {
      if (!closed) await r.app.close();
    }
  });
});
