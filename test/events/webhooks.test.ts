/**
 * Webhook delivery end to end: the outbox on a real database, a real
 * worker, real HTTP receivers on 127.0.0.1. Every signature is checked with
 * node:crypto here, independently of src/events/signing.ts.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { Db } from "../../src/db/client.js";
import { projects, webhookEvents } from "../../src/db/schema/index.js";
import { RETRY_DELAYS_SECONDS, SignedPostError, signedPost } from "../../src/events/delivery.js";
import { isPublicAddress } from "../../src/events/destinations.js";
import { enqueueWebhook, type WebhookToEnqueue } from "../../src/events/outbox.js";
import { WebhookEventsRepository } from "../../src/events/repository.js";
import { WebhookWorker } from "../../src/events/worker.js";
import { createLogger } from "../../src/log.js";
import { newProject, testConfig } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type ReceivedRequest, type Receiver, startReceiver } from "../support/receiver.js";

const T0 = "2026-01-01T00:00:00.000Z";
const log = createLogger("silent");

function webhooksConfig(env: NodeJS.ProcessEnv = {}) {
  return testConfig({
    WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
    WEBHOOKS_TIMEOUT_MS: "400",
    WEBHOOKS_LEASE_SECONDS: "60",
    ...env,
  }).webhooks;
}

/** The project's signing key bytes, read straight from the table. */
async function keyOf(db: Db, project: string): Promise<Buffer> {
  const [row] = await db
    .select({ key: projects.signingKey })
    .from(projects)
    .where(eq(projects.id, project.split("/")[1]!));
  return Buffer.from(row!.key, "base64");
}

/** Checks every header of a received webhook with node:crypto; `url` is the URL the sender was given. */
function expectSigned(req: ReceivedRequest, key: Buffer, url: string, eventType: string): void {
  expect(req.method).toBe("POST");
  expect(req.headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(req.headers["x-enfonica-event"]).toBe(eventType);
  const expected = createHmac("sha256", key)
    .update(Buffer.from(url + eventType + req.body, "utf8"))
    .digest();
  const given = Buffer.from(String(req.headers["x-enfonica-signature"]), "base64");
  expect(given.length).toBe(expected.length);
  expect(timingSafeEqual(given, expected)).toBe(true);

  const id = String(req.headers["webhook-id"]);
  const timestamp = String(req.headers["webhook-timestamp"]);
  expect(id).toMatch(/^[a-z0-9]+$/);
  expect(timestamp).toMatch(/^\d+$/);
  const standard = createHmac("sha256", key).update(`${id}.${timestamp}.${req.body}`).digest("base64");
  expect(String(req.headers["webhook-signature"]).split(" ")).toContain(`v1,${standard}`);
}

describe.each(testDatabases())("webhook delivery on $name", (backend) => {
  const database = useTestDatabase(backend);
  let receiver: Receiver;
  let second: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    second = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await second?.close();
  });
  afterEach(async () => {
    // Every test starts with an empty outbox and fresh receivers.
    await database.db.delete(webhookEvents);
    receiver.requests.length = 0;
    second.requests.length = 0;
    receiver.handle((_req, res) => res.end("ok"));
    second.handle((_req, res) => res.end("ok"));
  });

  function worker(clock: TestClock, env: NodeJS.ProcessEnv = {}, id?: string) {
    return new WebhookWorker({
      db: database.db,
      clock,
      config: webhooksConfig(env),
      log,
      ...(id === undefined ? {} : { id }),
    });
  }

  async function enqueue(
    project: string,
    event: Partial<WebhookToEnqueue> & Pick<WebhookToEnqueue, "uris">,
    clock: TestClock,
  ): Promise<string> {
    return enqueueWebhook(database.db, {
      projectId: project.split("/")[1]!,
      eventType: "CALL_STATE_UPDATE",
      body: JSON.stringify({ name: `${project}/calls/c1`, state: "RINGING", note: "ünïcödé ✓" }),
      now: clock.now(),
      ...event,
    });
  }

  const stored = (id: string) => new WebhookEventsRepository(database.db).get(id).then((d) => d!);

  /** Waits until the receiver has had `n` requests, or `ms` passed. */
  async function requestsReach(n: number, ms = 5_000): Promise<void> {
    const t0 = Date.now();
    while (receiver.requests.length < n && Date.now() - t0 < ms) await new Promise((r) => setTimeout(r, 10));
  }

  it("delivers a signed POST with every header, verified independently", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    const url = `${receiver.base}/hooks/state?call=c1&x=%20y`;
    const body = JSON.stringify({ name: `${project}/calls/c1`, state: "IN_PROGRESS", text: "héllo" });
    const id = await enqueue(project, { uris: [url], body }, clock);

    expect(await worker(clock).runOnce()).toBe(1);

    expect(receiver.requests).toHaveLength(1);
    const req = receiver.requests[0]!;
    expect(req.body).toBe(body);
    expect(req.path).toBe("/hooks/state?call=c1&x=%20y");
    expectSigned(req, await keyOf(database.db, project), url, "CALL_STATE_UPDATE");
    expect(req.headers["webhook-id"]).toBe(id);
    expect(req.headers["webhook-timestamp"]).toBe(String(Date.parse(T0) / 1000));

    const { event, attempts } = await stored(id);
    expect(event.state).toBe("DELIVERED");
    expect(event.attemptCount).toBe(1);
    expect(event.nextAttemptTime).toBeNull();
    expect(event.leaseOwner).toBeNull();
    expect(attempts).toMatchObject([{ round: 1, uri: url, statusCode: 200, error: null }]);
    // Delivered events are not sent again.
    clock.advance(3600_000);
    expect(await worker(clock).runOnce()).toBe(0);
  });

  it("signs with the project's current key, which a rotation replaces", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    const fresh = Buffer.alloc(64, 7).toString("base64");
    await database.db
      .update(projects)
      .set({ signingKey: fresh })
      .where(eq(projects.id, project.split("/")[1]!));
    await enqueue(project, { uris: [`${receiver.base}/k`], eventType: "RECORDING_READY" }, clock);
    await worker(clock).runOnce();
    expectSigned(receiver.requests[0]!, Buffer.alloc(64, 7), `${receiver.base}/k`, "RECORDING_READY");
  });

  it("falls through to the next URI when the first answers 500", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    receiver.handle((_req, res) => {
      res.statusCode = 500;
      res.end("down");
    });
    const uris = [`${receiver.base}/first`, `${second.base}/second`];
    const id = await enqueue(project, { uris }, clock);
    await worker(clock).runOnce();

    expect(receiver.requests).toHaveLength(1);
    expect(second.requests).toHaveLength(1);
    const key = await keyOf(database.db, project);
    expectSigned(receiver.requests[0]!, key, uris[0]!, "CALL_STATE_UPDATE");
    expectSigned(second.requests[0]!, key, uris[1]!, "CALL_STATE_UPDATE");
    expect(second.requests[0]!.headers["webhook-id"]).toBe(id);
    const { event, attempts } = await stored(id);
    expect(event.state).toBe("DELIVERED");
    expect(attempts.map((a) => [a.round, a.uri, a.statusCode])).toEqual([
      [1, uris[0], 500],
      [1, uris[1], 200],
    ]);
  });

  it("falls through to the next URI when the first times out", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    receiver.handle(() => {
      /* never answers */
    });
    const uris = [`${receiver.base}/slow`, `${second.base}/fast`];
    const id = await enqueue(project, { uris }, clock);
    await worker(clock, { WEBHOOKS_TIMEOUT_MS: "300" }).runOnce();

    expect(second.requests).toHaveLength(1);
    const { event, attempts } = await stored(id);
    expect(event.state).toBe("DELIVERED");
    expect(attempts[0]).toMatchObject({ uri: uris[0], statusCode: null, error: "timed out after 300 ms" });
    expect(attempts[0]!.durationMs).toBeGreaterThanOrEqual(250);
    expect(attempts[1]).toMatchObject({ uri: uris[1], statusCode: 200, error: null });
  });

  it("follows redirects: 307 repeats the signed POST, 302 continues with GET", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    receiver.handle((req, res) => {
      if (req.path === "/moved") {
        res.writeHead(307, { location: `${second.base}/final?via=307` });
        res.end();
      } else if (req.path === "/found") {
        res.writeHead(302, { location: "/landing" });
        res.end();
      } else {
        res.end("ok");
      }
    });
    const url = `${receiver.base}/moved`;
    const id = await enqueue(project, { uris: [url] }, clock);
    await worker(clock).runOnce();
    expect(second.requests).toHaveLength(1);
    const final = second.requests[0]!;
    expect(final.path).toBe("/final?via=307");
    // The signature covers the configured URL, not the redirect target.
    expectSigned(final, await keyOf(database.db, project), url, "CALL_STATE_UPDATE");
    expect((await stored(id)).attempts).toMatchObject([{ uri: url, statusCode: 200 }]);

    const id2 = await enqueue(project, { uris: [`${receiver.base}/found`] }, clock);
    await worker(clock).runOnce();
    expect(receiver.requests.map((r) => [r.method, r.path])).toContainEqual(["GET", "/landing"]);
    expect((await stored(id2)).event.state).toBe("DELIVERED");
  });

  it("retries on the schedule while the receiver is down, then delivers once with the same webhook-id", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    let up = false;
    receiver.handle((_req, res) => {
      res.statusCode = up ? 204 : 503;
      res.end();
    });
    const w = worker(clock);
    const id = await enqueue(project, { uris: [`${receiver.base}/down`] }, clock);
    const t0 = clock.now().getTime();

    expect(await w.runOnce()).toBe(1); // round 1 at T0
    for (const delay of RETRY_DELAYS_SECONDS.slice(0, 2)) {
      clock.advance(delay * 1000 - 1);
      expect(await w.runOnce(), "not due a millisecond early").toBe(0);
      clock.advance(1);
      expect(await w.runOnce()).toBe(1); // rounds 2 and 3
    }
    expect((await stored(id)).event.nextAttemptTime).toEqual(new Date(t0 + 7000));
    up = true;
    clock.advance(3999);
    expect(await w.runOnce()).toBe(0);
    clock.advance(1);
    expect(await w.runOnce()).toBe(1); // round 4 at T0+7s: delivered

    const seen = receiver.requests;
    expect(seen).toHaveLength(4);
    expect(new Set(seen.map((r) => r.headers["webhook-id"]))).toEqual(new Set([id]));
    expect(seen.map((r) => Number(r.headers["webhook-timestamp"]) - t0 / 1000)).toEqual([0, 1, 3, 7]);
    const key = await keyOf(database.db, project);
    for (const r of seen) expectSigned(r, key, `${receiver.base}/down`, "CALL_STATE_UPDATE");

    const { event, attempts } = await stored(id);
    expect(event.state).toBe("DELIVERED");
    expect(event.attemptCount).toBe(4);
    expect(attempts.map((a) => [a.round, a.statusCode, a.startTime.getTime() - t0])).toEqual([
      [1, 503, 0],
      [2, 503, 1000],
      [3, 503, 3000],
      [4, 204, 7000],
    ]);
    clock.advance(86_400_000);
    expect(await w.runOnce()).toBe(0);
    expect(receiver.requests).toHaveLength(4);
  });

  it("abandons the event after the last retry (FAILED), at 1, 2, 4, 8, 60, 1800, 3600, 7200 s", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    receiver.handle((_req, res) => {
      res.statusCode = 500;
      res.end();
    });
    const w = worker(clock);
    const id = await enqueue(project, { uris: [`${receiver.base}/a`, `${second.base}/b`] }, clock);
    second.handle((_req, res) => {
      res.statusCode = 404;
      res.end();
    });
    const t0 = clock.now().getTime();
    expect(await w.runOnce()).toBe(1);
    for (const delay of RETRY_DELAYS_SECONDS) {
      clock.advance(delay * 1000);
      expect(await w.runOnce()).toBe(1);
    }
    const { event, attempts } = await stored(id);
    expect(event.state).toBe("FAILED");
    expect(event.attemptCount).toBe(9);
    expect(event.nextAttemptTime).toBeNull();
    expect(event.completeTime).toEqual(clock.now());
    // Each round tried both URIs in order.
    expect(attempts).toHaveLength(18);
    expect(attempts.map((a) => a.statusCode)).toEqual(Array.from({ length: 9 }, () => [500, 404]).flat());
    const starts = [...new Set(attempts.map((a) => (a.startTime.getTime() - t0) / 1000))];
    expect(starts).toEqual([0, 1, 3, 7, 15, 75, 1875, 5475, 12675]);
    clock.advance(30 * 86_400_000);
    expect(await w.runOnce()).toBe(0);
    expect(receiver.requests).toHaveLength(9);
  });

  it("delivers events sharing an ordering key strictly one after another", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    let failFirst = true;
    receiver.handle((req, res) => {
      if (failFirst && JSON.parse(req.body).n === 1) {
        failFirst = false;
        res.statusCode = 500;
      }
      res.end();
    });
    const uris = [`${receiver.base}/ordered`];
    const key = `${project}/calls/c1`;
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      ids.push(await enqueue(project, { uris, orderingKey: key, body: JSON.stringify({ n }) }, clock));
    }
    const other = await enqueue(
      project,
      { uris, orderingKey: `${project}/calls/c2`, body: JSON.stringify({ n: 9 }) },
      clock,
    );
    const w = worker(clock);

    expect(await w.runOnce()).toBe(2); // n=1 (fails) and the other key's event; 2 and 3 wait
    expect((await stored(other)).event.state).toBe("DELIVERED");
    expect(await w.runOnce(), "2 waits while 1 is pending").toBe(0);
    clock.advance(1000);
    expect(await w.runOnce()).toBe(1); // 1 delivered on its retry
    expect(await w.runOnce()).toBe(1); // then 2
    expect(await w.runOnce()).toBe(1); // then 3
    expect(await w.runOnce()).toBe(0);
    const order = receiver.requests.map((r) => JSON.parse(r.body).n);
    expect(order.filter((n) => n !== 9)).toEqual([1, 1, 2, 3]);
    for (const id of ids) expect((await stored(id)).event.state).toBe("DELIVERED");
  });

  it("lets the next event of a key go once the previous one is abandoned", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    const key = `${project}/calls/c3`;
    receiver.handle((req, res) => {
      res.statusCode = req.path === "/dead" ? 500 : 200;
      res.end();
    });
    const first = await enqueue(project, { uris: [`${receiver.base}/dead`], orderingKey: key }, clock);
    const next = await enqueue(project, { uris: [`${receiver.base}/live`], orderingKey: key }, clock);
    const w = worker(clock);
    expect(await w.runOnce()).toBe(1);
    for (const delay of RETRY_DELAYS_SECONDS) {
      clock.advance(delay * 1000);
      expect(await w.runOnce()).toBe(1);
      expect((await stored(next)).event.attemptCount).toBe(0);
    }
    expect((await stored(first)).event.state).toBe("FAILED");
    expect(await w.runOnce()).toBe(1);
    expect((await stored(next)).event.state).toBe("DELIVERED");
  });

  it("hands the next event of a key to the worker that recorded its predecessor, leased", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    const key = `${project}/calls/h1`;
    const uris = [`${receiver.base}/handover`];
    const first = await enqueue(project, { uris, orderingKey: key, body: '{"n":1}' }, clock);
    const second = await enqueue(project, { uris, orderingKey: key, body: '{"n":2}' }, clock);
    const third = await enqueue(project, { uris, orderingKey: key, body: '{"n":3}' }, clock);
    const repo = new WebhookEventsRepository(database.db);
    const lease = new Date(clock.now().getTime() + 60_000);
    expect((await repo.claim("w1", clock.now(), lease, 10)).map((c) => c.event.id)).toEqual([first]);
    const done = (id: string) => ({
      eventId: id,
      round: 1,
      attempts: [],
      outcome: { state: "DELIVERED" as const, completeTime: clock.now() },
    });
    const { kept, next } = await repo.finish("w1", [done(first)], {
      now: clock.now(),
      leaseExpireTime: lease,
    });
    expect(kept).toEqual(new Set([first]));
    expect(next.map((c) => c.event.id)).toEqual([second]);
    expect(next[0]!.event.leaseOwner).toBe("w1");
    expect(next[0]!.event.leaseExpireTime).toEqual(lease);
    expect(next[0]!.signingKey).toBe((await keyOf(database.db, project)).toString("base64"));
    const stored2 = (await stored(second)).event;
    expect(stored2.leaseOwner).toBe("w1");
    expect(await repo.claim("w2", clock.now(), lease, 10), "leased: no one else claims it").toEqual([]);

    // Without a hand-over the next one waits for a claim.
    const plain = await repo.finish("w1", [done(second)]);
    expect(plain.next).toEqual([]);
    const stored3 = (await stored(third)).event;
    expect(stored3.leaseOwner).toBeNull();
    expect((await repo.claim("w2", clock.now(), lease, 10)).map((c) => c.event.id)).toEqual([third]);
  });

  it("a recording sent again (its reply lost) records nothing twice and answers with the same hand-over", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    const key = `${project}/calls/again1`;
    const uris = [`${receiver.base}/again`];
    const first = await enqueue(project, { uris, orderingKey: key, body: '{"n":1}' }, clock);
    const second = await enqueue(project, { uris, orderingKey: key, body: '{"n":2}' }, clock);
    const other = await enqueue(project, { uris, body: '{"n":3}' }, clock);
    const repo = new WebhookEventsRepository(database.db);
    const claimLease = new Date(clock.now().getTime() + 60_000);
    const claimed = await repo.claim("w1", clock.now(), claimLease, 10);
    expect(claimed.map((c) => c.event.id).sort()).toEqual([first, other].sort());
    const attempt = (id: string, uri: string, ms: number) => ({
      eventId: id,
      round: 1,
      uri,
      startTime: new Date(clock.now().getTime() + ms),
      finishTime: new Date(clock.now().getTime() + ms + 5),
      statusCode: ms === 0 ? 500 : 200,
      error: null,
      durationMs: 5,
    });
    const rounds = [
      {
        eventId: first,
        round: 1,
        attempts: [attempt(first, `${uris[0]}?a`, 0), attempt(first, `${uris[0]}?b`, 10)],
        outcome: { state: "DELIVERED" as const, completeTime: clock.now() },
      },
      {
        eventId: other,
        round: 1,
        attempts: [attempt(other, uris[0]!, 0)],
        outcome: { state: "PENDING" as const, nextAttemptTime: new Date(clock.now().getTime() + 1_000) },
      },
    ];
    // The worker gives the recording's leases an expiry of their own (not the claim's).
    const handOver = { now: clock.now(), leaseExpireTime: new Date(claimLease.getTime() + 1) };
    const once = await repo.finish("w1", rounds, handOver);
    const twice = await repo.finish("w1", rounds, handOver, true);
    expect(once.kept).toEqual(new Set([first, other]));
    expect(twice.kept, "recorded by the first sending: counted as recorded").toEqual(once.kept);
    expect(once.next.map((c) => c.event.id)).toEqual([second]);
    expect(twice.next, "the first sending's hand-over, again").toEqual(once.next);

    const stored1 = await stored(first);
    expect(stored1.event).toMatchObject({ state: "DELIVERED", attemptCount: 1, leaseOwner: null });
    expect(stored1.attempts.map((a) => a.uri)).toEqual([`${uris[0]}?a`, `${uris[0]}?b`]);
    const storedOther = await stored(other);
    expect(storedOther.event).toMatchObject({ state: "PENDING", attemptCount: 1, leaseOwner: null });
    expect(storedOther.attempts).toHaveLength(1);
    expect((await stored(second)).event).toMatchObject({
      leaseOwner: "w1",
      leaseExpireTime: handOver.leaseExpireTime,
    });

    // Another worker's round of the same events (its own times), recorded later, changes nothing
    // but its attempts, which are history: the lease is gone.
    clock.advance(5);
    const theirs = rounds.map((r) => ({
      ...r,
      attempts: r.attempts.map((a) => ({ ...a, startTime: clock.now(), finishTime: clock.now() })),
      outcome: { state: "DELIVERED" as const, completeTime: clock.now() },
    }));
    const late = await repo.finish("w2", theirs, {
      now: clock.now(),
      leaseExpireTime: handOver.leaseExpireTime,
    });
    expect(late.kept).toEqual(new Set());
    expect(late.next).toEqual([]);
    expect((await stored(first)).attempts).toHaveLength(4);
    expect((await stored(other)).event).toMatchObject({ state: "PENDING", attemptCount: 1 });
  });

  it("a recording the database refuses (its event deleted meanwhile) is not sent again: the worker goes on", async () => {
    const clock = new TestClock(T0);
    const doomed = await newProject(database.db);
    const kept = await newProject(database.db);
    const gone = await enqueue(doomed, { uris: [`${receiver.base}/doomed`] }, clock);
    // The project is deleted (its events with it) while its event is being delivered:
    // the round's attempt refers to an event that is no more.
    receiver.handle((req, res) => {
      if (req.path !== "/doomed") return void res.end("ok");
      void database.db
        .delete(projects)
        .where(eq(projects.id, doomed.split("/")[1]!))
        .then(() => res.end("ok"));
    });
    const loop = worker(clock);
    loop.start();
    try {
      const until = async (done: () => Promise<boolean>) => {
        const t0 = Date.now();
        while (!(await done()) && Date.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 20));
      };
      await until(async () => receiver.requests.length === 1);
      const next = await enqueue(kept, { uris: [`${receiver.base}/after`] }, clock);
      loop.kick();
      await until(async () => (await stored(next)).event.state === "DELIVERED");
      expect((await stored(next)).event.state, "recorded: the refused recording is not in its way").toBe(
        "DELIVERED",
      );
    } finally {
      await loop.stop();
    }
    expect(await new WebhookEventsRepository(database.db).get(gone)).toBeUndefined();
  });

  it("the running loop delivers a key's events in order, each once", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    const uris = [`${receiver.base}/chain`];
    const keys = [1, 2, 3].map((c) => `${project}/calls/chain${c}`);
    for (let n = 0; n < 6; n++) {
      for (const key of keys)
        await enqueue(project, { uris, orderingKey: key, body: JSON.stringify({ key, n }) }, clock);
    }
    const loop = worker(clock);
    loop.start();
    try {
      await requestsReach(18, 10_000);
    } finally {
      await loop.stop();
    }
    expect(receiver.requests).toHaveLength(18);
    for (const key of keys) {
      const seen = receiver.requests.map((r) => JSON.parse(r.body)).filter((b) => b.key === key);
      expect(seen.map((b) => b.n)).toEqual([0, 1, 2, 3, 4, 5]);
    }
  });

  it("the running loop follows a key's events by hand-over: one claim for the whole chain", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    const key = `${project}/calls/handed`;
    for (let n = 0; n < 4; n++)
      await enqueue(
        project,
        { uris: [`${receiver.base}/handed`], orderingKey: key, body: `{"n":${n}}` },
        clock,
      );
    const claims = vi.spyOn(WebhookEventsRepository.prototype, "claim");
    // An hour between polls: only the first claim and the hand-overs can deliver.
    const loop = worker(clock, { WEBHOOKS_POLL_INTERVAL_MS: "3600000" });
    try {
      loop.start();
      await requestsReach(4);
      // Let a claim that a recording would have caused come and go.
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await loop.stop();
    }
    // Read before the restore, which forgets the calls.
    const claimsMade = claims.mock.calls.length;
    claims.mockRestore();
    expect(receiver.requests.map((r) => JSON.parse(r.body).n)).toEqual([0, 1, 2, 3]);
    expect(claimsMade, "each recording handed the next event over: no claim after it").toBe(1);
  });

  it("after a full claim the loop claims as many as it has room for, in one statement", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    for (let n = 0; n < 40; n++) await enqueue(project, { uris: [`${receiver.base}/many`] }, clock);
    // Nothing is answered until the leases are read: every event stays leased as its claim left it.
    const held: Array<() => void> = [];
    receiver.handle((_req, res) => held.push(() => res.end("ok")));
    const loop = worker(clock, { WEBHOOKS_BATCH_SIZE: "5", WEBHOOKS_POLL_INTERVAL_MS: "3600000" });
    try {
      loop.start();
      await requestsReach(40);
      // Each lease-granting statement gives its leases an expiry of its own (worker.ts, leaseFrom).
      const leases = await database.db
        .select({ expiry: webhookEvents.leaseExpireTime })
        .from(webhookEvents)
        .where(eq(webhookEvents.state, "PENDING"));
      const perStatement = new Map<number, number>();
      for (const { expiry } of leases)
        perStatement.set(expiry!.getTime(), (perStatement.get(expiry!.getTime()) ?? 0) + 1);
      expect([...perStatement.entries()].sort((a, b) => a[0] - b[0]).map(([, n]) => n)).toEqual([5, 35]);
    } finally {
      for (const end of held) end();
      await loop.stop();
    }
    expect(receiver.requests).toHaveLength(40);
  });

  it("a loop out of room claims again once a recording makes room", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    // Batch 1: room for 25 events in flight; 30 are due.
    for (let n = 0; n < 30; n++) await enqueue(project, { uris: [`${receiver.base}/room`] }, clock);
    const loop = worker(clock, { WEBHOOKS_BATCH_SIZE: "1", WEBHOOKS_POLL_INTERVAL_MS: "3600000" });
    try {
      loop.start();
      await requestsReach(30);
    } finally {
      await loop.stop();
    }
    expect(receiver.requests, "the last 5 waited for room, not for the hour's poll").toHaveLength(30);
  });

  it("delivers each event once per attempt when two workers race", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    receiver.handle((_req, res) => setTimeout(() => res.end(), 5));
    const ids = new Set<string>();
    for (let i = 0; i < 30; i++) {
      ids.add(
        await enqueue(project, { uris: [`${receiver.base}/race`], body: JSON.stringify({ i }) }, clock),
      );
    }
    const a = worker(clock, { WEBHOOKS_BATCH_SIZE: "4" }, "worker-a");
    const b = worker(clock, { WEBHOOKS_BATCH_SIZE: "4" }, "worker-b");
    let rounds = 0;
    while (receiver.requests.length < 30 && rounds++ < 50) {
      await Promise.all([a.runOnce(), b.runOnce(), a.runOnce(), b.runOnce()]);
    }
    expect(await a.runOnce()).toBe(0);
    const received = receiver.requests.map((r) => String(r.headers["webhook-id"]));
    expect(received).toHaveLength(30);
    expect(new Set(received)).toEqual(ids);
    for (const id of ids) {
      const { event, attempts } = await stored(id);
      expect(event.state).toBe("DELIVERED");
      expect(attempts).toHaveLength(1);
    }
  });

  it("redelivers the event of a worker that died holding its lease, once the lease expires", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    const id = await enqueue(project, { uris: [`${receiver.base}/crash`] }, clock);
    const repo = new WebhookEventsRepository(database.db);
    // The dead worker claimed it (lease 60 s) and never got further.
    const claimed = await repo.claim(
      "dead-worker",
      clock.now(),
      new Date(clock.now().getTime() + 60_000),
      10,
    );
    expect(claimed.map((c) => c.event.id)).toEqual([id]);

    const survivor = worker(clock, {}, "survivor");
    expect(await survivor.runOnce(), "leased to the dead worker").toBe(0);
    clock.advance(59_999);
    expect(await survivor.runOnce()).toBe(0);
    clock.advance(1);
    expect(await survivor.runOnce()).toBe(1);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]!.headers["webhook-id"]).toBe(id);
    expect((await stored(id)).event.state).toBe("DELIVERED");

    // Were the dead worker to come back, its late result changes nothing.
    expect(
      await repo.finishRound(id, "dead-worker", 1, [], { state: "FAILED", completeTime: clock.now() }),
    ).toBe(false);
    expect((await stored(id)).event.state).toBe("DELIVERED");
  });

  it("refuses private destinations unless configuration allows them, and records why", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    const uris = [
      `${receiver.base}/literal`,
      `http://localhost:${receiver.port}/name`,
      `http://[::1]:${receiver.port}/`,
    ];
    const id = await enqueue(project, { uris }, clock);
    expect(await worker(clock, { WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "false" }).runOnce()).toBe(1);
    expect(receiver.requests).toHaveLength(0);
    const { event, attempts } = await stored(id);
    expect(event.state).toBe("PENDING");
    expect(event.nextAttemptTime).toEqual(new Date(Date.parse(T0) + 1000));
    expect(attempts).toHaveLength(3);
    for (const a of attempts) {
      expect(a.statusCode).toBeNull();
      expect(a.error).toMatch(/private, loopback, link-local or reserved address/);
    }
    expect(attempts[1]!.error).toMatch(/^destination localhost \((127\.0\.0\.1|::1)\)/);

    // The same event, allowed by configuration, arrives on its retry.
    clock.advance(1000);
    expect(await worker(clock).runOnce()).toBe(1);
    expect(receiver.requests).toHaveLength(1);
    expect((await stored(id)).event.state).toBe("DELIVERED");
  });

  it("delivers nothing when the enqueueing transaction rolls back", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    let enqueued = "";
    await expect(
      database.db.transaction(async (tx) => {
        enqueued = await enqueueWebhook(tx, {
          projectId: project.split("/")[1]!,
          eventType: "INCOMING_MESSAGE",
          uris: [`${receiver.base}/never`],
          body: "{}",
          now: clock.now(),
        });
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    expect(enqueued).not.toBe("");
    expect(await new WebhookEventsRepository(database.db).get(enqueued)).toBeUndefined();
    clock.advance(86_400_000);
    expect(await worker(clock).runOnce()).toBe(0);
    expect(receiver.requests).toHaveLength(0);
  });

  it("delivers at once when kicked, and stops gracefully", async () => {
    const clock = new TestClock(T0);
    const project = await newProject(database.db);
    const w = worker(clock, { WEBHOOKS_POLL_INTERVAL_MS: "3600000" });
    w.start();
    try {
      // Let the first (empty) poll pass, so only the kick can deliver.
      await new Promise((r) => setTimeout(r, 100));
      await enqueue(project, { uris: [`${receiver.base}/kick`] }, clock);
      w.kick();
      const deadline = Date.now() + 5000;
      while (receiver.requests.length === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      expect(receiver.requests).toHaveLength(1);
    } finally {
      await w.stop();
    }
  });

  describe("signedPost (call control)", () => {
    it("returns the first 2xx answer's body, falling through, with the same signatures", async () => {
      const clock = new TestClock(T0);
      const project = await newProject(database.db);
      const key = await keyOf(database.db, project);
      receiver.handle((_req, res) => {
        res.statusCode = 502;
        res.end();
      });
      second.handle((_req, res) => {
        res.setHeader("content-type", "application/xml");
        res.end("<Response><Say>Hello</Say></Response>");
      });
      const uris = [`${receiver.base}/cc`, `${second.base}/cc?x=1`];
      const result = await signedPost(
        { signingKey: key.toString("base64"), uris, eventType: "CALL", body: '{"call":"c"}' },
        clock,
        webhooksConfig(),
      );
      expect(result).toMatchObject({
        uri: uris[1],
        status: 200,
        body: "<Response><Say>Hello</Say></Response>",
        contentType: "application/xml",
      });
      expect(result.attempts.map((a) => a.statusCode)).toEqual([502, 200]);
      expectSigned(receiver.requests[0]!, key, uris[0]!, "CALL");
      expectSigned(second.requests[0]!, key, uris[1]!, "CALL");
    });

    it("rejects with every attempt when no URI answers 2xx", async () => {
      const clock = new TestClock(T0);
      receiver.handle((_req, res) => {
        res.statusCode = 500;
        res.end();
      });
      const error = await signedPost(
        {
          signingKey: Buffer.alloc(64).toString("base64"),
          uris: [`${receiver.base}/x`, "ftp://example.com/"],
          eventType: "CALL",
          body: "{}",
        },
        clock,
        webhooksConfig(),
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SignedPostError);
      expect((error as SignedPostError).attempts.map((a) => a.statusCode ?? a.error)).toEqual([
        500,
        "unsupported URL scheme ftp:",
      ]);
    });
  });
});

describe("destination guard", () => {
  it.each([
    ["127.0.0.1", false],
    ["10.1.2.3", false],
    ["172.16.0.1", false],
    ["172.31.255.255", false],
    ["192.168.1.1", false],
    ["169.254.169.254", false],
    ["100.64.0.1", false],
    ["0.0.0.0", false],
    ["224.0.0.1", false],
    ["255.255.255.255", false],
    ["::", false],
    ["::1", false],
    ["fe80::1", false],
    ["fd00::1", false],
    ["::ffff:127.0.0.1", false],
    ["::ffff:7f00:1", false],
    ["::ffff:10.0.0.1", false],
    ["8.8.8.8", true],
    ["172.32.0.1", true],
    ["1.1.1.1", true],
    ["2606:4700:4700::1111", true],
    ["::ffff:8.8.8.8", true],
    ["not-an-ip", false],
  ])("%s is public: %s", (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });
});
