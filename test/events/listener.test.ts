/**
 * Waking webhook workers over LISTEN/NOTIFY (src/events/listener.ts): on
 * PostgreSQL a worker that would not poll for an hour still delivers an
 * event enqueued elsewhere, because the enqueuer's notifier announces it
 * and the worker's listener kicks it; the replica's own announcements
 * (its id is their payload) wake nobody. On PGlite there is no second
 * connection: neither a listener nor a notifier is made. A replica
 * announces an enqueue only when its own worker cannot take it now
 * (enqueueKicker): none, not running, or out of room.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import type { Db } from "../../src/db/client.js";
import { listenOnChannel } from "../../src/db/listen.js";
import { webhookEvents } from "../../src/db/schema/index.js";
import {
  enqueueKicker,
  listenForWebhooks,
  newAnnouncer,
  webhookNotifier,
} from "../../src/events/listener.js";
import { enqueueWebhook, WEBHOOKS_CHANNEL } from "../../src/events/outbox.js";
import { WebhookWorker } from "../../src/events/worker.js";
import { createLogger } from "../../src/log.js";
import { newProject, testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type ReceivedRequest, type Receiver, startReceiver } from "../support/receiver.js";

const log = createLogger("silent");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A worker with an hour between polls: within a test, only a wake-up (a kick) makes it claim. */
function idleWorker(db: Db, settings: Record<string, string> = {}): WebhookWorker {
  const config = testConfig({
    WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
    WEBHOOKS_POLL_INTERVAL_MS: "3600000",
    ...settings,
  });
  return new WebhookWorker({ db, clock: systemClock, config: config.webhooks, log });
}

describe.each(testDatabases())("webhook wake-ups on $name", (backend) => {
  const database = useTestDatabase(backend);
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  // Each backend has its own case; neither is registered (nor counted as skipped) on the other.
  if (backend.name === "postgres")
    it("delivers an event enqueued elsewhere to a worker woken by NOTIFY, not by its poll", async () => {
      const db = database.db;
      const project = await newProject(db);
      const worker = idleWorker(db);
      const listener = listenForWebhooks(db, () => worker.kick(), log);
      const notify = webhookNotifier(db, log);
      expect(listener).toBeDefined();
      expect(notify).toBeDefined();
      const received = new Promise<ReceivedRequest>((resolve) =>
        receiver.handle((req, res) => {
          res.end("ok");
          resolve(req);
        }),
      );
      try {
        worker.start();
        while (!listener!.live()) await sleep(10);
        // Let the worker's first (empty) claim and the connect-time kick pass: it then sleeps for the hour.
        await sleep(200);
        expect(receiver.requests).toHaveLength(0);

        // Another replica's enqueue: committed, then announced; this worker is not kicked directly.
        const id = await enqueueWebhook(db, {
          projectId: project.split("/")[1]!,
          eventType: "CALL_STATE_UPDATE",
          uris: [`${receiver.base}/hook`],
          body: "{}",
          now: new Date(),
        });
        notify!();
        expect((await received).headers["webhook-id"]).toBe(id);
        await worker.stop();
        const [row] = await db.select().from(webhookEvents).where(eq(webhookEvents.id, id));
        expect(row!.state).toBe("DELIVERED");
        expect(receiver.requests).toHaveLength(1);
      } finally {
        await worker.stop();
        await listener!.close();
      }
    });

  if (backend.name === "postgres")
    it("signs its NOTIFY with the replica's id, and a listener ignores its own replica's", async () => {
      const db = database.db;
      const wakes: string[] = [];
      const payloads: string[] = [];
      const own = newAnnouncer();
      const other = newAnnouncer();
      expect(own).toMatch(/^[0-9a-f]{16}$/);
      expect(other).not.toBe(own);
      // The replica's own listener, and a raw one that hears every payload.
      const listener = listenForWebhooks(db, () => wakes.push("woken"), log, own);
      const raw = listenOnChannel(
        db,
        WEBHOOKS_CHANNEL,
        { onNotify: (p) => payloads.push(p), onListening: () => {}, onLost: () => {} },
        log,
        "test listener",
      );
      try {
        while (!listener!.live() || !raw!.live()) await sleep(10);
        // Listening wakes the worker once (events enqueued while nobody listened): not counted here.
        expect(wakes).toEqual(["woken"]);
        wakes.length = 0;
        // The replica's own announcement: heard, but it wakes nobody.
        webhookNotifier(db, log, own)!();
        while (payloads.length < 1) await sleep(10);
        expect(payloads).toEqual([own]);
        // Another replica's, then an older replica's (no payload): each wakes the worker.
        webhookNotifier(db, log, other)!();
        while (payloads.length < 2) await sleep(10);
        webhookNotifier(db, log)!();
        while (payloads.length < 3) await sleep(10);
        expect(payloads).toEqual([own, other, ""]);
        // Notifications reach both listeners in one order: the last one heard by the raw
        // listener is heard by the replica's before long, and the first one never.
        const t0 = Date.now();
        while (wakes.length < 2 && Date.now() - t0 < 5_000) await sleep(10);
        await sleep(100);
        expect(wakes).toHaveLength(2);
        expect(() => webhookNotifier(db, log, "not-hex")).toThrow(/hexadecimal/);
      } finally {
        await listener!.close();
        await raw!.close();
      }
    });

  it("kicks its own worker, and announces an enqueue only while that worker cannot take it", async () => {
    const db = database.db;
    const projectId = (await newProject(db)).split("/")[1]!;
    // A batch of 1: the worker may hold 25 events in flight.
    const worker = idleWorker(db, { WEBHOOKS_BATCH_SIZE: "1" });
    let announced = 0;
    const kick = enqueueKicker(worker, () => announced++);
    // Answers held until released: the worker's rounds stay in flight.
    const held: (() => void)[] = [];
    receiver.handle((_req, res) => held.push(() => res.end("ok")));
    const enqueue = () =>
      enqueueWebhook(db, {
        projectId,
        eventType: "CALL_STATE_UPDATE",
        uris: [`${receiver.base}/held`],
        body: "{}",
        now: new Date(),
      });
    const until = async (what: () => boolean) => {
      const t0 = Date.now();
      while (!what()) {
        if (Date.now() - t0 > 10_000) throw new Error("timed out");
        await sleep(10);
      }
    };
    try {
      // Not started: nothing here takes the event, so the other replicas are told.
      await enqueue();
      kick();
      expect(announced).toBe(1);
      worker.start();
      await until(() => held.length === 1);
      expect(worker.hasRoom()).toBe(true);
      // With room, the kick alone takes the next one: nobody else is told.
      await enqueue();
      kick();
      await until(() => held.length === 2);
      expect(announced).toBe(1);
      // Out of room (25 in flight): an enqueue is announced.
      for (let i = 0; i < 23; i++) await enqueue();
      kick();
      await until(() => held.length === 25);
      expect(worker.hasRoom()).toBe(false);
      await enqueue();
      kick();
      expect(announced).toBe(2);
      // The rounds recorded, there is room again: the 26th goes out on a kick of its own.
      for (const release of held.splice(0)) release();
      await until(() => worker.hasRoom());
      kick();
      expect(announced).toBe(2);
      await until(() => held.length === 1);
      // Stopping: the others are told again.
      held.pop()!();
      await worker.stop();
      expect(worker.hasRoom()).toBe(false);
      kick();
      expect(announced).toBe(3);
    } finally {
      for (const release of held.splice(0)) release();
      await worker.stop();
      receiver.handle((_req, res) => res.end("ok"));
    }
    // No worker here (ROLE=api): every enqueue is announced; no notifier (the embedded database): none.
    let told = 0;
    enqueueKicker(undefined, () => told++)();
    expect(told).toBe(1);
    expect(() => enqueueKicker(undefined, undefined)()).not.toThrow();
  });

  if (backend.name === "pglite")
    it("makes neither a listener nor a notifier on the embedded database", () => {
      expect(listenForWebhooks(database.db, () => {}, log)).toBeUndefined();
      expect(webhookNotifier(database.db, log)).toBeUndefined();
    });
});
