import { asc, eq, inArray } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../api/pagination.js";
import { credentialChangesOf, notifyCredentialChange } from "../auth/credential-cache.js";
import type { StoredKey } from "../auth/interceptor.js";
import type { Db } from "../db/client.js";
import { type ApiKeyRow, apiKeyBindings, apiKeys, type NewApiKeyRow } from "../db/schema/admin.js";

import type { Binding } from "./bindings.js";

export type { Binding } from "./bindings.js";

export interface ApiKeyWithBindings extends ApiKeyRow {
  bindings: Binding[];
}

export class ApiKeysRepository {
  constructor(private readonly db: Db) {}

  async insert(row: NewApiKeyRow, bindings: Binding[]): Promise<ApiKeyWithBindings> {
    return this.db.transaction(async (tx) => {
      const [key] = await tx.insert(apiKeys).values(row).returning();
      if (bindings.length > 0) {
        await tx
          .insert(apiKeyBindings)
          .values(bindings.map((b, position) => ({ apiKeyId: row.id, position, ...b })));
      }
      return { ...key!, bindings };
    });
  }

  private async bindingsOf(ids: string[]): Promise<Map<string, Binding[]>> {
    const out = new Map<string, Binding[]>();
    if (ids.length === 0) return out;
    const rows = await this.db
      .select()
      .from(apiKeyBindings)
      .where(inArray(apiKeyBindings.apiKeyId, ids))
      .orderBy(asc(apiKeyBindings.apiKeyId), asc(apiKeyBindings.position));
    for (const r of rows) {
      const list = out.get(r.apiKeyId) ?? [];
      list.push({ projectId: r.projectId, roles: r.roles, permissions: r.permissions });
      out.set(r.apiKeyId, list);
    }
    return out;
  }

  async get(id: string): Promise<ApiKeyWithBindings | undefined> {
    const [key] = await this.db.select().from(apiKeys).where(eq(apiKeys.id, id));
    if (!key) return undefined;
    return { ...key, bindings: (await this.bindingsOf([id])).get(id) ?? [] };
  }

  /**
   * What authentication needs, in one round trip (it runs on every request):
   * the key left-joined to its bindings.
   */
  async findForAuth(id: string): Promise<StoredKey | undefined> {
    const rows = await this.db
      .select({
        secretHash: apiKeys.secretHash,
        disabled: apiKeys.disabled,
        projectId: apiKeyBindings.projectId,
        roles: apiKeyBindings.roles,
        permissions: apiKeyBindings.permissions,
      })
      .from(apiKeys)
      .leftJoin(apiKeyBindings, eq(apiKeyBindings.apiKeyId, apiKeys.id))
      .where(eq(apiKeys.id, id))
      .orderBy(asc(apiKeyBindings.position));
    const first = rows[0];
    if (first === undefined) return undefined;
    const bindings: Binding[] = [];
    for (const r of rows) {
      if (r.projectId !== null) {
        bindings.push({ projectId: r.projectId, roles: r.roles ?? [], permissions: r.permissions ?? [] });
      }
    }
    return { secretHash: first.secretHash, disabled: first.disabled, bindings };
  }

  async list(after: PagePosition | undefined, limit: number): Promise<ApiKeyWithBindings[]> {
    const keys = await this.db
      .select()
      .from(apiKeys)
      .where(keysetAfter(apiKeys.createTime, apiKeys.id, after))
      .orderBy(...keysetOrder(apiKeys.createTime, apiKeys.id))
      .limit(limit);
    const bindings = await this.bindingsOf(keys.map((k) => k.id));
    return keys.map((k) => ({ ...k, bindings: bindings.get(k.id) ?? [] }));
  }

  async update(
    id: string,
    changes: { displayName?: string; disabled?: boolean; bindings?: Binding[] },
    at: Date,
  ): Promise<ApiKeyWithBindings | undefined> {
    const updated = await this.db.transaction(async (tx) => {
      const set: Partial<NewApiKeyRow> = { updateTime: at };
      if (changes.displayName !== undefined) set.displayName = changes.displayName;
      if (changes.disabled !== undefined) set.disabled = changes.disabled;
      const [key] = await tx.update(apiKeys).set(set).where(eq(apiKeys.id, id)).returning();
      if (!key) return undefined;
      // Every replica's credential cache forgets the key when this commits.
      await notifyCredentialChange(tx, id);
      if (changes.bindings !== undefined) {
        await tx.delete(apiKeyBindings).where(eq(apiKeyBindings.apiKeyId, id));
        if (changes.bindings.length > 0) {
          await tx
            .insert(apiKeyBindings)
            .values(changes.bindings.map((b, position) => ({ apiKeyId: id, position, ...b })));
        }
      }
      const rows = await tx
        .select()
        .from(apiKeyBindings)
        .where(eq(apiKeyBindings.apiKeyId, id))
        .orderBy(asc(apiKeyBindings.position));
      return {
        ...key,
        bindings: rows.map((r) => ({ projectId: r.projectId, roles: r.roles, permissions: r.permissions })),
      };
    });
    // This process's caches, before the change is answered.
    if (updated) credentialChangesOf(this.db).changed(id);
    return updated;
  }

  async delete(id: string): Promise<boolean> {
    const deleted = await this.db.transaction(async (tx) => {
      const rows = await tx.delete(apiKeys).where(eq(apiKeys.id, id)).returning({ id: apiKeys.id });
      if (rows.length > 0) await notifyCredentialChange(tx, id);
      return rows.length > 0;
    });
    if (deleted) credentialChangesOf(this.db).changed(id);
    return deleted;
  }
}
