/**
 * Storage of number holdings: the `number_holdings` table, nothing else.
 * One row per number held by an instance (a range of 100 has 100 rows); the
 * primary key on the number is what makes provisioning race-free.
 */
import { and, asc, eq, isNull, ne, or, sql } from "drizzle-orm";
import type { DbOrTx } from "../../db/client.js";
import { type NumberHoldingRow, numberHoldings as t } from "../../db/schema/index.js";
import { resultRows } from "../rows.js";

export class NumberHoldingsRepository {
  constructor(private readonly db: DbOrTx) {}

  /**
   * Makes `instanceId` the holder of the `size` numbers from `start`, each
   * unless it is held, or in quarantine, at `now`; returns how many it took.
   * One statement: concurrent claims of a number wait for each other on its
   * primary key, and exactly one takes it. A caller taking fewer than `size`
   * must roll back.
   */
  async claim(instanceId: string, start: string, size: number, now: Date): Promise<number> {
    const at = now.toISOString();
    const rows = await this.db.execute(sql`
      insert into ${t} (phone_number, instance_id, release_time)
      select '+' || (${start.slice(1)}::bigint + g)::text, ${instanceId}, null
      from generate_series(0, ${size - 1}::int) as g
      on conflict (phone_number) do update set instance_id = excluded.instance_id, release_time = null
        where ${t.releaseTime} is not null and ${t.releaseTime} <= ${at}::timestamptz
      returning phone_number`);
    return resultRows(rows).length;
  }

  /**
   * The holdings from `start` to `end` (same length) that are held or in
   * quarantine at `now` by an instance other than `claimant`, in order.
   */
  blocking(
    start: string,
    end: string,
    now: Date,
    claimant: string,
    limit: number,
  ): Promise<NumberHoldingRow[]> {
    return this.db
      .select()
      .from(t)
      .where(
        and(
          sql`${t.phoneNumber} between ${start} and ${end}`,
          ne(t.instanceId, claimant),
          sql`length(${t.phoneNumber}) = ${start.length}`,
          or(isNull(t.releaseTime), sql`${t.releaseTime} > ${now.toISOString()}::timestamptz`),
        ),
      )
      .orderBy(asc(t.phoneNumber))
      .limit(limit);
  }

  /** The current holding of a number (held, in quarantine or released), if any. */
  async find(phoneNumber: string): Promise<NumberHoldingRow | undefined> {
    const [row] = await this.db.select().from(t).where(eq(t.phoneNumber, phoneNumber));
    return row;
  }

  /** Hands the numbers of `from` from `start` on (same length) to `to` (SplitRange). */
  async transfer(from: string, to: string, start: string): Promise<number> {
    const rows = await this.db
      .update(t)
      .set({ instanceId: to })
      .where(
        and(
          eq(t.instanceId, from),
          sql`${t.phoneNumber} >= ${start}`,
          sql`length(${t.phoneNumber}) = ${start.length}`,
        ),
      )
      .returning({ n: t.phoneNumber });
    return rows.length;
  }

  /** Starts the quarantine of every number `instanceId` holds: free again at `releaseTime`. */
  async release(instanceId: string, releaseTime: Date): Promise<void> {
    await this.db
      .update(t)
      .set({ releaseTime })
      .where(and(eq(t.instanceId, instanceId), isNull(t.releaseTime)));
  }

  /** The numbers `instanceId` holds (not released), in order. */
  async numbersOf(instanceId: string): Promise<string[]> {
    const rows = await this.db
      .select({ n: t.phoneNumber })
      .from(t)
      .where(and(eq(t.instanceId, instanceId), isNull(t.releaseTime)))
      .orderBy(asc(t.phoneNumber));
    return rows.map((r) => r.n);
  }
}
