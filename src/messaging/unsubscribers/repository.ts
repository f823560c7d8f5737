/** Storage of unsubscribers: the `unsubscribers` table, nothing else. */
import { and, eq, sql } from "drizzle-orm";
import {
  keysetAfter,
  keysetOrder,
  type PagePosition,
  preparedPage,
  preparedPages,
} from "../../api/pagination.js";
import type { DbOrTx } from "../../db/client.js";
import { preparedOn } from "../../db/prepared.js";
import { type NewUnsubscriberRow, unsubscribers as t, type UnsubscriberRow } from "../../db/schema/index.js";

/** The unique index that makes `phone` unique within a project. */
export const PHONE_UNIQUE_INDEX = "unsubscribers_project_phone_key";

/** Get and List (without a phone filter): prepared once per database handle (src/db/prepared.ts). */
function prepareReads(db: DbOrTx) {
  const ph = sql.placeholder;
  return {
    find: db
      .select()
      .from(t)
      .where(and(eq(t.projectId, ph("projectId")), eq(t.id, ph("id"))))
      .prepare("unsubscribers_find"),
    ...preparedPages(
      () => db.select().from(t).$dynamic(),
      t,
      eq(t.projectId, ph("projectId")),
      "unsubscribers",
    ),
  };
}

const preparedReads = new WeakMap<object, ReturnType<typeof prepareReads>>();

export class UnsubscribersRepository {
  constructor(readonly db: DbOrTx) {}

  /** Runs `fn` in one transaction with a repository bound to it (never the outer database). */
  transaction<T>(fn: (repository: UnsubscribersRepository) => Promise<T>): Promise<T> {
    return (this.db as Extract<DbOrTx, { transaction: unknown }>).transaction((tx) =>
      fn(new UnsubscribersRepository(tx)),
    );
  }

  /** Inserts the row; a number already present in the project violates PHONE_UNIQUE_INDEX. */
  async insert(row: NewUnsubscriberRow): Promise<UnsubscriberRow> {
    const [inserted] = await this.db.insert(t).values(row).returning();
    return inserted!;
  }

  /**
   * Inserts the row unless the project already has an unsubscriber for its
   * phone (then nothing changes, also under concurrent inserts, and the
   * transaction stays usable). Returns the row inserted, or undefined.
   */
  async insertIfAbsent(row: NewUnsubscriberRow): Promise<UnsubscriberRow | undefined> {
    const [inserted] = await this.db
      .insert(t)
      .values(row)
      .onConflictDoNothing({ target: [t.projectId, t.phone] })
      .returning();
    return inserted;
  }

  async find(projectId: string, id: string): Promise<UnsubscriberRow | undefined> {
    const reads = preparedOn(preparedReads, this.db, prepareReads);
    if (reads !== undefined) {
      const [row] = await reads.find.execute({ projectId, id });
      return row;
    }
    const [row] = await this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), eq(t.id, id)));
    return row;
  }

  async findByPhone(projectId: string, phone: string): Promise<UnsubscriberRow | undefined> {
    const [row] = await this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), eq(t.phone, phone)));
    return row;
  }

  /** The project's unsubscribers (only `phone`'s, if given) in keyset order, strictly after `after`. */
  list(
    projectId: string,
    phone: string | undefined,
    after: PagePosition | undefined,
    limit: number,
  ): Promise<UnsubscriberRow[]> {
    const reads = phone === undefined ? preparedOn(preparedReads, this.db, prepareReads) : undefined;
    if (reads !== undefined) return preparedPage(reads, { projectId }, after, limit);
    return this.db
      .select()
      .from(t)
      .where(
        and(
          eq(t.projectId, projectId),
          phone === undefined ? undefined : eq(t.phone, phone),
          keysetAfter(t.createTime, t.id, after),
        ),
      )
      .orderBy(...keysetOrder(t.createTime, t.id))
      .limit(limit);
  }

  async updateLabels(
    projectId: string,
    id: string,
    labels: Record<string, string>,
    updateTime: Date,
  ): Promise<UnsubscriberRow | undefined> {
    const [row] = await this.db
      .update(t)
      .set({ labels, updateTime })
      .where(and(eq(t.projectId, projectId), eq(t.id, id)))
      .returning();
    return row;
  }

  /** Deletes the unsubscriber and returns it, or undefined when there was none. */
  async delete(projectId: string, id: string): Promise<UnsubscriberRow | undefined> {
    const [row] = await this.db
      .delete(t)
      .where(and(eq(t.projectId, projectId), eq(t.id, id)))
      .returning();
    return row;
  }
}
