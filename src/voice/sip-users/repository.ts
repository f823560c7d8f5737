/** Storage of SIP users: the `sip_users` table, nothing else. */
import { and, eq, sql } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../../api/pagination.js";
import type { DbOrTx } from "../../db/client.js";
import { fixedRows } from "../../db/direct.js";
import { type NewSipUserRow, type SipUserRow, sipUsers as t } from "../../db/schema/index.js";

/** The primary key of `sip_users`: violated when the domain already has the user id. */
export const SIP_USER_KEY = "sip_users_pk";
/** Violated when the domain already has a user with the username. */
export const SIP_USERNAME_KEY = "sip_users_domain_username_key";

/** What the SIP edge needs of a user to check a digest answer (`credentials`). */
export interface StoredSipCredentials {
  projectId: string;
  sipDomainId: string;
  id: string;
  username: string;
  disabled: boolean;
  realm: string;
  ha1Md5: string;
  ha1Sha256: string;
}

/** `credentials`' statement, a fixed text (src/db/direct.ts): every REGISTER and INVITE answer reads it. */
const CREDENTIALS = `select project_id, sip_domain_id, id, username, disabled, realm, ha1_md5, ha1_sha256
  from sip_users where sip_domain_id = $1 and username = $2`;

export class SipUsersRepository {
  constructor(private readonly db: DbOrTx) {}

  async insert(row: NewSipUserRow): Promise<SipUserRow> {
    const [inserted] = await this.db.insert(t).values(row).returning();
    return inserted!;
  }

  /** A user of a project's domain; `lock` takes a row lock until the transaction ends. */
  async find(
    projectId: string,
    sipDomainId: string,
    id: string,
    lock = false,
  ): Promise<SipUserRow | undefined> {
    const query = this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), eq(t.sipDomainId, sipDomainId), eq(t.id, id)));
    const [row] = lock ? await query.for("update") : await query;
    return row;
  }

  /** The digest credentials of the domain's user `username` (case-sensitive); not in a transaction. */
  async credentials(sipDomainId: string, username: string): Promise<StoredSipCredentials | undefined> {
    const [r] = await fixedRows(this.db, CREDENTIALS, [sipDomainId, username]);
    if (r === undefined) return undefined;
    return {
      projectId: String(r[0]),
      sipDomainId: String(r[1]),
      id: String(r[2]),
      username: String(r[3]),
      disabled: r[4] === true,
      realm: String(r[5]),
      ha1Md5: String(r[6]),
      ha1Sha256: String(r[7]),
    };
  }

  /** Locks a user (by domain and id) until the transaction ends; undefined when there is none. */
  async lock(sipDomainId: string, id: string): Promise<SipUserRow | undefined> {
    const [row] = await this.db
      .select()
      .from(t)
      .where(and(eq(t.sipDomainId, sipDomainId), eq(t.id, id)))
      .for("update");
    return row;
  }

  /** The domain's users in keyset order, strictly after `after`. */
  list(sipDomainId: string, after: PagePosition | undefined, limit: number): Promise<SipUserRow[]> {
    return this.db
      .select()
      .from(t)
      .where(and(eq(t.sipDomainId, sipDomainId), keysetAfter(t.createTime, t.id, after)))
      .orderBy(...keysetOrder(t.createTime, t.id))
      .limit(limit);
  }

  /** Whether the domain has any user, disabled ones included. */
  async exists(sipDomainId: string): Promise<boolean> {
    const rows = await this.db
      .select({ one: sql<number>`1` })
      .from(t)
      .where(eq(t.sipDomainId, sipDomainId))
      .limit(1);
    return rows.length > 0;
  }

  async update(
    sipDomainId: string,
    id: string,
    values: Partial<Omit<NewSipUserRow, "sipDomainId" | "id" | "projectId" | "createTime">>,
  ): Promise<SipUserRow | undefined> {
    const [row] = await this.db
      .update(t)
      .set(values)
      .where(and(eq(t.sipDomainId, sipDomainId), eq(t.id, id)))
      .returning();
    return row;
  }

  /** Deletes the user (its registrations go with it); whether it existed. */
  async delete(sipDomainId: string, id: string): Promise<boolean> {
    const rows = await this.db
      .delete(t)
      .where(and(eq(t.sipDomainId, sipDomainId), eq(t.id, id)))
      .returning({ id: t.id });
    return rows.length > 0;
  }
}
