/**
 * Calls whose engine died: an engine that stops heartbeating (its
 * `call_engines` row gone or stale) loses its calls; the next engine to
 * start (or heartbeat) ends them FAILED ENGINE_LOST with their state
 * update, and fails their PENDING recordings with TIMEOUT. Calls of live
 * engines are left alone. The real app (build()) drives the calls; a
 * second engine on the same database sweeps.
 */
import { fromJsonString } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallRecordingConfig_CallRecordingTrigger as Trigger } from "../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import { type Call, Call_State, CallSchema, Calls } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import {
  Recording_ErrorCode,
  Recording_State,
  Recordings,
} from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import { SimulatorAdmin } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { callEngines, recordings, webhookEvents } from "../../src/db/schema/index.js";
import { createLogger } from "../../src/log.js";
import { createRecordings } from "../../src/recordings/index.js";
import { type App, build } from "../../src/server.js";
import { createCallEngine } from "../../src/services.js";
import { ENGINE_LOST } from "../../src/voice/calls/liveness.js";
import { addBlock, blockAllocator, numberingClients, provision } from "../numbering/support.js";
import { bearer, createTestClient, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { sleep, xml } from "../support/calls.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { ManualScheduler } from "../support/scheduler.js";

describe.each(testDatabases())("engine liveness on $name", (backend) => {
  const database = useTestDatabase(backend);
  const scheduler = new ManualScheduler(new TestClock("2026-03-01T00:00:00.000Z"));
  const nextBlock = blockAllocator();
  const config = testConfig({ WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true", ENGINE_HEARTBEAT_SECONDS: "0" });
  let app: App;
  let calls: Client<typeof Calls>;
  let recordingsClient: Client<typeof Recordings>;
  let handler: Receiver;

  beforeAll(async () => {
    app = await build({ db: database.db, clock: scheduler.clock, scheduler, config });
    const address = await app.listen(0, "127.0.0.1");
    const transport = createConnectTransport({
      baseUrl: `http://127.0.0.1:${address.port}`,
      httpVersion: "1.1",
      interceptors: [bearer(TEST_OPERATOR_TOKEN)],
    });
    calls = createClient(Calls, transport);
    recordingsClient = createClient(Recordings, transport);
    handler = await startReceiver();
    handler.handle((_req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(xml('<Wait Seconds="600"/>'));
    });
  });
  afterAll(async () => {
    await app?.close();
    await handler?.close();
  });

  async function inProgressCall(project: string, from: string, to: string, recorded: boolean): Promise<Call> {
    await createTestClient(SimulatorAdmin, database.db, scheduler.clock).createRoute({
      route: { prefix: to, ringSeconds: 1, talkSeconds: 3600 },
    });
    const created = await calls.createCall({
      parent: project,
      call: {
        to,
        from,
        options: {
          handlerUris: [`${handler.base}/start`],
          stateUpdateUri: `${handler.base}/state`,
          ...(recorded ? { recording: { trigger: Trigger.ANSWER } } : {}),
        },
      },
    });
    for (let i = 0; i < 100; i++) {
      await scheduler.advance(0.5);
      const call = await calls.getCall({ name: created.name });
      if (call.state === Call_State.IN_PROGRESS) return call;
      await sleep(2);
    }
    throw new Error("the call did not get answered");
  }

  it("a dead engine's calls end FAILED ENGINE_LOST, their recordings FAILED TIMEOUT; live ones are untouched", async () => {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, scheduler.clock);
    const from = await addBlock(c, nextBlock(), 10);
    await provision(c, project, from);
    const lost = await inProgressCall(project, from, "+61491579901", true);
    const [pending] = await database.db
      .select()
      .from(recordings)
      .where(eq(recordings.callId, lost.name.split("/")[3]!));
    expect(pending?.state).toBe("PENDING");

    // A second engine, alive, on the same database sweeps: nothing is lost while the app's engine lives.
    const other = createCallEngine(
      {
        config,
        clock: scheduler.clock,
        log: createLogger("silent"),
        db: database.db,
        recordings: createRecordings({
          config,
          clock: scheduler.clock,
          log: createLogger("silent"),
          db: database.db,
        }),
      },
      { scheduler },
    );
    await other.begin();
    expect((await calls.getCall({ name: lost.name })).state).toBe(Call_State.IN_PROGRESS);

    // The app's engine "dies": it stops heartbeating and its row is gone (as after 3 silent intervals).
    await app.engine.liveness.stop();
    const swept = await other.liveness.sweep();
    expect(swept.map((r) => r.id)).toEqual([lost.name.split("/")[3]]);

    const ended = await calls.getCall({ name: lost.name });
    expect(ended.state).toBe(Call_State.FAILED);
    expect(ended.errorCode).toBe(ENGINE_LOST);
    expect(ended.endTime).toBeDefined();
    const update = (
      await database.db
        .select()
        .from(webhookEvents)
        .where(
          and(eq(webhookEvents.eventType, "CALL_STATE_UPDATE"), eq(webhookEvents.orderingKey, lost.name)),
        )
    )
      .map((e) => fromJsonString(CallSchema, e.body))
      .find((call) => call.state === Call_State.FAILED);
    expect(update?.errorCode).toBe(ENGINE_LOST);

    const recording = await recordingsClient.getRecording({ name: `${lost.name}/recordings/${pending!.id}` });
    expect(recording.state).toBe(Recording_State.FAILED);
    expect(recording.errorCode).toBe(Recording_ErrorCode.TIMEOUT);

    // A second sweep finds nothing; the live engine is still registered, the dead one is not.
    expect(await other.liveness.sweep()).toEqual([]);
    const engines = (await database.db.select().from(callEngines)).map((e) => e.id);
    expect(engines).toContain(other.id);
    expect(engines).not.toContain(app.engine.id);
    await other.stop();
  });

  it("an engine taken for dead hangs up what it still drives once its heartbeat finds its row swept", async () => {
    // The app's engine registers again (the test above unregistered it) and drops what that test left.
    await app.engine.liveness.beat();
    for (let i = 0; i < 200 && app.engine.activeCount > 0; i++) await sleep(5);
    expect(app.engine.activeCount).toBe(0);

    const project = await newProject(database.db);
    const c = numberingClients(database.db, scheduler.clock);
    const from = await addBlock(c, nextBlock(), 10);
    await provision(c, project, from);
    const call = await inProgressCall(project, from, "+61491579902", false);
    expect(app.engine.activeCount).toBe(1);

    // Cut off from the database for 3 intervals: another engine takes it for dead and ends its call.
    const other = createCallEngine(
      { config, clock: scheduler.clock, log: createLogger("silent"), db: database.db },
      { scheduler },
    );
    await other.begin();
    await database.db.delete(callEngines).where(eq(callEngines.id, app.engine.id));
    expect((await other.liveness.sweep()).map((r) => r.id)).toEqual([call.name.split("/")[3]]);
    const swept = await calls.getCall({ name: call.name });
    expect(swept).toMatchObject({ state: Call_State.FAILED, errorCode: ENGINE_LOST });
    // Its engine still drives the call: the leg is up, the markup waits.
    expect(app.engine.activeCount).toBe(1);

    // Back, its heartbeat finds its row gone: it registers again and hangs up.
    await app.engine.liveness.beat();
    for (let i = 0; i < 200 && app.engine.activeCount > 0; i++) await sleep(5);
    expect(app.engine.activeCount).toBe(0);
    expect((await database.db.select().from(callEngines)).map((e) => e.id)).toContain(app.engine.id);
    // The row keeps what the sweep wrote; one FAILED state update, the sweep's.
    expect(await calls.getCall({ name: call.name })).toEqual(swept);
    const failed = (
      await database.db
        .select()
        .from(webhookEvents)
        .where(
          and(eq(webhookEvents.eventType, "CALL_STATE_UPDATE"), eq(webhookEvents.orderingKey, call.name)),
        )
    ).filter((e) => fromJsonString(CallSchema, e.body).state === Call_State.FAILED);
    expect(failed).toHaveLength(1);
    await other.stop();
  });

  it("an engine whose heartbeat is older than 3 intervals is dead; a fresh one is not", async () => {
    const now = new Date();
    await database.db.insert(callEngines).values([
      { id: "engine-stale", startTime: now, heartbeatTime: new Date(now.getTime() - 31_000) },
      { id: "engine-fresh", startTime: now, heartbeatTime: new Date(now.getTime() - 29_000) },
    ]);
    const sweeper = createCallEngine(
      {
        config: testConfig({ ENGINE_HEARTBEAT_SECONDS: "10" }),
        clock: scheduler.clock,
        log: createLogger("silent"),
        db: database.db,
      },
      { scheduler },
    );
    await sweeper.begin();
    const engines = (await database.db.select().from(callEngines)).map((e) => e.id);
    expect(engines).toContain("engine-fresh");
    expect(engines).not.toContain("engine-stale");
    await sweeper.stop();
    await database.db.delete(callEngines).where(eq(callEngines.id, "engine-fresh"));
  });
});
