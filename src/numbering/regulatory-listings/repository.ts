/** Storage of regulatory listings: the `regulatory_listings` table, nothing else. */
import { and, eq, type SQL, sql } from "drizzle-orm";
import {
  keysetAfter,
  keysetOrder,
  type PagePosition,
  preparedPage,
  preparedPages,
} from "../../api/pagination.js";
import type { DbOrTx } from "../../db/client.js";
import { directClientOf, directRows } from "../../db/direct.js";
import { preparedOn } from "../../db/prepared.js";
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
    ...preparedPages(
      () => db.select().from(t).$dynamic(),
      t,
      eq(t.projectId, ph("projectId")),
      "regulatory_listings",
    ),
  };
}

const preparedReads = new WeakMap<object, ReturnType<typeof prepareReads>>();

/**
 * The same statements on the driver directly (src/db/direct.ts), with the
 * columns in schema order and each row mapped by hand to what drizzle makes
 * of it (test/numbering/regulatory-listings-direct.test.ts compares them).
 */
const COLUMNS =
  "id, project_id, display_name, address_lines, locality, administrative_area, postal_code, region_code, " +
  "person_given_name, person_family_name, business_name, valid, verified, create_time, update_time";
/**
 * The columns read: timestamps as epoch milliseconds (exact: they have
 * millisecond precision), which make a Date several times faster than the
 * text form does, whatever the session's DateStyle and TimeZone.
 */
const READ =
  "id, project_id, display_name, address_lines, locality, administrative_area, postal_code, region_code, " +
  "person_given_name, person_family_name, business_name, valid, verified, " +
  "(extract(epoch from create_time) * 1000)::float8, (extract(epoch from update_time) * 1000)::float8";
const ORDER = "order by create_time desc, id desc";
const DIRECT = {
  insert: `insert into regulatory_listings (${COLUMNS}) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) returning ${READ}`,
  find: `select ${READ} from regulatory_listings where project_id = $1 and id = $2`,
  firstPage: `select ${READ} from regulatory_listings where project_id = $1 ${ORDER} limit $2`,
  nextPage: `select ${READ} from regulatory_listings where project_id = $1 and (create_time, id) < ($2::timestamptz, $3::text) ${ORDER} limit $4`,
};

function listingRow(v: unknown[]): RegulatoryListingRow {
  return {
    id: v[0] as string,
    projectId: v[1] as string,
    displayName: v[2] as string,
    addressLines: v[3] as string[],
    locality: v[4] as string,
    administrativeArea: v[5] as string,
    postalCode: v[6] as string,
    regionCode: v[7] as string,
    personGivenName: v[8] as string | null,
    personFamilyName: v[9] as string | null,
    businessName: v[10] as string | null,
    valid: v[11] as boolean,
    verified: v[12] as boolean,
    createTime: new Date(v[13] as number),
    updateTime: new Date(v[14] as number),
  };
}

export class RegulatoryListingsRepository {
  constructor(private readonly db: DbOrTx) {}

  async insert(row: NewRegulatoryListingRow): Promise<RegulatoryListingRow> {
    const client = directClientOf(this.db);
    if (client !== undefined && INSERT_COLUMNS.every((c) => row[c] !== undefined)) {
      const full = row as FullListingRow;
      const [inserted] = await directRows(client, DIRECT.insert, [
        full.id,
        full.projectId,
        full.displayName,
        t.addressLines.mapToDriverValue(full.addressLines),
        full.locality,
        full.administrativeArea,
        full.postalCode,
        full.regionCode,
        full.personGivenName,
        full.personFamilyName,
        full.businessName,
        full.valid,
        full.verified,
        full.createTime.toISOString(),
        full.updateTime.toISOString(),
      ]);
      return listingRow(inserted!);
    }
    const reads = INSERT_COLUMNS.every((c) => row[c] !== undefined)
      ? preparedOn(preparedReads, this.db, prepareReads)
      : undefined;
    if (reads !== undefined) {
      const [inserted] = await reads.insert.execute(row as FullListingRow);
      return inserted!;
    }
    const [inserted] = await this.db.insert(t).values(row).returning();
    return inserted!;
  }

  async find(projectId: string, id: string): Promise<RegulatoryListingRow | undefined> {
    const client = directClientOf(this.db);
    if (client !== undefined) {
      const [row] = await directRows(client, DIRECT.find, [projectId, id]);
      return row === undefined ? undefined : listingRow(row);
    }
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

  /** The project's listings in keyset order, strictly after `after`. */
  async list(
    projectId: string,
    after: PagePosition | undefined,
    limit: number,
  ): Promise<RegulatoryListingRow[]> {
    const client = directClientOf(this.db);
    if (client !== undefined) {
      const rows =
        after === undefined
          ? await directRows(client, DIRECT.firstPage, [projectId, limit])
          : await directRows(client, DIRECT.nextPage, [
              projectId,
              after.createTime.toISOString(),
              after.id,
              limit,
            ]);
      return rows.map(listingRow);
    }
    const reads = preparedOn(preparedReads, this.db, prepareReads);
    if (reads !== undefined) return preparedPage(reads, { projectId }, after, limit);
    return this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), keysetAfter(t.createTime, t.id, after)))
      .orderBy(...keysetOrder(t.createTime, t.id))
      .limit(limit);
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
