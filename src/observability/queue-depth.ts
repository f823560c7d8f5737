/** The webhook outbox by state, for the queue-depth gauge (read at scrape time). */
import { count } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { webhookEvents } from "../db/schema/index.js";

export async function webhookQueueDepth(db: Db): Promise<Record<string, number> | undefined> {
  try {
    const rows = await db
      .select({ state: webhookEvents.state, n: count() })
      .from(webhookEvents)
      .groupBy(webhookEvents.state);
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  } catch {
    return undefined;
  }
}
