/** Storage of recordings: the `recordings` table, nothing else. */
import { and, eq } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../api/pagination.js";
import type { DbOrTx } from "../db/client.js";
import { type NewRecordingRow, type RecordingRow, recordings as t } from "../db/schema/index.js";

export class RecordingsRepository {
  constructor(private readonly db: DbOrTx) {}

  async insert(row: NewRecordingRow): Promise<RecordingRow> {
    const [inserted] = await this.db.insert(t).values(row).returning();
    return inserted!;
  }

  async find(projectId: string, id: string): Promise<RecordingRow | undefined> {
    const [row] = await this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), eq(t.id, id)));
    return row;
  }

  async findById(id: string): Promise<RecordingRow | undefined> {
    const [row] = await this.db.select().from(t).where(eq(t.id, id));
    return row;
  }

  /** The project's recordings (only `callId`'s, if given) in keyset order, strictly after `after`. */
  list(
    projectId: string,
    callId: string | undefined,
    after: PagePosition | undefined,
    limit: number,
  ): Promise<RecordingRow[]> {
    return this.db
      .select()
      .from(t)
      .where(
        and(
          eq(t.projectId, projectId),
          callId === undefined ? undefined : eq(t.callId, callId),
          keysetAfter(t.createTime, t.id, after),
        ),
      )
      .orderBy(...keysetOrder(t.createTime, t.id))
      .limit(limit);
  }

  /**
   * Moves a PENDING recording to its terminal state (and, when given, the
   * channel count of its audio); undefined when it is not PENDING (or gone).
   */
  async finish(
    id: string,
    changes: Pick<
      NewRecordingRow,
      "state" | "durationMs" | "errorCode" | "renditions" | "startTime" | "completeTime"
    > &
      Partial<Pick<NewRecordingRow, "channelCount">>,
  ): Promise<RecordingRow | undefined> {
    const [row] = await this.db
      .update(t)
      .set(changes)
      .where(and(eq(t.id, id), eq(t.state, "PENDING")))
      .returning();
    return row;
  }

  /** Deletes the recording and returns it, or undefined when there was none. */
  async delete(projectId: string, id: string): Promise<RecordingRow | undefined> {
    const [row] = await this.db
      .delete(t)
      .where(and(eq(t.projectId, projectId), eq(t.id, id)))
      .returning();
    return row;
  }
}
