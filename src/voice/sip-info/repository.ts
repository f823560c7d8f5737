/**
 * Storage of captured SIP dialogues: the `sip_captures` and
 * `sip_capture_messages` tables, nothing else. Written in batches by the
 * SIP edge's capture (src/telephony/sip-edge/capture.ts), read by GetSipInfo.
 */
import { asc, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import {
  sipCaptures as captures,
  sipCaptureMessages as messages,
  type NewSipCaptureMessageRow,
  type SipCaptureMessageRow,
  type SipCaptureRow,
} from "../../db/schema/index.js";

/** A call's capture row to create, or its omitted counts to add to. */
export interface CaptureUpsert {
  callId: string;
  sipCallId: string;
  /** Messages and bytes newly left out (added to the stored counts). */
  omittedMessages: number;
  omittedBytes: number;
  createTime: Date;
}

/** One batch: capture rows first (messages refer to them), then messages. */
export interface CaptureBatch {
  captures: CaptureUpsert[];
  messages: NewSipCaptureMessageRow[];
}

/** Rows per INSERT statement (PostgreSQL allows 65,535 parameters; 13 per message). */
const CHUNK = 500;

export class SipCaptureRepository {
  constructor(private readonly db: Db) {}

  /**
   * Writes a batch in one transaction. Messages already stored (same call
   * and position) are left as they are. Fails as a whole, for instance when
   * a call of the batch does not exist (any more).
   */
  async write(batch: CaptureBatch): Promise<void> {
    if (batch.captures.length === 0 && batch.messages.length === 0) return;
    await this.db.transaction(async (tx) => {
      for (let i = 0; i < batch.captures.length; i += CHUNK) {
        await tx
          .insert(captures)
          .values(batch.captures.slice(i, i + CHUNK))
          .onConflictDoUpdate({
            target: captures.callId,
            set: {
              omittedMessages: sql`${captures.omittedMessages} + excluded.omitted_messages`,
              omittedBytes: sql`${captures.omittedBytes} + excluded.omitted_bytes`,
            },
          });
      }
      for (let i = 0; i < batch.messages.length; i += CHUNK) {
        await tx
          .insert(messages)
          .values(batch.messages.slice(i, i + CHUNK))
          .onConflictDoNothing();
      }
    });
  }

  /** A call's capture and its messages in order; undefined when the call has none. */
  async forCall(
    callId: string,
  ): Promise<{ capture: SipCaptureRow; messages: SipCaptureMessageRow[] } | undefined> {
    const [capture] = await this.db.select().from(captures).where(eq(captures.callId, callId));
    if (capture === undefined) return undefined;
    const rows = await this.db
      .select()
      .from(messages)
      .where(eq(messages.callId, callId))
      .orderBy(asc(messages.seq));
    return { capture, messages: rows };
  }
}
