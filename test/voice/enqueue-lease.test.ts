/**
 * A call's state updates enqueued leased to the process's own worker
 * (src/events/worker.ts EnqueueLease, src/voice/calls/writes.ts): when
 * nothing of the call's key is pending, the transition's statement writes
 * its state update already leased to the worker, and the worker delivers
 * it from memory, with no claim and no lease write. Behind a pending event
 * of its key the update goes free, and the key's order holds (the
 * hand-over delivers it). A worker that does not run or has no room grants
 * no lease. A transition whose reply was lost may have committed its update
 * leased: the worker takes it back by its lease and delivers it once. What
 * a worker that died held leased goes out through another worker once the
 * leases expire, in the call's order.
 *
 * Real parts: the database (both backends; the lost reply on PostgreSQL
 * behind a TCP proxy), the engine's own write, a worker, a real receiver.
 */
import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Database, type Db, openPostgres } from "../../src/db/client.js";
import { type CallRow, calls, webhookEvents } from "../../src/db/schema/index.js";
import { enqueueWebhook } from "../../src/events/outbox.js";
import { WebhookWorker } from "../../src/events/worker.js";
import { createLogger } from "../../src/log.js";
import { createCallEngine } from "../../src/services.js";
import type { CallEngine } from "../../src/voice/calls/engine.js";
import { writeTransition } from "../../src/voice/calls/writes.js";
import { newProject, testConfig } from "../support/app.js";
import { sleep } from "../support/calls.js";
import { TestClock } from "../support/clock.js";
import { describePostgres, postgresTestBackend, testDatabases, useTestDatabase } from "../support/db.js";
import { type PgProxy, startPgProxy } from "../support/pg-proxy.js";
import { type Receiver, startReceiver } from "../support/receiver.js";

const config = (batchSize = 10) =>
  testConfig({
    WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
    // No poll during a test: what is delivered was taken from memory, a kick's claim or a hand-over.
    WEBHOOKS_POLL_INTERVAL_MS: "600000",
    WEBHOOKS_BATCH_SIZE: String(batchSize),
  });

/** A started worker (unless `running` is false) and an engine whose state updates are leased to it, on `db`. */
function workerAndEngine(
  db: Db,
  clock: TestClock,
  batchSize?: number,
  running = true,
): { worker: WebhookWorker; engine: CallEngine } {
  const log = createLogger("silent");
  const worker = new WebhookWorker({ db, clock, config: config(batchSize).webhooks, log });
  if (running) worker.start();
  const engine = createCallEngine({
    config: config(batchSize),
    clock,
    log,
    db,
    kickWebhooks: () => worker.kick(),
    webhookLeases: worker,
  });
  return { worker, engine };
}

/** A QUEUED outgoing call of `project` whose state updates go to `uri`. */
async function newCall(db: Db, project: string, uri: string): Promise<CallRow> {
  const [row] = await db
    .insert(calls)
    .values({
      id: `c-${randomBytes(6).toString("hex")}`,
      projectId: project.split("/")[1]!,
      to: "+61491570101",
      from: "+61491570102",
      state: "QUEUED",
      direction: "OUTGOING",
      transport: "PSTN",
      createMethod: "API",
      handlerUris: [],
      stateUpdateUri: uri,
      timeoutSeconds: 30,
      createTime: new Date(),
    })
    .returning();
  return row!;
}

/** Waits (real time, up to 5 s) until `receiver` holds `n` requests. */
async function received(receiver: Receiver, n: number): Promise<string[]> {
  for (let i = 0; i < 500 && receiver.requests.length < n; i++) await sleep(10);
  return receiver.requests.map((r) => (JSON.parse(r.body) as { state: string }).state);
}

/** The call's state-update rows, in enqueue order. */
async function eventsOf(db: Db, row: CallRow) {
  const rows = await db.select().from(webhookEvents).where(eq(webhookEvents.callId, row.id));
  return rows.sort((a, b) => Number(a.seq) - Number(b.seq));
}

/** Waits (real time, up to 5 s) until the call's second state update holds no lease. */
async function secondFreed(db: Db, row: CallRow) {
  let events = await eventsOf(db, row);
  for (let i = 0; i < 500 && events[1]?.leaseOwner !== null; i++) {
    await sleep(10);
    events = await eventsOf(db, row);
  }
  return events;
}

/** A promise the test resolves (`answer`) when a held receiver may answer. */
function gate(): { held: Promise<void>; answer: () => void } {
  let answer: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    answer = resolve;
  });
  return { held, answer };
}

/** Waits (real time, up to 5 s) until every state update of the call left PENDING. */
async function settled(db: Db, row: CallRow) {
  let rows = await eventsOf(db, row);
  for (let i = 0; i < 500 && rows.some((r) => r.state === "PENDING"); i++) {
    await sleep(10);
    rows = await eventsOf(db, row);
  }
  return rows;
}

describe.each(testDatabases())("state updates enqueued leased to the worker on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock("2026-03-01T00:00:00.000Z");
  let receiver: Receiver;
  let worker: WebhookWorker;
  let engine: CallEngine;

  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  function start(batchSize?: number, running = true): void {
    ({ worker, engine } = workerAndEngine(database.db, clock, batchSize, running));
  }
  afterEach(async () => {
    await engine?.stop();
    await worker?.stop();
    receiver.requests.length = 0;
  });

  it("goes out from memory: written leased to the worker, delivered with no claim", async () => {
    start();
    const project = await newProject(database.db);
    const row = await newCall(database.db, project, `${receiver.base}/state`);
    const starting = { ...row, state: "STARTING" as const };
    await engine.write(starting, { state: "STARTING" });
    // Leased at its insert: its row carried the worker's lease before any statement of the worker.
    expect(await received(receiver, 1)).toEqual(["STARTING"]);
    const [event] = await settled(database.db, row);
    expect(event).toMatchObject({ state: "DELIVERED", attemptCount: 1, leaseOwner: null });
    expect(worker.taken).toEqual({ claim: 0, hand_over: 0, enqueue: 1, reclaim: 0 });

    // The next one too, once the first is done with; the order is the writes'.
    await engine.write({ ...starting, state: "RINGING" }, { state: "RINGING" });
    expect(await received(receiver, 2)).toEqual(["STARTING", "RINGING"]);
    expect((await settled(database.db, row)).map((e) => e.state)).toEqual(["DELIVERED", "DELIVERED"]);
    expect(worker.taken).toEqual({ claim: 0, hand_over: 0, enqueue: 2, reclaim: 0 });
  });

  it("waits in memory behind its key's update in flight, and goes out once that one is delivered", async () => {
    start();
    const project = await newProject(database.db);
    const row = await newCall(database.db, project, `${receiver.base}/state`);
    // The receiver holds its answer to the first update until the second is written.
    const { held, answer } = gate();
    receiver.handle((req, res) => {
      if (req.body.includes('"STARTING"')) void held.then(() => res.end("ok"));
      else res.end("ok");
    });
    await engine.write({ ...row, state: "STARTING" }, { state: "STARTING" });
    await received(receiver, 1);
    await engine.write({ ...row, state: "RINGING" }, { state: "RINGING" });
    // Both leased to the worker at their insert; the second waits for the first.
    const leased = await eventsOf(database.db, row);
    expect(leased.map((e) => [e.state, e.leaseOwner])).toEqual([
      ["PENDING", worker.id],
      ["PENDING", worker.id],
    ]);
    await sleep(100);
    expect(receiver.requests).toHaveLength(1);
    answer();
    expect(await received(receiver, 2)).toEqual(["STARTING", "RINGING"]);
    expect((await settled(database.db, row)).map((e) => e.state)).toEqual(["DELIVERED", "DELIVERED"]);
    expect(worker.taken).toEqual({ claim: 0, hand_over: 0, enqueue: 2, reclaim: 0 });
    receiver.handle((_req, res) => res.end("ok"));
  });

  it("is set free when its key's update in flight fails a round, and goes out after that one's retry", async () => {
    start();
    const project = await newProject(database.db);
    const row = await newCall(database.db, project, `${receiver.base}/state`);
    const { held, answer } = gate();
    // The first update's first round fails (after the second is written), its retry succeeds.
    let failures = 0;
    receiver.handle((req, res) => {
      if (req.body.includes('"STARTING"') && failures++ === 0)
        void held.then(() => {
          res.statusCode = 503;
          res.end("busy");
        });
      else res.end("ok");
    });
    await engine.write({ ...row, state: "STARTING" }, { state: "STARTING" });
    await received(receiver, 1);
    await engine.write({ ...row, state: "RINGING" }, { state: "RINGING" });
    answer();
    // The first waits for its retry; the second, released, waits for the first (no claim takes it).
    const events = await secondFreed(database.db, row);
    expect(events.map((e) => [e.state, e.attemptCount, e.leaseOwner])).toEqual([
      ["PENDING", 1, null],
      ["PENDING", 0, null],
    ]);
    worker.kick();
    await sleep(100);
    expect(receiver.requests).toHaveLength(1);

    // The retry falls due: a claim delivers the first, and its recording hands over the second.
    clock.advance(10 * 60_000);
    worker.kick();
    expect(await received(receiver, 3)).toEqual(["STARTING", "STARTING", "RINGING"]);
    expect((await settled(database.db, row)).map((e) => e.state)).toEqual(["DELIVERED", "DELIVERED"]);
    expect(worker.taken).toEqual({ claim: 1, hand_over: 1, enqueue: 1, reclaim: 0 });
    receiver.handle((_req, res) => res.end("ok"));
  });

  it("goes free behind a pending event of its key, and is delivered after it (hand-over)", async () => {
    start();
    const project = await newProject(database.db);
    const row = await newCall(database.db, project, `${receiver.base}/state`);
    // An earlier state update of the call, pending and due in a minute: nothing may pass it.
    await enqueueWebhook(database.db, {
      projectId: row.projectId,
      eventType: "CALL_STATE_UPDATE",
      uris: [`${receiver.base}/state`],
      body: JSON.stringify({ state: "QUEUED" }),
      orderingKey: `projects/${row.projectId}/calls/${row.id}`,
      now: new Date(clock.now().getTime() + 60_000),
    });
    await engine.write({ ...row, state: "STARTING" }, { state: "STARTING" });
    const [, free] = await eventsOf(database.db, row);
    expect(free).toMatchObject({ state: "PENDING", leaseOwner: null, leaseExpireTime: null });
    await sleep(100);
    expect(receiver.requests).toHaveLength(0);

    // The earlier one falls due: a claim takes it, and its recording hands over the next.
    clock.advance(61_000);
    worker.kick();
    expect(await received(receiver, 2)).toEqual(["QUEUED", "STARTING"]);
    expect((await settled(database.db, row)).map((e) => e.state)).toEqual(["DELIVERED", "DELIVERED"]);
    expect(worker.taken).toEqual({ claim: 1, hand_over: 1, enqueue: 0, reclaim: 0 });
  });

  it("is not leased to a worker that does not run, and a claim delivers it", async () => {
    start(10, false);
    const project = await newProject(database.db);
    const row = await newCall(database.db, project, `${receiver.base}/state`);
    await engine.write({ ...row, state: "STARTING" }, { state: "STARTING" });
    expect((await eventsOf(database.db, row))[0]).toMatchObject({ state: "PENDING", leaseOwner: null });
    expect(await worker.runOnce()).toBe(1);
    expect(await received(receiver, 1)).toEqual(["STARTING"]);
    expect(worker.taken).toEqual({ claim: 1, hand_over: 0, enqueue: 0, reclaim: 0 });
  });

  it("grants a lease only while the worker has room, and each settled lease frees its place", async () => {
    start(1);
    // 25 batches of one: 25 events in flight at most.
    const leases = Array.from({ length: 25 }, () => worker.leaseForEnqueue());
    expect(leases.every((l) => l !== undefined)).toBe(true);
    expect(new Set(leases.map((l) => l!.expiry.getTime())).size).toBe(25);
    expect(worker.leaseForEnqueue()).toBeUndefined();
    expect(worker.hasRoom()).toBe(false);
    leases[0]!.release();
    leases[0]!.release();
    const again = worker.leaseForEnqueue();
    expect(again?.owner).toBe(worker.id);
    expect(worker.leaseForEnqueue()).toBeUndefined();
    for (const l of [again, ...leases.slice(1)]) l!.release();
    expect(worker.hasRoom()).toBe(true);
    await worker.stop();
    expect(worker.leaseForEnqueue()).toBeUndefined();
  });

  it("held by a worker that died before delivering, goes out through another once the lease expires, in order", async () => {
    // Worker A leases two state updates of a call and dies before taking either (its process gone).
    const a = workerAndEngine(database.db, clock).worker;
    const project = await newProject(database.db);
    const row = await newCall(database.db, project, `${receiver.base}/state`);
    const key = `projects/${row.projectId}/calls/${row.id}`;
    const leased = [];
    for (const state of ["STARTING", "RINGING"] as const) {
      const lease = a.leaseForEnqueue()!;
      const event = {
        id: `e-${randomBytes(6).toString("hex")}`,
        projectId: row.projectId,
        eventType: "CALL_STATE_UPDATE" as const,
        uris: [`${receiver.base}/state`],
        body: JSON.stringify({ state }),
        orderingKey: key,
        now: clock.now(),
      };
      leased.push(await writeTransition(database.db, row, { state }, event, lease));
    }
    expect(leased).toEqual([
      { enqueued: true, leased: true, seq: expect.any(Number), behind: false },
      { enqueued: true, leased: true, seq: expect.any(Number), behind: true },
    ]);
    await a.stop();

    // Worker B takes nothing while A's leases run, then both, in the call's order.
    ({ worker, engine } = workerAndEngine(database.db, clock, 10, false));
    expect(await worker.runOnce()).toBe(0);
    clock.advance(config().webhooks.leaseSeconds * 1000 + 1000);
    expect(await worker.runOnce()).toBe(1);
    expect(await worker.runOnce()).toBe(1);
    expect(await received(receiver, 2)).toEqual(["STARTING", "RINGING"]);
    expect((await settled(database.db, row)).map((e) => e.state)).toEqual(["DELIVERED", "DELIVERED"]);
  });
});

const postgres = postgresTestBackend();

describePostgres("a leased state update whose transition's reply was lost (PostgreSQL)", () => {
  const direct = useTestDatabase(postgres!);
  const clock = new TestClock("2026-03-01T00:00:00.000Z");
  let proxy: PgProxy;
  let proxied: Database;
  let receiver: Receiver;
  beforeAll(async () => {
    proxy = await startPgProxy(direct.url!);
    proxied = openPostgres(proxy.url);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await proxied?.close();
    await proxy?.close();
    await receiver?.close();
  });
  afterEach(() => {
    receiver.requests.length = 0;
  });

  it("is taken back by its lease and delivered once", async () => {
    const { worker, engine } = workerAndEngine(proxied.db, clock);
    try {
      const project = await newProject(direct.db);
      const row = await newCall(direct.db, project, `${receiver.base}/state`);
      const lostBefore = proxy.lost();
      // The transition commits its update leased to the worker; its reply never comes.
      proxy.loseReplyTo('"state":"STARTING"');
      await engine.write({ ...row, state: "STARTING" }, { state: "STARTING" });
      expect(proxy.lost()).toBe(lostBefore + 1);
      expect(await received(receiver, 1)).toEqual(["STARTING"]);
      const events = await settled(direct.db, row);
      expect(events.map((e) => e.state)).toEqual(["DELIVERED"]);
      expect((await direct.db.select().from(calls).where(eq(calls.id, row.id)))[0]?.state).toBe("STARTING");
      // Once: taken back by the lease the lost try granted (not a claim, not twice).
      await sleep(200);
      expect(receiver.requests).toHaveLength(1);
      expect(worker.taken).toEqual({ claim: 0, hand_over: 0, enqueue: 0, reclaim: 1 });
    } finally {
      await engine.stop();
      await worker.stop();
    }
  });

  it("behind its key's update in flight, is set free by the take-back and goes out after that one", async () => {
    const { worker, engine } = workerAndEngine(proxied.db, clock);
    const { held, answer } = gate();
    receiver.handle((req, res) => {
      if (req.body.includes('"STARTING"')) void held.then(() => res.end("ok"));
      else res.end("ok");
    });
    try {
      const project = await newProject(direct.db);
      const row = await newCall(direct.db, project, `${receiver.base}/state`);
      await engine.write({ ...row, state: "STARTING" }, { state: "STARTING" });
      await received(receiver, 1);
      const lostBefore = proxy.lost();
      proxy.loseReplyTo('"state":"RINGING"');
      await engine.write({ ...row, state: "RINGING" }, { state: "RINGING" });
      expect(proxy.lost()).toBe(lostBefore + 1);
      // Taken back while the first is in flight: not its key's head, so set free, not delivered.
      const events = await secondFreed(direct.db, row);
      expect(events.map((e) => [e.state, e.leaseOwner])).toEqual([
        ["PENDING", worker.id],
        ["PENDING", null],
      ]);
      expect(receiver.requests).toHaveLength(1);
      answer();
      expect(await received(receiver, 2)).toEqual(["STARTING", "RINGING"]);
      expect((await settled(direct.db, row)).map((e) => e.state)).toEqual(["DELIVERED", "DELIVERED"]);
      await sleep(200);
      expect(receiver.requests).toHaveLength(2);
      expect(worker.taken).toEqual({ claim: 0, hand_over: 1, enqueue: 1, reclaim: 0 });
    } finally {
      answer();
      receiver.handle((_req, res) => res.end("ok"));
      await engine.stop();
      await worker.stop();
    }
  });
});
