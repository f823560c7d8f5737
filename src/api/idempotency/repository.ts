/** Storage of idempotency keys: the `idempotency_keys` table, nothing else. */
import { and, eq, lte, sql } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import { type IdempotencyKeyRow, idempotencyKeys as t } from "../../db/schema/index.js";

export class IdempotencyRepository {
  constructor(private readonly db: Db) {}

  /** The key's row, if it is still live at `now` (an expired one is deleted on the way). */
  async findLive(projectId: string, key: string, now: Date): Promise<IdempotencyKeyRow | undefined> {
    const [row] = await this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), eq(t.key, key)));
    if (row === undefined) return undefined;
    if (row.expireTime.getTime() > now.getTime()) return row;
    await this.db.delete(t).where(and(eq(t.projectId, projectId), eq(t.key, key), lte(t.expireTime, now)));
    return undefined;
  }

  /** Stores the response of the create that recorded the key (after its commit). */
  async saveResponse(projectId: string, key: string, requestHash: string, response: string): Promise<void> {
    await this.db
      .update(t)
      .set({ response })
      .where(and(eq(t.projectId, projectId), eq(t.key, key), eq(t.requestHash, requestHash)));
  }

  /** Records a key with its response, unless the key is taken (creates that did not record it themselves). */
  async insertCompleted(row: typeof t.$inferInsert): Promise<void> {
    await this.db.insert(t).values(row).onConflictDoNothing();
  }

  /** Deletes up to `limit` keys expired at `now`; returns how many. */
  async purgeExpired(now: Date, limit: number): Promise<number> {
    const deleted = await this.db
      .delete(t)
      .where(
        sql`(${t.projectId}, ${t.key}) in (select ${t.projectId}, ${t.key} from ${t} where ${t.expireTime} <= ${now.toISOString()}::timestamptz limit ${limit})`,
      )
      .returning({ key: t.key });
    return deleted.length;
  }
}
