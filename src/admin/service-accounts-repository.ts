/** The `service_accounts` table with its bindings (`service_account_bindings`). */
import { and, asc, eq, inArray } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../api/pagination.js";
import type { Db } from "../db/client.js";
import {
  type NewServiceAccountRow,
  type ServiceAccountRow,
  serviceAccountBindings,
  serviceAccounts,
} from "../db/schema/service-accounts.js";
import type { Binding } from "./bindings.js";

export interface ServiceAccountWithBindings extends ServiceAccountRow {
  bindings: Binding[];
}

type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

async function writeBindings(tx: Tx, accountId: string, bindings: Binding[]): Promise<void> {
  if (bindings.length === 0) return;
  await tx
    .insert(serviceAccountBindings)
    .values(bindings.map((b, position) => ({ serviceAccountId: accountId, position, ...b })));
}

export class ServiceAccountsRepository {
  constructor(private readonly db: Db) {}

  /** Inserts the account; undefined when the id is taken. */
  async insert(
    row: NewServiceAccountRow,
    bindings: Binding[],
  ): Promise<ServiceAccountWithBindings | undefined> {
    return this.db.transaction(async (tx) => {
      const [account] = await tx.insert(serviceAccounts).values(row).onConflictDoNothing().returning();
      if (!account) return undefined;
      await writeBindings(tx, row.id, bindings);
      return { ...account, bindings };
    });
  }

  private async bindingsOf(ids: string[]): Promise<Map<string, Binding[]>> {
    const out = new Map<string, Binding[]>();
    if (ids.length === 0) return out;
    const rows = await this.db
      .select()
      .from(serviceAccountBindings)
      .where(inArray(serviceAccountBindings.serviceAccountId, ids))
      .orderBy(asc(serviceAccountBindings.serviceAccountId), asc(serviceAccountBindings.position));
    for (const r of rows) {
      const list = out.get(r.serviceAccountId) ?? [];
      list.push({ projectId: r.projectId, roles: r.roles, permissions: r.permissions });
      out.set(r.serviceAccountId, list);
    }
    return out;
  }

  async get(id: string): Promise<ServiceAccountWithBindings | undefined> {
    const [account] = await this.db.select().from(serviceAccounts).where(eq(serviceAccounts.id, id));
    if (!account) return undefined;
    return { ...account, bindings: (await this.bindingsOf([id])).get(id) ?? [] };
  }

  async list(after: PagePosition | undefined, limit: number): Promise<ServiceAccountWithBindings[]> {
    const accounts = await this.db
      .select()
      .from(serviceAccounts)
      .where(keysetAfter(serviceAccounts.createTime, serviceAccounts.id, after))
      .orderBy(...keysetOrder(serviceAccounts.createTime, serviceAccounts.id))
      .limit(limit);
    const bindings = await this.bindingsOf(accounts.map((a) => a.id));
    return accounts.map((a) => ({ ...a, bindings: bindings.get(a.id) ?? [] }));
  }

  async update(
    id: string,
    changes: { displayName?: string; disabled?: boolean; bindings?: Binding[] },
    at: Date,
  ): Promise<ServiceAccountWithBindings | undefined> {
    return this.db.transaction(async (tx) => {
      const set: Partial<NewServiceAccountRow> = { updateTime: at };
      if (changes.displayName !== undefined) set.displayName = changes.displayName;
      if (changes.disabled !== undefined) set.disabled = changes.disabled;
      const [account] = await tx
        .update(serviceAccounts)
        .set(set)
        .where(eq(serviceAccounts.id, id))
        .returning();
      if (!account) return undefined;
      if (changes.bindings !== undefined) {
        await tx.delete(serviceAccountBindings).where(eq(serviceAccountBindings.serviceAccountId, id));
        await writeBindings(tx, id, changes.bindings);
      }
      const rows = await tx
        .select()
        .from(serviceAccountBindings)
        .where(and(eq(serviceAccountBindings.serviceAccountId, id)))
        .orderBy(asc(serviceAccountBindings.position));
      return {
        ...account,
        bindings: rows.map((r) => ({ projectId: r.projectId, roles: r.roles, permissions: r.permissions })),
      };
    });
  }

  /** Deletes the account; its bindings, keys and access tokens go with it (cascade). */
  async delete(id: string): Promise<boolean> {
    const rows = await this.db
      .delete(serviceAccounts)
      .where(eq(serviceAccounts.id, id))
      .returning({ id: serviceAccounts.id });
    return rows.length > 0;
  }
}
