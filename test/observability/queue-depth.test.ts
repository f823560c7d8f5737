/**
 * The webhook queue-depth gauge's counts (src/observability/queue-depth.ts):
 * PENDING events, leased or not, and FAILED ones; DELIVERED events are
 * neither counted nor read. Each count can be answered from a partial index
 * (migration 0014 for FAILED): with sequential scans priced out, no part of
 * it plans one, so a scrape costs what the unfinished events cost, not the
 * whole table.
 */
import { eq, inArray, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { webhookEvents } from "../../src/db/schema/index.js";
import { enqueueWebhook, rowsOf } from "../../src/events/outbox.js";
import { WebhookEventsRepository } from "../../src/events/repository.js";
import { queueDepthQuery, webhookQueueDepth } from "../../src/observability/queue-depth.js";
import { newProject } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

describe.each(testDatabases())("webhook queue depth on $name", (backend) => {
  const database = useTestDatabase(backend);

  it("counts pending events, leased or not, and failed ones, and not delivered ones", async () => {
    const db = database.db;
    const projectId = (await newProject(db)).split("/")[1]!;
    const before = (await webhookQueueDepth(db))!;
    const now = new Date();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      ids.push(
        await enqueueWebhook(db, {
          projectId,
          eventType: "RECORDING_READY",
          uris: ["https://example.com/hook"],
          body: "{}",
          now,
        }),
      );
    }
    // Two delivered, one failed, two leased to a worker, one waiting.
    await db
      .update(webhookEvents)
      .set({ state: "DELIVERED", nextAttemptTime: null, completeTime: now })
      .where(inArray(webhookEvents.id, ids.slice(0, 2)));
    await db
      .update(webhookEvents)
      .set({ state: "FAILED", nextAttemptTime: null, completeTime: now })
      .where(eq(webhookEvents.id, ids[2]!));
    await db
      .update(webhookEvents)
      .set({ leaseOwner: "worker-test", leaseExpireTime: new Date(now.getTime() + 60_000) })
      .where(inArray(webhookEvents.id, ids.slice(3, 5)));
    const after = (await webhookQueueDepth(db))!;
    expect(after.PENDING! - before.PENDING!).toBe(3);
    expect(after.FAILED! - before.FAILED!).toBe(1);
    expect(Object.keys(after).sort()).toEqual(["FAILED", "PENDING"]);
    // A claim moves events between the two pending parts: the total stays.
    const repo = new WebhookEventsRepository(db);
    const claimed = await repo.claim(
      "worker-2",
      new Date(now.getTime() + 1),
      new Date(now.getTime() + 60_000),
      100,
    );
    expect(claimed.map((c) => c.event.id)).toContain(ids[5]);
    expect((await webhookQueueDepth(db))!.PENDING).toBe(after.PENDING);
  });

  it("plans every count on an index, never a scan of the table, whatever the plan cache does", async () => {
    const db = database.db;
    const query = queueDepthQuery(db);
    // No parameter: a generic plan is the custom one (a partial index's predicate stays provable).
    expect(query.toSQL().params).toEqual([]);
    const plan = await db.transaction(async (tx) => {
      await tx.execute(sql`set local enable_seqscan = off`);
      return rowsOf<Record<string, unknown>>(await tx.execute(sql`explain ${queueDepthQuery(tx)}`))
        .map((r) => String(Object.values(r)[0]))
        .join("\n");
    });
    expect(plan).not.toMatch(/Seq Scan/);
    for (const index of [
      "webhook_events_due_idx",
      "webhook_events_leased_idx",
      "webhook_events_failed_idx",
    ]) {
      expect(plan).toContain(index);
    }
  });
});
