import { eq, inArray } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../api/pagination.js";
import { credentialChangesOf, notifyCredentialChange } from "../auth/credential-cache.js";
import type { Db } from "../db/client.js";
import { type NewProjectRow, type ProjectRow, projects } from "../db/schema/admin.js";
import { notifySigningKeyChange, signingKeyChangesOf } from "../events/signing-keys.js";

export class ProjectsRepository {
  constructor(private readonly db: Db) {}

  /** Inserts; returns undefined when the id is taken. */
  async insert(row: NewProjectRow): Promise<ProjectRow | undefined> {
    const [created] = await this.db.insert(projects).values(row).onConflictDoNothing().returning();
    return created;
  }

  async get(id: string): Promise<ProjectRow | undefined> {
    const [row] = await this.db.select().from(projects).where(eq(projects.id, id));
    return row;
  }

  async list(after: PagePosition | undefined, limit: number): Promise<ProjectRow[]> {
    return this.db
      .select()
      .from(projects)
      .where(keysetAfter(projects.createTime, projects.id, after))
      .orderBy(...keysetOrder(projects.createTime, projects.id))
      .limit(limit);
  }

  /** Deletes the project and (foreign keys cascade) every API key binding on it. */
  async delete(id: string): Promise<ProjectRow | undefined> {
    const row = await this.db.transaction(async (tx) => {
      const [deleted] = await tx.delete(projects).where(eq(projects.id, id)).returning();
      // The bindings went with it: every replica's credential cache forgets every key on commit.
      if (deleted) {
        await notifyCredentialChange(tx, undefined);
        await notifySigningKeyChange(tx, id);
      }
      return deleted;
    });
    if (row) {
      credentialChangesOf(this.db).changed(undefined);
      signingKeyChangesOf(this.db).changed(id);
    }
    return row;
  }

  /** Replaces the project's signing key; every replica's call engine uses the new one from the commit on. */
  async setSigningKey(id: string, key: string, at: Date): Promise<ProjectRow | undefined> {
    const row = await this.db.transaction(async (tx) => {
      const [updated] = await tx
        .update(projects)
        .set({ signingKey: key, signingKeyCreateTime: at })
        .where(eq(projects.id, id))
        .returning();
      if (updated) await notifySigningKeyChange(tx, id);
      return updated;
    });
    if (row) signingKeyChangesOf(this.db).changed(id);
    return row;
  }

  /** The ids among `ids` with no project. */
  async missing(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const found = await this.db.select({ id: projects.id }).from(projects).where(inArray(projects.id, ids));
    const have = new Set(found.map((r) => r.id));
    return ids.filter((id) => !have.has(id));
  }
}
