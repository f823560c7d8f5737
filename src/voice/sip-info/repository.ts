/**
 * Storage of captured SIP dialogues: the `sip_captures` and
 * `sip_capture_messages` tables, nothing else. Written in batches by the
 * SIP edge's capture (src/telephony/sip-edge/capture.ts), read by GetSipInfo.
 */
import { asc, eq } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import { fixedRows } from "../../db/direct.js";
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

/**
 * A batch in one statement, so all or nothing: the capture rows (created, or
 * their omitted counts added to) in a data-modifying WITH, then the messages
 * (those already stored left as they are). Every column is one array
 * parameter (`unnest`), so the text is fixed and prepared once per
 * connection, whatever the batch's size: built by drizzle, a batch of a few
 * hundred messages (13 parameters each) cost more CPU to assemble than to
 * run, ~8% of the server's in the SIP call bench. Times travel as ISO text
 * and a message's bytes as hex text (`decode`): drizzle hands timestamp
 * arrays to the driver unserialized, so a timestamptz[] parameter would not
 * arrive as one.
 */
const WRITE_BATCH = `with written as (
    insert into sip_captures (call_id, sip_call_id, omitted_messages, omitted_bytes, create_time)
    select c.call_id, c.sip_call_id, c.omitted_messages, c.omitted_bytes, c.create_time::timestamptz
    from unnest($1::text[], $2::text[], $3::int[], $4::bigint[], $5::text[])
      as c(call_id, sip_call_id, omitted_messages, omitted_bytes, create_time)
    on conflict (call_id) do update set
      omitted_messages = sip_captures.omitted_messages + excluded.omitted_messages,
      omitted_bytes = sip_captures.omitted_bytes + excluded.omitted_bytes
    returning 1
  )
  insert into sip_capture_messages (call_id, seq, sip_call_id, time, direction, transport, source_ip,
    source_port, destination_ip, destination_port, method, start_line, data)
  select m.call_id, m.seq, m.sip_call_id, m.time::timestamptz, m.direction, m.transport, m.source_ip, m.source_port,
    m.destination_ip, m.destination_port, m.method, m.start_line, decode(m.data, 'hex')
  from unnest($6::text[], $7::int[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
    $13::int[], $14::text[], $15::int[], $16::text[], $17::text[], $18::text[])
    as m(call_id, seq, sip_call_id, time, direction, transport, source_ip, source_port, destination_ip,
      destination_port, method, start_line, data)
  on conflict do nothing`;

export class SipCaptureRepository {
  constructor(private readonly db: Db) {}

  /**
   * Writes a batch in one statement (WRITE_BATCH). Messages already stored
   * (same call and position) are left as they are. Fails as a whole, for
   * instance when a call of the batch does not exist (any more). A call
   * appears at most once among `captures`.
   */
  async write(batch: CaptureBatch): Promise<void> {
    if (batch.captures.length === 0 && batch.messages.length === 0) return;
    const c = batch.captures;
    const m = batch.messages;
    await fixedRows(this.db, WRITE_BATCH, [
      c.map((x) => x.callId),
      c.map((x) => x.sipCallId),
      c.map((x) => x.omittedMessages),
      c.map((x) => x.omittedBytes),
      c.map((x) => x.createTime.toISOString()),
      m.map((x) => x.callId),
      m.map((x) => x.seq),
      m.map((x) => x.sipCallId),
      m.map((x) => x.time.toISOString()),
      m.map((x) => x.direction),
      m.map((x) => x.transport),
      m.map((x) => x.sourceIp),
      m.map((x) => x.sourcePort),
      m.map((x) => x.destinationIp),
      m.map((x) => x.destinationPort),
      m.map((x) => x.method),
      m.map((x) => x.startLine),
      m.map((x) => Buffer.from(x.data.buffer, x.data.byteOffset, x.data.byteLength).toString("hex")),
    ]);
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
