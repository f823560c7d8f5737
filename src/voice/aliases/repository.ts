/** Storage of SIP domain aliases: the `sip_domain_aliases` table, nothing else. */
import { and, eq } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../../api/pagination.js";
import type { DbOrTx } from "../../db/client.js";
import {
  type NewSipDomainAliasRow,
  type SipDomainAliasRow,
  sipDomainAliases as t,
} from "../../db/schema/index.js";

/** The primary key of `sip_domain_aliases`: violated when the domain already has the alias id. */
export const ALIAS_KEY = "sip_domain_aliases_pk";

export class AliasesRepository {
  constructor(private readonly db: DbOrTx) {}

  async insert(row: NewSipDomainAliasRow): Promise<SipDomainAliasRow> {
    const [inserted] = await this.db.insert(t).values(row).returning();
    return inserted!;
  }

  async find(projectId: string, sipDomainId: string, id: string): Promise<SipDomainAliasRow | undefined> {
    const [row] = await this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), eq(t.sipDomainId, sipDomainId), eq(t.id, id)));
    return row;
  }

  /** The domain's aliases in keyset order, strictly after `after`. */
  list(sipDomainId: string, after: PagePosition | undefined, limit: number): Promise<SipDomainAliasRow[]> {
    return this.db
      .select()
      .from(t)
      .where(and(eq(t.sipDomainId, sipDomainId), keysetAfter(t.createTime, t.id, after)))
      .orderBy(...keysetOrder(t.createTime, t.id))
      .limit(limit);
  }

  async update(
    sipDomainId: string,
    id: string,
    values: Pick<NewSipDomainAliasRow, "displayName" | "loadBalancer" | "updateTime">,
  ): Promise<SipDomainAliasRow | undefined> {
    const [row] = await this.db
      .update(t)
      .set(values)
      .where(and(eq(t.sipDomainId, sipDomainId), eq(t.id, id)))
      .returning();
    return row;
  }

  /** Deletes the alias; whether it existed. */
  async delete(sipDomainId: string, id: string): Promise<boolean> {
    const rows = await this.db
      .delete(t)
      .where(and(eq(t.sipDomainId, sipDomainId), eq(t.id, id)))
      .returning({ id: t.id });
    return rows.length > 0;
  }
}
