/** Storage of REGISTER bindings: the `sip_registrations` table, nothing else. */
import { and, asc, eq, gt, lte } from "drizzle-orm";
import type { DbOrTx } from "../../db/client.js";
import { fixedRows } from "../../db/direct.js";
import {
  type NewSipRegistrationRow,
  type SipRegistrationRow,
  sipRegistrations as t,
  sipUsers as users,
} from "../../db/schema/index.js";

/** What a refresh changes in a binding (`refresh`). */
export interface BindingRefresh {
  sipDomainId: string;
  userId: string;
  contactUri: string;
  callId: string;
  cseq: number;
  sourceAddress: string;
  sourceTransport: string;
  instanceId: string;
  replicaId: string;
  userAgent: string;
  expiresAt: Date;
  now: Date;
}

/**
 * `refresh`'s statement, a fixed text (src/db/direct.ts): prepared once per
 * connection. Its rows: whether the row is the refreshed binding, then the
 * binding's columns, timestamps as epoch milliseconds (the same on both
 * drivers). The second part sees the table as it was before the update, so
 * it leaves the refreshed contact out and the first part gives it.
 */
const REFRESH = `
  with refreshed as (
    update sip_registrations set call_id = $4, cseq = $5, expires_at = $6::timestamptz,
      source_address = $7, source_transport = $8, instance_id = $9, replica_id = $10,
      user_agent = $11, update_time = $12::timestamptz
    where sip_domain_id = $1 and user_id = $2 and contact_uri = $3
      and (call_id <> $4 or cseq < $5) and expires_at > $12::timestamptz
      and exists (select 1 from sip_users u where u.sip_domain_id = $1 and u.id = $2 and not u.disabled)
    returning *
  ),
  bindings as (
    select true as refreshed, * from refreshed
    union all
    select false, r.* from sip_registrations r
    where r.sip_domain_id = $1 and r.user_id = $2 and r.contact_uri <> $3
      and r.expires_at > $12::timestamptz and exists (select 1 from refreshed)
  )
  select refreshed, sip_domain_id, user_id, contact_uri, source_address, source_transport, call_id,
    cseq, instance_id, replica_id, user_agent, (extract(epoch from expires_at) * 1000)::float8,
    (extract(epoch from create_time) * 1000)::float8, (extract(epoch from update_time) * 1000)::float8
  from bindings`;

function rowOf(r: unknown[]): SipRegistrationRow {
  return {
    sipDomainId: String(r[1]),
    userId: String(r[2]),
    contactUri: String(r[3]),
    sourceAddress: String(r[4]),
    sourceTransport: String(r[5]),
    callId: String(r[6]),
    cseq: Number(r[7]),
    instanceId: String(r[8]),
    replicaId: String(r[9]),
    userAgent: String(r[10]),
    expiresAt: new Date(Number(r[11])),
    createTime: new Date(Number(r[12])),
    updateTime: new Date(Number(r[13])),
  };
}

export class SipRegistrationsRepository {
  constructor(private readonly db: DbOrTx) {}

  /** Every binding of a user, expired ones included, by contact URI. */
  forUser(sipDomainId: string, userId: string): Promise<SipRegistrationRow[]> {
    return this.db
      .select()
      .from(t)
      .where(and(eq(t.sipDomainId, sipDomainId), eq(t.userId, userId)))
      .orderBy(asc(t.contactUri));
  }

  /**
   * The live bindings (expiring after `now`) of the enabled user `username`
   * of a domain, by contact URI.
   */
  liveForUsername(sipDomainId: string, username: string, now: Date): Promise<SipRegistrationRow[]> {
    return this.db
      .select({ registration: t })
      .from(t)
      .innerJoin(users, and(eq(users.sipDomainId, t.sipDomainId), eq(users.id, t.userId)))
      .where(
        and(
          eq(t.sipDomainId, sipDomainId),
          eq(users.username, username),
          eq(users.disabled, false),
          gt(t.expiresAt, now),
        ),
      )
      .orderBy(asc(t.contactUri))
      .then((rows) => rows.map((r) => r.registration));
  }

  /**
   * A phone's periodic refresh in one statement: the live binding of
   * `contactUri`, from another Call-ID or the same one with a lower CSeq,
   * of a user that exists and is enabled, gets the new Call-ID, CSeq,
   * expiry, source, replica and user agent. Returns the user's live bindings after it (by contact URI)
   * when it applied, or undefined when no binding matched (a new contact, an
   * expired binding, a CSeq out of order, a disabled or deleted user): the caller then takes the full path. A refresh never
   * changes how many bindings a user has, so it needs no lock of the user.
   */
  async refresh(r: BindingRefresh): Promise<SipRegistrationRow[] | undefined> {
    const rows = await fixedRows(this.db, REFRESH, [
      r.sipDomainId,
      r.userId,
      r.contactUri,
      r.callId,
      r.cseq,
      r.expiresAt.toISOString(),
      r.sourceAddress,
      r.sourceTransport,
      r.instanceId,
      r.replicaId,
      r.userAgent,
      r.now.toISOString(),
    ]);
    if (!rows.some((row) => row[0] === true)) return undefined;
    return rows
      .map(rowOf)
      .sort((a, b) => (a.contactUri < b.contactUri ? -1 : a.contactUri > b.contactUri ? 1 : 0));
  }

  /** Inserts a binding, or replaces the one with the same contact URI. */
  async upsert(row: NewSipRegistrationRow): Promise<void> {
    const { sipDomainId, userId, contactUri, createTime, ...rest } = row;
    await this.db
      .insert(t)
      .values(row)
      .onConflictDoUpdate({ target: [t.sipDomainId, t.userId, t.contactUri], set: rest });
  }

  async delete(sipDomainId: string, userId: string, contactUri: string): Promise<void> {
    await this.db
      .delete(t)
      .where(and(eq(t.sipDomainId, sipDomainId), eq(t.userId, userId), eq(t.contactUri, contactUri)));
  }

  async deleteForUser(sipDomainId: string, userId: string): Promise<void> {
    await this.db.delete(t).where(and(eq(t.sipDomainId, sipDomainId), eq(t.userId, userId)));
  }

  /** Deletes every binding of a domain (when it is deleted). */
  async deleteForDomain(sipDomainId: string): Promise<number> {
    const rows = await this.db.delete(t).where(eq(t.sipDomainId, sipDomainId)).returning({ id: t.userId });
    return rows.length;
  }

  /** Deletes the bindings that expired at or before `now`; how many. */
  async purgeExpired(now: Date): Promise<number> {
    const rows = await this.db.delete(t).where(lte(t.expiresAt, now)).returning({ id: t.userId });
    return rows.length;
  }
}
