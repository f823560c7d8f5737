/**
 * The SIP messages of real calls, as the SIP edge sent and received them
 * (src/telephony/sip-edge/capture.ts), so that any replica can answer
 * GetSipInfo (src/voice/sip-info/). Conventions as in `numbering.ts`.
 *
 * - `sip_captures`: one row per call whose SIP dialogue is captured (the
 *   SIP carrier attached the call's Call-ID): the Call-ID, and how many
 *   messages and bytes were left out once the call reached its bound
 *   (SIP_CAPTURE_MAX_MESSAGES / SIP_CAPTURE_MAX_BYTES). Its existence is
 *   what tells a real call from one on the carrier simulator.
 * - `sip_capture_messages`: the messages, credentials already redacted,
 *   numbered from 0 in the order they crossed the wire. `data` holds the
 *   exact bytes (the pcap is made of them).
 *
 * Both go with their call (and so with its project): ON DELETE CASCADE.
 */
import { sql } from "drizzle-orm";
import { bigint, check, customType, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { timestamptz } from "./columns.js";
import { calls } from "./voice-calls.js";

/** PostgreSQL `bytea` as a Buffer (postgres.js returns a Buffer, PGlite a Uint8Array). */
const bytea = customType<{ data: Buffer; driverData: Uint8Array }>({
  dataType: () => "bytea",
  toDriver: (value) => value,
  fromDriver: (value) => (Buffer.isBuffer(value) ? value : Buffer.from(value)),
});

export const SIP_CAPTURE_DIRECTIONS = ["RECEIVED", "SENT"] as const;
export const SIP_CAPTURE_TRANSPORTS = ["UDP", "TCP", "TLS"] as const;

export const sipCaptures = pgTable(
  "sip_captures",
  {
    callId: text("call_id")
      .primaryKey()
      .references(() => calls.id, { onDelete: "cascade" }),
    /** The Call-ID attached first (a call normally has one). */
    sipCallId: text("sip_call_id").notNull(),
    /** Messages not stored because the call had reached its bound. */
    omittedMessages: integer("omitted_messages").notNull().default(0),
    omittedBytes: bigint("omitted_bytes", { mode: "number" }).notNull().default(0),
    createTime: timestamptz("create_time").notNull(),
  },
  (t) => [check("sip_captures_omitted_check", sql`${t.omittedMessages} >= 0 and ${t.omittedBytes} >= 0`)],
);

export const sipCaptureMessages = pgTable(
  "sip_capture_messages",
  {
    callId: text("call_id")
      .notNull()
      .references(() => sipCaptures.callId, { onDelete: "cascade" }),
    /** The message's position in the call's capture, from 0. */
    seq: integer("seq").notNull(),
    sipCallId: text("sip_call_id").notNull(),
    time: timestamptz("time").notNull(),
    /** RECEIVED by the service, or SENT by it. */
    direction: text("direction", { enum: SIP_CAPTURE_DIRECTIONS }).notNull(),
    transport: text("transport", { enum: SIP_CAPTURE_TRANSPORTS }).notNull(),
    sourceIp: text("source_ip").notNull(),
    sourcePort: integer("source_port").notNull(),
    destinationIp: text("destination_ip").notNull(),
    destinationPort: integer("destination_port").notNull(),
    /** A request's method, or the method of a response's CSeq. */
    method: text("method").notNull(),
    /** The start line, without CRLF. */
    startLine: text("start_line").notNull(),
    /** The message's bytes, credentials redacted. */
    data: bytea("data").notNull(),
  },
  (t) => [
    primaryKey({ name: "sip_capture_messages_pk", columns: [t.callId, t.seq] }),
    check("sip_capture_messages_direction_check", sql`${t.direction} in ('RECEIVED', 'SENT')`),
    check("sip_capture_messages_transport_check", sql`${t.transport} in ('UDP', 'TCP', 'TLS')`),
  ],
);

export type SipCaptureRow = typeof sipCaptures.$inferSelect;
export type SipCaptureMessageRow = typeof sipCaptureMessages.$inferSelect;
export type NewSipCaptureMessageRow = typeof sipCaptureMessages.$inferInsert;
