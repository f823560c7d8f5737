/**
 * The webhook outbox's unfinished and abandoned events (PENDING, FAILED),
 * for the queue-depth gauge, read at scrape time. DELIVERED events are not
 * counted, nor read: they only grow. Each count's condition is a partial
 * index's predicate (src/db/schema/events.ts), so a scrape reads those
 * indexes and their rows, never the whole table: PENDING in two parts (no
 * lease: webhook_events_due_idx; leased: webhook_events_leased_idx), FAILED
 * through webhook_events_failed_idx.
 */
import { and, count, eq, isNotNull, isNull, type SQL } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { webhookEvents as t } from "../db/schema/index.js";

/** The three counts' conditions, each a partial index's predicate. */
export const QUEUE_DEPTH_PARTS = {
  pendingFree: and(eq(t.state, "PENDING"), isNull(t.leaseOwner))!,
  pendingLeased: and(eq(t.state, "PENDING"), isNotNull(t.leaseOwner))!,
  failed: eq(t.state, "FAILED"),
} satisfies Record<string, SQL>;

export async function webhookQueueDepth(db: Db): Promise<Record<string, number> | undefined> {
  const n = async (where: SQL) => (await db.select({ n: count() }).from(t).where(where))[0]?.n ?? 0;
  try {
    const [free, leased, failed] = await Promise.all([
      n(QUEUE_DEPTH_PARTS.pendingFree),
      n(QUEUE_DEPTH_PARTS.pendingLeased),
      n(QUEUE_DEPTH_PARTS.failed),
    ]);
    return { PENDING: free + leased, FAILED: failed };
  } catch {
    return undefined;
  }
}
