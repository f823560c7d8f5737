/** Storage of REGISTER bindings: the `sip_registrations` table, nothing else. */
import { and, asc, eq, gt, lte } from "drizzle-orm";
import type { DbOrTx } from "../../db/client.js";
import {
  type NewSipRegistrationRow,
  type SipRegistrationRow,
  sipRegistrations as t,
  sipUsers as users,
} from "../../db/schema/index.js";

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
