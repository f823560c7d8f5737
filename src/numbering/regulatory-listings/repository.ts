/** Storage of regulatory listings: the `regulatory_listings` table, nothing else. */
import { and, eq, is, type SQL, sql } from "drizzle-orm";
import { PgTransaction } from "drizzle-orm/pg-core";
import { keysetAfter, keysetOrder, type PagePosition } from "../../api/pagination.js";
import type { DbOrTx } from "../../db/client.js";
import {
  type NewRegulatoryListingRow,
  type RegulatoryListingRow,
  regulatoryListings as t,
} from "../../db/schema/index.js";

export interface ListingSearch {
  regionCode: string;
  /** Only verified listings. */
  verifiedOnly: boolean;
}

/** Every column a create sets (all of them): the prepared insert's placeholders. */
const INSERT_COLUMNS = [
  "id",
  "projectId",
  "displayName",
  "addressLines",
  "locality",
  "administrativeArea",
  "postalCode",
  "regionCode",
  "personGivenName",
  "personFamilyName",
  "businessName",
  "valid",
  "verified",
  "createTime",
  "updateTime",
] as const satisfies readonly (keyof NewRegulatoryListingRow)[];

type FullListingRow = Required<Pick<NewRegulatoryListingRow, (typeof INSERT_COLUMNS)[number]>>;

/**
 * The statements every create, get and list makes, built once per database
 * handle (drizzle's query building costs more CPU than the query itself
 * here). Placeholder values still go through each column's encoding.
 */
function prepareReads(db: DbOrTx) {
  const ph = sql.placeholder;
  return {
    insert: db
      .insert(t)
      .values(Object.fromEntries(INSERT_COLUMNS.map((c) => [c, ph(c)])) as unknown as NewRegulatoryListingRow)
      .returning()
      .prepare("regulatory_listings_insert"),
    find: db
      .select()
      .from(t)
      .where(and(eq(t.projectId, ph("projectId")), eq(t.id, ph("id"))))
      .prepare("regulatory_listings_find"),
    firstPage: db
      .select()
      .from(t)
      .where(eq(t.projectId, ph("projectId")))
      .orderBy(...keysetOrder(t.createTime, t.id))
      .limit(ph("limit"))
      .prepare("regulatory_listings_first_page"),
    nextPage: db
      .select()
      .from(t)
      .where(
        and(
          eq(t.projectId, ph("projectId")),
          // keysetAfter() with placeholders
          sql`(${t.createTime}, ${t.id}) < (${ph("afterTime")}::timestamptz, ${ph("afterId")}::text)`,
        ),
      )
      .orderBy(...keysetOrder(t.createTime, t.id))
      .limit(ph("limit"))
      .prepare("regulatory_listings_next_page"),
  };
}

const preparedReads = new WeakMap<DbOrTx, ReturnType<typeof prepareReads>>();

export class RegulatoryListingsRepository {
  constructor(private readonly db: DbOrTx) {}

  private get reads(): ReturnType<typeof prepareReads> {
    let reads = preparedReads.get(this.db);
    if (reads === undefined) {
      reads = prepareReads(this.db);
      preparedReads.set(this.db, reads);
    }
    return reads;
  }

  async insert(row: NewRegulatoryListingRow): Promise<RegulatoryListingRow> {
    // Prepared on the database handle, not on a short-lived transaction's.
    if (!is(this.db, PgTransaction) && INSERT_COLUMNS.every((c) => row[c] !== undefined)) {
      const [inserted] = await this.reads.insert.execute(row as FullListingRow);
      return inserted!;
    }
    const [inserted] = await this.db.insert(t).values(row).returning();
    return inserted!;
  }

  async find(projectId: string, id: string): Promise<RegulatoryListingRow | undefined> {
    const [row] = await this.reads.find.execute({ projectId, id });
    return row;
  }

  /** The project's listings in keyset order, strictly after `after`. */
  list(projectId: string, after: PagePosition | undefined, limit: number): Promise<RegulatoryListingRow[]> {
    if (after === undefined) return this.reads.firstPage.execute({ projectId, limit });
    return this.reads.nextPage.execute({
      projectId,
      limit,
      afterTime: after.createTime.toISOString(),
      afterId: after.id,
    });
  }

  /** The project's valid listings in a region (verified only, if asked), in keyset order. */
  search(
    projectId: string,
    search: ListingSearch,
    after: PagePosition | undefined,
    limit: number,
  ): Promise<RegulatoryListingRow[]> {
    return this.page(
      and(
        eq(t.projectId, projectId),
        eq(t.regionCode, search.regionCode),
        eq(t.valid, true),
        search.verifiedOnly ? eq(t.verified, true) : undefined,
      )!,
      after,
      limit,
    );
  }

  async updateDisplayName(
    projectId: string,
    id: string,
    displayName: string,
    updateTime: Date,
  ): Promise<RegulatoryListingRow | undefined> {
    const [row] = await this.db
      .update(t)
      .set({ displayName, updateTime })
      .where(and(eq(t.projectId, projectId), eq(t.id, id)))
      .returning();
    return row;
  }

  /**
   * The listing, its row locked until the transaction ends (`for update`):
   * an instance attaching it concurrently (its foreign key check takes a key
   * share lock) waits, or makes this wait, so a delete never misses it.
   */
  async lock(projectId: string, id: string): Promise<RegulatoryListingRow | undefined> {
    const [row] = await this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), eq(t.id, id)))
      .for("update");
    return row;
  }

  /** Sets the outcome of the operator's review (the fields given). */
  async setReview(
    projectId: string,
    id: string,
    review: { valid?: boolean; verified?: boolean },
    updateTime: Date,
  ): Promise<RegulatoryListingRow | undefined> {
    const [row] = await this.db
      .update(t)
      .set({ ...review, updateTime })
      .where(and(eq(t.projectId, projectId), eq(t.id, id)))
      .returning();
    return row;
  }

  /** Deletes the listing; whether it existed. */
  async delete(projectId: string, id: string): Promise<boolean> {
    const rows = await this.db
      .delete(t)
      .where(and(eq(t.projectId, projectId), eq(t.id, id)))
      .returning({ id: t.id });
    return rows.length > 0;
  }

  private page(where: SQL, after: PagePosition | undefined, limit: number): Promise<RegulatoryListingRow[]> {
    return this.db
      .select()
      .from(t)
      .where(and(where, keysetAfter(t.createTime, t.id, after)))
      .orderBy(...keysetOrder(t.createTime, t.id))
      .limit(limit);
  }
}
