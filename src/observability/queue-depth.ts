/**
 * The webhook outbox's unfinished and abandoned events (PENDING, FAILED),
 * for the queue-depth gauge, read at scrape time. DELIVERED events are not
 * counted: they only grow, and counting them would scan the whole table on
 * every scrape.
 */
import { count, inArray } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { webhookEvents } from "../db/schema/index.js";

export async function webhookQueueDepth(db: Db): Promise<Record<string, number> | undefined> {
  try {
    const rows = await db
      .select({ state: webhookEvents.state, n: count() })
      .from(webhookEvents)
      .where(inArray(webhookEvents.state, ["PENDING", "FAILED"]))
      .groupBy(webhookEvents.state);
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  } catch {
    return undefined;
  }
}
