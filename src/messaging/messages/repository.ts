/** Storage of messages: the `messages` table, nothing else. */
import { and, eq, type SQL } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../../api/pagination.js";
import type { DbOrTx } from "../../db/client.js";
import { type MessageRow, type NewMessageRow, messages as t } from "../../db/schema/index.js";

export class MessagesRepository {
  constructor(private readonly db: DbOrTx) {}

  async insert(row: NewMessageRow): Promise<MessageRow> {
    const [inserted] = await this.db.insert(t).values(row).returning();
    return inserted!;
  }

  async find(projectId: string, id: string): Promise<MessageRow | undefined> {
    const [row] = await this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), eq(t.id, id)));
    return row;
  }

  /** The project's messages in keyset order (newest first), strictly after `after`. */
  list(
    projectId: string,
    after: PagePosition | undefined,
    limit: number,
    where?: (table: typeof t) => SQL | undefined,
  ): Promise<MessageRow[]> {
    return this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), where?.(t), keysetAfter(t.createTime, t.id, after)))
      .orderBy(...keysetOrder(t.createTime, t.id))
      .limit(limit);
  }
}
