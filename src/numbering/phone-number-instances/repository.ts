/**
 * Storage of phone number instances: the `phone_number_instances` table
 * (read together with the attached regulatory listing, which `compliant`
 * needs).
 */
import { and, eq, getTableColumns, isNull, ne, type SQL, sql } from "drizzle-orm";
import {
  keysetAfter,
  keysetOrder,
  type PagePosition,
  preparedPage,
  preparedPages,
} from "../../api/pagination.js";
import type { DbOrTx } from "../../db/client.js";
import { preparedOn } from "../../db/prepared.js";
import {
  type NewPhoneNumberInstanceRow,
  numberHoldings,
  type PhoneNumberInstanceRow,
  type RegulatoryListingRow,
  regulatoryListings,
  phoneNumberInstances as t,
} from "../../db/schema/index.js";

/** An instance with its attached listing (null when none is attached). */
export interface InstanceRecord {
  instance: PhoneNumberInstanceRow;
  listing: RegulatoryListingRow | null;
}

export interface InstanceListFilter {
  /** An E.164 prefix: instances holding a number that starts with it. Empty: all. */
  prefix: string;
  includeDeleted: boolean;
}

export type InstanceChanges = Partial<
  Pick<
    NewPhoneNumberInstanceRow,
    | "projectId"
    | "displayName"
    | "labels"
    | "incomingMessageHandlerUris"
    | "incomingCallHandlerUris"
    | "callRecordingTrigger"
    | "lifecycleState"
    | "regulatoryListingId"
    | "rangeEnd"
    | "rangeSize"
    | "activateTime"
    | "deleteTime"
  >
> & { updateTime: Date };

/**
 * Get, List without a prefix or deleted instances, and the number lookup
 * (every CreateCall's caller ID): prepared once per database handle
 * (src/db/prepared.ts).
 */
function prepareReads(db: DbOrTx) {
  const ph = sql.placeholder;
  const select = () =>
    db
      .select({ instance: getTableColumns(t), listing: getTableColumns(regulatoryListings) })
      .from(t)
      .leftJoin(regulatoryListings, eq(regulatoryListings.id, t.regulatoryListingId));
  const live = and(eq(t.projectId, ph("projectId")), ne(t.lifecycleState, "DELETED"));
  return {
    find: select()
      .where(and(eq(t.projectId, ph("projectId")), eq(t.id, ph("id"))))
      .prepare("phone_number_instances_find"),
    ...preparedPages(() => select().$dynamic(), t, live, "phone_number_instances"),
    holderOf: select()
      .innerJoin(numberHoldings, eq(numberHoldings.instanceId, t.id))
      .where(and(eq(numberHoldings.phoneNumber, ph("phoneNumber")), isNull(numberHoldings.releaseTime)))
      .prepare("phone_number_instances_holder_of"),
  };
}

const preparedReads = new WeakMap<object, ReturnType<typeof prepareReads>>();

export class PhoneNumberInstancesRepository {
  constructor(private readonly db: DbOrTx) {}

  async insert(row: NewPhoneNumberInstanceRow): Promise<PhoneNumberInstanceRow> {
    const [inserted] = await this.db.insert(t).values(row).returning();
    return inserted!;
  }

  private selectWithListing() {
    return this.db
      .select({ instance: getTableColumns(t), listing: getTableColumns(regulatoryListings) })
      .from(t)
      .leftJoin(regulatoryListings, eq(regulatoryListings.id, t.regulatoryListingId));
  }

  async find(projectId: string, id: string): Promise<InstanceRecord | undefined> {
    const reads = preparedOn(preparedReads, this.db, prepareReads);
    if (reads !== undefined) {
      const [row] = await reads.find.execute({ projectId, id });
      return row;
    }
    const [row] = await this.selectWithListing().where(and(eq(t.projectId, projectId), eq(t.id, id)));
    return row;
  }

  /**
   * The instance, its row locked until the transaction ends (`for update`):
   * concurrent splits, moves and state changes of one instance run one after
   * the other, each seeing what the previous one committed.
   */
  async lock(projectId: string, id: string): Promise<PhoneNumberInstanceRow | undefined> {
    const [row] = await this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), eq(t.id, id)))
      .for("update");
    return row;
  }

  /** The project's instances matching `filter`, in keyset order, strictly after `after`. */
  list(
    projectId: string,
    filter: InstanceListFilter,
    after: PagePosition | undefined,
    limit: number,
  ): Promise<InstanceRecord[]> {
    const reads =
      filter.prefix === "" && !filter.includeDeleted
        ? preparedOn(preparedReads, this.db, prepareReads)
        : undefined;
    if (reads !== undefined) return preparedPage(reads, { projectId }, after, limit);
    return this.selectWithListing()
      .where(
        and(
          eq(t.projectId, projectId),
          filter.includeDeleted ? undefined : ne(t.lifecycleState, "DELETED"),
          filter.prefix === "" ? undefined : holdsPrefix(filter.prefix),
          keysetAfter(t.createTime, t.id, after),
        ),
      )
      .orderBy(...keysetOrder(t.createTime, t.id))
      .limit(limit);
  }

  async update(id: string, changes: InstanceChanges): Promise<PhoneNumberInstanceRow> {
    const [row] = await this.db.update(t).set(changes).where(eq(t.id, id)).returning();
    return row!;
  }

  /** An instance that is not deleted with `listingId` attached, if any. */
  async anyAttached(listingId: string): Promise<PhoneNumberInstanceRow | undefined> {
    const [row] = await this.db
      .select()
      .from(t)
      .where(and(eq(t.regulatoryListingId, listingId), ne(t.lifecycleState, "DELETED")))
      .limit(1);
    return row;
  }

  /** The instance currently holding `phoneNumber` (a number of its range, or itself), if any. */
  async holderOf(phoneNumber: string): Promise<InstanceRecord | undefined> {
    const reads = preparedOn(preparedReads, this.db, prepareReads);
    const h = numberHoldings;
    const [row] = await (reads !== undefined
      ? reads.holderOf.execute({ phoneNumber })
      : this.selectWithListing()
          .innerJoin(h, eq(h.instanceId, t.id))
          .where(and(eq(h.phoneNumber, phoneNumber), isNull(h.releaseTime))));
    return row === undefined ? undefined : { instance: row.instance, listing: row.listing };
  }
}

/**
 * An instance holds a number starting with `prefix` when its range
 * [phone_number, range_end] (one number for a single instance) meets the
 * numbers of its length that start with the prefix: from the prefix padded
 * with 0s to the prefix padded with 9s.
 */
function holdsPrefix(prefix: string): SQL {
  const len = sql`length(${t.phoneNumber})`;
  return sql`(${prefix.length} <= ${len}
    and ${t.phoneNumber} <= rpad(${prefix}, ${len}, '9')
    and coalesce(${t.rangeEnd}, ${t.phoneNumber}) >= rpad(${prefix}, ${len}, '0'))`;
}
