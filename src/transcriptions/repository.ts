/** Storage of transcriptions: the `transcriptions` table, nothing else. */
import { and, eq } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../api/pagination.js";
import type { DbOrTx } from "../db/client.js";
import { type NewTranscriptionRow, type TranscriptionRow, transcriptions as t } from "../db/schema/index.js";

export class TranscriptionsRepository {
  constructor(private readonly db: DbOrTx) {}

  async insert(row: NewTranscriptionRow): Promise<TranscriptionRow> {
    const [inserted] = await this.db.insert(t).values(row).returning();
    return inserted!;
  }

  async find(projectId: string, id: string): Promise<TranscriptionRow | undefined> {
    const [row] = await this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), eq(t.id, id)));
    return row;
  }

  async findById(id: string): Promise<TranscriptionRow | undefined> {
    const [row] = await this.db.select().from(t).where(eq(t.id, id));
    return row;
  }

  /** The project's transcriptions (only `callId`'s, if given) in keyset order, strictly after `after`. */
  list(
    projectId: string,
    callId: string | undefined,
    after: PagePosition | undefined,
    limit: number,
  ): Promise<TranscriptionRow[]> {
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

  /** Moves a PENDING transcription to its terminal state; undefined when it is not PENDING (or gone). */
  async finish(
    id: string,
    changes: Pick<NewTranscriptionRow, "state" | "durationMs" | "utterances" | "updateTime">,
  ): Promise<TranscriptionRow | undefined> {
    const [row] = await this.db
      .update(t)
      .set(changes)
      .where(and(eq(t.id, id), eq(t.state, "PENDING")))
      .returning();
    return row;
  }

  /** Deletes the transcription; undefined when there was none. */
  async delete(projectId: string, id: string): Promise<TranscriptionRow | undefined> {
    const [row] = await this.db
      .delete(t)
      .where(and(eq(t.projectId, projectId), eq(t.id, id)))
      .returning();
    return row;
  }

  /** Deletes every transcription of a recording (the recording is being deleted). */
  async deleteForRecording(recordingId: string): Promise<number> {
    const rows = await this.db.delete(t).where(eq(t.recordingId, recordingId)).returning({ id: t.id });
    return rows.length;
  }
}
