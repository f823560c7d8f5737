/**
 * The webhook outbox's unfinished and abandoned events (PENDING, FAILED),
 * for the queue-depth gauge, read at scrape time. DELIVERED events are not
 * counted, nor read: they only grow. One statement (one snapshot: a claim
 * between two counts cannot count an event twice), of three counts whose
 * conditions are partial indexes' predicates (src/db/schema/events.ts), so a
 * scrape reads those indexes and their rows, never the whole table: PENDING
 * in two parts (no lease: webhook_events_due_idx; leased:
 * webhook_events_leased_idx), FAILED through webhook_events_failed_idx.
 *
 * The states are literals in the text, not parameters: a generic plan
 * cannot prove a partial index's predicate from `state = $1`, and a
 * prepared statement may switch to one after a few executions.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { webhookEvents as t } from "../db/schema/index.js";

/** The three counts' conditions, each a partial index's predicate. */
const PARTS = {
  pendingFree: sql`${t.state} = 'PENDING' and ${t.leaseOwner} is null`,
  pendingLeased: sql`${t.state} = 'PENDING' and ${t.leaseOwner} is not null`,
  failed: sql`${t.state} = 'FAILED'`,
};

const countOf = (where: SQL) => sql<number>`(select count(*)::integer from ${t} where ${where})`;

/** The gauge's statement (exported for its test). */
export function queueDepthQuery(db: Db) {
  return db
    .select({
      free: countOf(PARTS.pendingFree),
      leased: countOf(PARTS.pendingLeased),
      failed: countOf(PARTS.failed),
    })
    .from(sql`(select 1) as one`);
}

export async function webhookQueueDepth(db: Db): Promise<Record<string, number> | undefined> {
  try {
    const [row] = await queueDepthQuery(db);
    if (row === undefined) return undefined;
    return { PENDING: Number(row.free) + Number(row.leased), FAILED: Number(row.failed) };
  } catch {
    return undefined;
  }
}
