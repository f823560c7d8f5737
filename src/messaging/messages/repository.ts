/** Storage of messages: the `messages` table, nothing else. */
import { and, desc, eq, inArray, type SQL } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../../api/pagination.js";
import type { DbOrTx } from "../../db/client.js";
import {
  type MessageRow,
  type MessageStatusValue,
  type NewMessageRow,
  messages as t,
} from "../../db/schema/index.js";

/** What a status change sets besides the status. */
export interface StatusChange {
  status: MessageStatusValue;
  sendTime?: Date;
  deliverTime?: Date;
  errorCode?: string;
  errorMessage?: string;
}

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

  /**
   * Moves the message to `change.status` if it is in one of `from` now (the
   * check and the change are one statement, so two movers never both win).
   * Returns the changed row, or undefined when it was not in `from`.
   */
  async changeStatus(
    projectId: string,
    id: string,
    from: readonly MessageStatusValue[],
    change: StatusChange,
  ): Promise<MessageRow | undefined> {
    const [row] = await this.db
      .update(t)
      .set(change)
      .where(and(eq(t.projectId, projectId), eq(t.id, id), inArray(t.status, [...from])))
      .returning();
    return row;
  }

  /** The message whose opt-out link token hashes to `hash`. */
  async findByOptOutHash(hash: string): Promise<MessageRow | undefined> {
    const [row] = await this.db.select().from(t).where(eq(t.optOutTokenHash, hash));
    return row;
  }

  /** The latest outgoing message of `projectId` from `from` to `to`. */
  async latestOutgoing(projectId: string, from: string, to: string): Promise<MessageRow | undefined> {
    const [row] = await this.db
      .select()
      .from(t)
      .where(and(eq(t.from, from), eq(t.to, to), eq(t.projectId, projectId), eq(t.direction, "OUTGOING")))
      .orderBy(desc(t.createTime), desc(t.id))
      .limit(1);
    return row;
  }

  /** Outgoing messages still on their way (QUEUED, SENDING, SENT), oldest first, at most `limit`. */
  inFlight(limit: number): Promise<MessageRow[]> {
    return this.db
      .select()
      .from(t)
      .where(and(eq(t.direction, "OUTGOING"), inArray(t.status, ["QUEUED", "SENDING", "SENT"])))
      .orderBy(t.createTime, t.id)
      .limit(limit);
  }
}
