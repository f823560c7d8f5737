/** The `service_account_keys` table: public keys only. */
import { and, count, eq } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../api/pagination.js";
import type { Db } from "../db/client.js";
import {
  type NewServiceAccountKeyRow,
  type ServiceAccountKeyRow,
  serviceAccountKeys,
  serviceAccounts,
} from "../db/schema/service-accounts.js";

/** A key with the state of its account, as the token endpoint needs it. */
export interface KeyForAssertion extends ServiceAccountKeyRow {
  accountDisabled: boolean;
}

export class ServiceAccountKeysRepository {
  constructor(private readonly db: Db) {}

  async insert(row: NewServiceAccountKeyRow): Promise<ServiceAccountKeyRow> {
    const [key] = await this.db.insert(serviceAccountKeys).values(row).returning();
    return key!;
  }

  /** How many keys account `accountId` has. */
  async count(accountId: string): Promise<number> {
    const [row] = await this.db
      .select({ n: count() })
      .from(serviceAccountKeys)
      .where(eq(serviceAccountKeys.serviceAccountId, accountId));
    return row?.n ?? 0;
  }

  async get(accountId: string, id: string): Promise<ServiceAccountKeyRow | undefined> {
    const [key] = await this.db
      .select()
      .from(serviceAccountKeys)
      .where(and(eq(serviceAccountKeys.serviceAccountId, accountId), eq(serviceAccountKeys.id, id)));
    return key;
  }

  async list(
    accountId: string,
    after: PagePosition | undefined,
    limit: number,
  ): Promise<ServiceAccountKeyRow[]> {
    return this.db
      .select()
      .from(serviceAccountKeys)
      .where(
        and(
          eq(serviceAccountKeys.serviceAccountId, accountId),
          keysetAfter(serviceAccountKeys.createTime, serviceAccountKeys.id, after),
        ),
      )
      .orderBy(...keysetOrder(serviceAccountKeys.createTime, serviceAccountKeys.id))
      .limit(limit);
  }

  async setDisabled(accountId: string, id: string, disabled: boolean, at: Date) {
    const [key] = await this.db
      .update(serviceAccountKeys)
      .set({ disabled, updateTime: at })
      .where(and(eq(serviceAccountKeys.serviceAccountId, accountId), eq(serviceAccountKeys.id, id)))
      .returning();
    return key;
  }

  /** Deletes the key; the access tokens obtained with it go with it (cascade). */
  async delete(accountId: string, id: string): Promise<boolean> {
    const rows = await this.db
      .delete(serviceAccountKeys)
      .where(and(eq(serviceAccountKeys.serviceAccountId, accountId), eq(serviceAccountKeys.id, id)))
      .returning({ id: serviceAccountKeys.id });
    return rows.length > 0;
  }

  /** The key `id` with its account's state. */
  async findForAssertion(id: string): Promise<KeyForAssertion | undefined> {
    const rows = await this.db
      .select({ key: serviceAccountKeys, accountDisabled: serviceAccounts.disabled })
      .from(serviceAccountKeys)
      .innerJoin(serviceAccounts, eq(serviceAccounts.id, serviceAccountKeys.serviceAccountId))
      .where(eq(serviceAccountKeys.id, id));
    const r = rows[0];
    return r === undefined ? undefined : { ...r.key, accountDisabled: r.accountDisabled };
  }

  /** Every key of account `accountId` with the account's state (assertions without `kid`). */
  async findForAccount(accountId: string): Promise<KeyForAssertion[]> {
    const rows = await this.db
      .select({ key: serviceAccountKeys, accountDisabled: serviceAccounts.disabled })
      .from(serviceAccountKeys)
      .innerJoin(serviceAccounts, eq(serviceAccounts.id, serviceAccountKeys.serviceAccountId))
      .where(eq(serviceAccountKeys.serviceAccountId, accountId))
      .orderBy(...keysetOrder(serviceAccountKeys.createTime, serviceAccountKeys.id))
      .limit(100);
    return rows.map((r) => ({ ...r.key, accountDisabled: r.accountDisabled }));
  }
}
