/** Storage of the number inventory: the `inventory_numbers` table, nothing else. */
import { and, asc, eq, gt, type SQL, sql } from "drizzle-orm";
import type { DbOrTx } from "../../db/client.js";
import { preparedOn } from "../../db/prepared.js";
import {
  type InventoryNumberRow,
  type NumberTypeValue,
  numberHoldings,
  inventoryNumbers as t,
} from "../../db/schema/index.js";
import { resultRows } from "../rows.js";

/** The attributes every number of a block gets. */
export interface BlockAttributes {
  countryCode: string;
  numberType: NumberTypeValue;
  voice: boolean;
  sms: boolean;
  mms: boolean;
  sku: string;
  activationSku: string;
}

export interface InventorySearch {
  countryCode: string;
  numberType: NumberTypeValue | undefined;
  /** An E.164 prefix (`+612`); empty for none. */
  prefix: string;
  voice: boolean;
  sms: boolean;
  mms: boolean;
  /** Numbers held, or in quarantine, at this time are not offered. */
  now: Date;
}

/** A number's lookup: prepared once per database handle (src/db/prepared.ts). */
function prepareReads(db: DbOrTx) {
  return {
    find: db
      .select()
      .from(t)
      .where(eq(t.phoneNumber, sql.placeholder("phoneNumber")))
      .prepare("inventory_numbers_find"),
  };
}

const preparedReads = new WeakMap<object, ReturnType<typeof prepareReads>>();

export class InventoryRepository {
  constructor(private readonly db: DbOrTx) {}

  /**
   * Adds the `size` numbers from `start` (E.164; the digits never change
   * length, see numbers.ts) with `attributes`. Numbers already in inventory
   * take the new attributes (`onConflict: "update"`) or are left as they are
   * (`"keep"`). One statement: `generate_series` writes the rows in the
   * database, whatever the size.
   */
  async upsertBlock(
    start: string,
    size: number,
    attributes: BlockAttributes,
    now: Date,
    onConflict: "update" | "keep",
  ): Promise<void> {
    const a = attributes;
    const conflict =
      onConflict === "update"
        ? sql`do update set country_code = excluded.country_code, number_type = excluded.number_type,
            voice = excluded.voice, sms = excluded.sms, mms = excluded.mms, sku = excluded.sku,
            activation_sku = excluded.activation_sku, update_time = excluded.update_time`
        : sql`do nothing`;
    const at = now.toISOString();
    await this.db.execute(sql`
      insert into ${t} (phone_number, country_code, number_type, voice, sms, mms, sku, activation_sku,
                        create_time, update_time)
      select '+' || (${start.slice(1)}::bigint + g)::text, ${a.countryCode}, ${a.numberType}, ${a.voice},
             ${a.sms}, ${a.mms}, ${a.sku}, ${a.activationSku}, ${at}::timestamptz, ${at}::timestamptz
      from generate_series(0, ${size - 1}::int) as g
      on conflict (phone_number) ${conflict}`);
  }

  async find(phoneNumber: string): Promise<InventoryNumberRow | undefined> {
    const reads = preparedOn(preparedReads, this.db, prepareReads);
    if (reads !== undefined) {
      const [row] = await reads.find.execute({ phoneNumber });
      return row;
    }
    const [row] = await this.db.select().from(t).where(eq(t.phoneNumber, phoneNumber));
    return row;
  }

  /**
   * What inventory holds from `start` to `end` (same length): how many
   * numbers, the first number missing (if any), and how many distinct
   * countries and types they have.
   */
  /** How many numbers of the block `start`, `start + 1`, ... (`size` numbers) inventory holds. */
  async countBlock(start: string, size: number): Promise<number> {
    const end = `+${(BigInt(start.slice(1)) + BigInt(size - 1)).toString()}`;
    const [row] = await this.db
      .select({ count: sql<number>`count(*)::int` })
      .from(t)
      .where(
        and(
          sql`${t.phoneNumber} between ${start} and ${end}`,
          sql`length(${t.phoneNumber}) = ${start.length}`,
        ),
      );
    return Number(row?.count ?? 0);
  }

  async summarize(
    start: string,
    end: string,
  ): Promise<{ count: number; firstMissing: string | undefined; countries: number; types: number }> {
    const inRange = and(
      sql`${t.phoneNumber} between ${start} and ${end}`,
      sql`length(${t.phoneNumber}) = ${start.length}`,
    );
    const [summary] = await this.db
      .select({
        count: sql<number>`count(*)::int`,
        countries: sql<number>`count(distinct ${t.countryCode})::int`,
        types: sql<number>`count(distinct ${t.numberType})::int`,
      })
      .from(t)
      .where(inRange);
    const rows = await this.db.execute(sql`
      select '+' || (${start.slice(1)}::bigint + g)::text as missing
      from generate_series(0, (${end.slice(1)}::bigint - ${start.slice(1)}::bigint)::int) as g
      where not exists (select 1 from ${t}
        where ${t.phoneNumber} = '+' || (${start.slice(1)}::bigint + g)::text)
      order by g limit 1`);
    const first = resultRows(rows)[0] as { missing?: string } | undefined;
    return {
      count: Number(summary?.count ?? 0),
      firstMissing: first?.missing,
      countries: Number(summary?.countries ?? 0),
      types: Number(summary?.types ?? 0),
    };
  }

  /** Free numbers matching `search`, in number order, strictly after `after`. */
  search(search: InventorySearch, after: string | undefined, limit: number): Promise<InventoryNumberRow[]> {
    const h = numberHoldings;
    const conditions: (SQL | undefined)[] = [
      eq(t.countryCode, search.countryCode),
      search.numberType === undefined ? undefined : eq(t.numberType, search.numberType),
      // The prefix is digits (validated), so it needs no escaping for like.
      search.prefix === "" ? undefined : sql`${t.phoneNumber} like ${`${search.prefix}%`}`,
      search.voice ? eq(t.voice, true) : undefined,
      search.sms ? eq(t.sms, true) : undefined,
      search.mms ? eq(t.mms, true) : undefined,
      after === undefined ? undefined : gt(t.phoneNumber, after),
      sql`not exists (select 1 from ${h} where ${h.phoneNumber} = ${t.phoneNumber}
            and (${h.releaseTime} is null or ${h.releaseTime} > ${search.now.toISOString()}::timestamptz))`,
    ];
    return this.db
      .select()
      .from(t)
      .where(and(...conditions))
      .orderBy(asc(t.phoneNumber))
      .limit(limit);
  }

  /** Whether the inventory holds any number at all. */
  async isEmpty(): Promise<boolean> {
    const [row] = await this.db.select({ n: t.phoneNumber }).from(t).limit(1);
    return row === undefined;
  }
}
