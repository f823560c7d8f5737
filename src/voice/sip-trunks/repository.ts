/** Storage of carrier trunks: the `sip_trunks` table, nothing else. */
import { asc, eq } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../../api/pagination.js";
import type { DbOrTx } from "../../db/client.js";
import { type NewSipTrunkRow, type SipTrunkRow, sipTrunks as t } from "../../db/schema/index.js";

/** The primary key of `sip_trunks`: violated when the id is taken. */
export const SIP_TRUNK_KEY = "sip_trunks_pkey";

export class SipTrunksRepository {
  constructor(readonly db: DbOrTx) {}

  async insert(row: NewSipTrunkRow): Promise<SipTrunkRow> {
    const [inserted] = await this.db.insert(t).values(row).returning();
    return inserted!;
  }

  async find(id: string, lock = false): Promise<SipTrunkRow | undefined> {
    const query = this.db.select().from(t).where(eq(t.id, id));
    const [row] = lock ? await query.for("update") : await query;
    return row;
  }

  /** Trunks in keyset order, strictly after `after`. */
  list(after: PagePosition | undefined, limit: number): Promise<SipTrunkRow[]> {
    return this.db
      .select()
      .from(t)
      .where(keysetAfter(t.createTime, t.id, after))
      .orderBy(...keysetOrder(t.createTime, t.id))
      .limit(limit);
  }

  /** The enabled trunks, lowest priority first, then by id. */
  enabled(): Promise<SipTrunkRow[]> {
    return this.db.select().from(t).where(eq(t.enabled, true)).orderBy(asc(t.priority), asc(t.id));
  }

  async update(
    id: string,
    values: Partial<Omit<NewSipTrunkRow, "id" | "createTime">>,
  ): Promise<SipTrunkRow | undefined> {
    const [row] = await this.db.update(t).set(values).where(eq(t.id, id)).returning();
    return row;
  }

  async delete(id: string): Promise<boolean> {
    const rows = await this.db.delete(t).where(eq(t.id, id)).returning({ id: t.id });
    return rows.length > 0;
  }

  /** Runs `fn` in a transaction with a repository bound to it. */
  transaction<T>(fn: (repo: SipTrunksRepository) => Promise<T>): Promise<T> {
    return (this.db as { transaction: (f: (tx: DbOrTx) => Promise<T>) => Promise<T> }).transaction((tx) =>
      fn(new SipTrunksRepository(tx)),
    );
  }
}
