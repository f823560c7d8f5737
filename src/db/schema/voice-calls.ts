/**
 * Calls: outgoing calls created through the API (and, later, incoming calls
 * and child legs). Enum values are stored by their proto names. A call's
 * options (ApiCallOptions) are stored as columns; `price_*` is set when the
 * call reaches a terminal state (null before, and when no rate applies).
 */
import { sql } from "drizzle-orm";
import { bigint, boolean, check, index, integer, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import { projects } from "./admin.js";
import { timestamptz } from "./columns.js";
import type { PostProcessingValue } from "./recordings.js";

export const CALL_STATES = [
  "QUEUED",
  "STARTING",
  "RINGING",
  "IN_PROGRESS",
  "COMPLETED",
  "FAILED",
  "NOT_ANSWERED",
  "BUSY",
  "REJECTED",
] as const;
export type CallStateValue = (typeof CALL_STATES)[number];
export const CALL_DIRECTIONS = ["OUTGOING", "INCOMING"] as const;
export type CallDirectionValue = (typeof CALL_DIRECTIONS)[number];
export const CALL_TRANSPORTS = ["PSTN", "CLIENT", "SIP"] as const;
export type CallTransportValue = (typeof CALL_TRANSPORTS)[number];
export const CALL_CREATE_METHODS = ["INCOMING_CALL", "PARENT_CALL", "API"] as const;
export type CallCreateMethodValue = (typeof CALL_CREATE_METHODS)[number];
export const CALL_END_SIDES = ["LOCAL", "REMOTE"] as const;
export type CallEndSideValue = (typeof CALL_END_SIDES)[number];

/**
 * How a call is recorded by configuration (call recording): from
 * `Call.options.recording` (API calls), the phone number instance's
 * `call_recording_trigger` (incoming number calls) or the SIP domain's
 * `call_recording` (incoming SIP domain calls). Enum values by their proto
 * names; `readyUri` empty means no recording-ready webhook.
 */
export interface CallRecordingSettings {
  trigger: "ANSWER" | "BRIDGE";
  postProcessing: PostProcessingValue[];
  readyUri: string;
  /** `transcribe: DEFAULT` (absent in rows written before transcription existed: false). */
  transcribe?: boolean;
  /** The transcription-ready webhook's URI; empty or absent: none. */
  transcriptionReadyUri?: string;
}

export const calls = pgTable(
  "calls",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    to: text("to").notNull(),
    from: text("from").notNull(),
    isPrivate: boolean("is_private").notNull().default(false),
    labels: jsonb("labels").$type<Record<string, string>>().notNull().default({}),
    state: text("state", { enum: CALL_STATES }).notNull(),
    direction: text("direction", { enum: CALL_DIRECTIONS }).notNull(),
    transport: text("transport", { enum: CALL_TRANSPORTS }).notNull(),
    createMethod: text("create_method", { enum: CALL_CREATE_METHODS }).notNull(),
    errorCode: text("error_code").notNull().default(""),
    errorMessage: text("error_message").notNull().default(""),
    /** ApiCallOptions.handler_uris, in order. */
    handlerUris: text("handler_uris").array().notNull(),
    /** ApiCallOptions.state_update_uri; empty when none. */
    stateUpdateUri: text("state_update_uri").notNull().default(""),
    /** ApiCallOptions.timeout_seconds as resolved (1..600; 0 in the request means 30). */
    timeoutSeconds: integer("timeout_seconds").notNull(),
    /** The call that originated this one (`<Call>` child legs); no FK, ids are never reused. */
    originatingCallId: text("originating_call_id"),
    parentCallId: text("parent_call_id"),
    bridged: boolean("bridged").notNull().default(false),
    /** Call recording by configuration; null: the call is not recorded by configuration. */
    recording: jsonb("recording").$type<CallRecordingSettings>(),
    /** The engine (process) driving the call (src/voice/calls/liveness.ts); null until it starts it. */
    engineId: text("engine_id"),
    priceCurrency: text("price_currency"),
    priceUnits: bigint("price_units", { mode: "number" }),
    priceNanos: integer("price_nanos"),
    /**
     * Which side ended the call: LOCAL (the service hung up, cancelled or
     * refused it) or REMOTE (the network or the remote party did); null
     * while the call is in flight, and for calls that ended before their leg
     * was placed. The SIP dialogue (src/voice/sip-info) derives the sender of
     * BYE / CANCEL from it.
     */
    endedBy: text("ended_by", { enum: CALL_END_SIDES }),
    /** Incoming SIP calls: the address the INVITE came from (the simulator's `source_ip`); null otherwise. */
    sipSourceIp: text("sip_source_ip"),
    /**
     * Calls over the SIP edge (src/telephony/sip-carrier): the SIP Call-ID of
     * the call's INVITE (received or sent); null for the simulator's calls,
     * whose Call-ID is derived (src/voice/calls/proto.ts).
     */
    sipCallId: text("sip_call_id"),
    /** answer_duration in milliseconds; null until an answered call ends. */
    answerDurationMs: bigint("answer_duration_ms", { mode: "number" }),
    createTime: timestamptz("create_time").notNull(),
    startTime: timestamptz("start_time"),
    ringTime: timestamptz("ring_time"),
    answerTime: timestamptz("answer_time"),
    endTime: timestamptz("end_time"),
  },
  (t) => [
    index("calls_project_create_time_idx").on(t.projectId, t.createTime, t.id),
    // The calls of a project still in flight: CreateCall counts them against
    // CALL_CONCURRENCY_LIMIT (src/voice/calls/concurrency.ts).
    index("calls_project_in_flight_idx")
      .on(t.projectId)
      .where(sql`${t.state} in ('QUEUED', 'STARTING', 'RINGING', 'IN_PROGRESS')`),
    check(
      "calls_state_check",
      sql`${t.state} in ('QUEUED', 'STARTING', 'RINGING', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'NOT_ANSWERED', 'BUSY', 'REJECTED')`,
    ),
  ],
);

export type CallRow = typeof calls.$inferSelect;
export type NewCallRow = typeof calls.$inferInsert;

/** Call engines (processes) alive, by their heartbeats (src/voice/calls/liveness.ts). */
export const callEngines = pgTable("call_engines", {
  id: text("id").primaryKey(),
  startTime: timestamptz("start_time").notNull(),
  /** Wall-clock time of the last heartbeat. */
  heartbeatTime: timestamptz("heartbeat_time").notNull(),
});
