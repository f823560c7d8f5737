/**
 * Waking webhook workers over LISTEN/NOTIFY (src/events/listener.ts): on
 * PostgreSQL a worker that would not poll for an hour still delivers an
 * event enqueued elsewhere, because the enqueuer's notifier announces it
 * and the worker's listener kicks it; the replica's own announcements
 * (its id is their payload) wake nobody. On PGlite there is no second
 * connection: neither a listener nor a notifier is made.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import { listenOnChannel } from "../../src/db/listen.js";
import { webhookEvents } from "../../src/db/schema/index.js";
import { listenForWebhooks, newAnnouncer, webhookNotifier } from "../../src/events/listener.js";
import { enqueueWebhook, WEBHOOKS_CHANNEL } from "../../src/events/outbox.js";
import { WebhookWorker } from "../../src/events/worker.js";
import { createLogger } from "../../src/log.js";
import { newProject, testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type ReceivedRequest, type Receiver, startReceiver } from "../support/receiver.js";

const log = createLogger("silent");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
      const worker = new WebhookWorker({
        db,
        clock: systemClock,
        // An hour between polls: only a wake-up delivers within the test.
        config: testConfig({
          WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
          WEBHOOKS_POLL_INTERVAL_MS: "3600000",
        }).webhooks,
        log,
      });
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

  if (backend.name === "pglite")
    it("makes neither a listener nor a notifier on the embedded database", () => {
      expect(listenForWebhooks(database.db, () => {}, log)).toBeUndefined();
      expect(webhookNotifier(database.db, log)).toBeUndefined();
    });
});
