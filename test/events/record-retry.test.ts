/**
 * A recording whose reply is lost. The worker records a round and, in the
 * same statement, takes the next event of the call's key, leased to itself
 * (src/events/repository.ts, FINISH_ROUNDS). When the statement commits but
 * its reply never arrives (the connection dropped), the worker does not know
 * what it was handed: before, those events waited for their leases to expire
 * (WEBHOOKS_LEASE_SECONDS, 300 s by default) and a call's later state
 * updates with them. Now the worker sends the same statement again, which
 * records nothing twice and answers with the first one's hand-over.
 *
 * A claim whose reply is lost, likewise: the worker's next turn takes back
 * the events that claim leased (by the lease's expiry, its own) and
 * delivers them, rather than leave them until the lease expires.
 *
 * Real parts: PostgreSQL behind a TCP proxy on 127.0.0.1 that forwards
 * everything but, once, swallows the reply to the statement that records a
 * given event and then closes both connections; a real receiver.
 * PostgreSQL only: the proxy stands between a client and a server's socket.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Database, openPostgres } from "../../src/db/client.js";
import { enqueueWebhook } from "../../src/events/outbox.js";
import { WebhookEventsRepository } from "../../src/events/repository.js";
import { WebhookWorker } from "../../src/events/worker.js";
import { createLogger } from "../../src/log.js";
import { newProject, testConfig } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { createScratchDatabase, describePostgres } from "../support/db.js";
import { type PgProxy, startPgProxy } from "../support/pg-proxy.js";
import { type Receiver, startReceiver } from "../support/receiver.js";

describePostgres("a recording whose reply is lost (PostgreSQL)", () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let direct: Database;
  let proxied: Database;
  let proxy: PgProxy;
  let receiver: Receiver;

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
    direct = openPostgres(scratch.url);
    await direct.migrate();
    proxy = await startPgProxy(scratch.url);
    proxied = openPostgres(proxy.url);
    receiver = await startReceiver();
  }, 60_000);

  afterAll(async () => {
    await proxied?.close();
    await direct?.close();
    await proxy?.close();
    await receiver?.close();
    await scratch?.drop();
  });

  it("is sent again: the key's next events go out at once, each once, and nothing is recorded twice", async () => {
    const clock = new TestClock("2026-01-01T00:00:00.000Z");
    const project = await newProject(direct.db);
    const key = `${project}/calls/lost-reply`;
    const ids: string[] = [];
    for (let n = 1; n <= 3; n++) {
      ids.push(
        await enqueueWebhook(direct.db, {
          projectId: project.split("/")[1]!,
          eventType: "CALL_STATE_UPDATE",
          uris: [`${receiver.base}/state`],
          body: JSON.stringify({ n }),
          orderingKey: key,
          now: clock.now(),
        }),
      );
    }
    // The first event's recording (its id is in the statement's parameters) commits, unanswered.
    proxy.loseReplyTo(ids[0]!);
    const worker = new WebhookWorker({
      db: proxied.db,
      clock,
      // Leases far longer than the test waits: the next events cannot be waiting for one to expire.
      config: testConfig({
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
        WEBHOOKS_LEASE_SECONDS: "600",
      }).webhooks,
      log: createLogger("silent"),
    });
    worker.start();
    try {
      const t0 = Date.now();
      while (receiver.requests.length < 3 && Date.now() - t0 < 10_000)
        await new Promise((r) => setTimeout(r, 20));
    } finally {
      await worker.stop();
    }
    expect(proxy.lost(), "the reply was lost").toBe(1);
    expect(receiver.requests.map((r) => JSON.parse(r.body).n)).toEqual([1, 2, 3]);
    const repo = new WebhookEventsRepository(direct.db);
    for (const id of ids) {
      const stored = (await repo.get(id))!;
      expect(stored.event.state).toBe("DELIVERED");
      expect(stored.event.leaseOwner).toBeNull();
      expect(stored.attempts, "one attempt row per attempt").toHaveLength(1);
    }
  });

  it("a claim whose reply is lost: its events are taken back at once and delivered once", async () => {
    const clock = new TestClock("2026-01-01T00:00:00.000Z");
    const project = await newProject(direct.db);
    const key = `${project}/calls/lost-claim`;
    const ids: string[] = [];
    for (let n = 1; n <= 2; n++) {
      ids.push(
        await enqueueWebhook(direct.db, {
          projectId: project.split("/")[1]!,
          eventType: "CALL_STATE_UPDATE",
          uris: [`${receiver.base}/claimed`],
          body: JSON.stringify({ n }),
          orderingKey: key,
          now: clock.now(),
        }),
      );
    }
    // The worker's first statement (its id is a parameter of each) is its first claim: it commits, unanswered.
    const id = `worker-lost-claim-${Date.now()}`;
    const lostBefore = proxy.lost();
    proxy.loseReplyTo(id);
    const worker = new WebhookWorker({
      db: proxied.db,
      clock,
      id,
      config: testConfig({
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
        WEBHOOKS_LEASE_SECONDS: "600",
      }).webhooks,
      log: createLogger("silent"),
    });
    const received = () => receiver.requests.filter((r) => r.path === "/claimed");
    worker.start();
    try {
      const t0 = Date.now();
      while (received().length < 2 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 20));
    } finally {
      await worker.stop();
    }
    expect(proxy.lost(), "the reply was lost").toBe(lostBefore + 1);
    expect(received().map((r) => JSON.parse(r.body).n)).toEqual([1, 2]);
    const repo = new WebhookEventsRepository(direct.db);
    for (const eventId of ids) {
      const stored = (await repo.get(eventId))!;
      expect(stored.event.state).toBe("DELIVERED");
      expect(stored.attempts).toHaveLength(1);
    }
  });
});
