/**
 * Events area: the webhook outbox. A change writes its webhook event in the
 * same transaction (src/events/outbox.ts); delivery workers claim due events
 * with leases (src/events/worker.ts) and record every HTTP request they make
 * as an attempt.
 */
import { sql } from "drizzle-orm";
import { bigserial, boolean, check, index, integer, pgTable, text } from "drizzle-orm/pg-core";
import { projects } from "./admin.js";
import { timestamptz } from "./columns.js";

/** Delivery states of an event. */
export const WEBHOOK_EVENT_STATES = ["PENDING", "DELIVERED", "FAILED"] as const;
export type WebhookEventState = (typeof WEBHOOK_EVENT_STATES)[number];

export const webhookEvents = pgTable(
  "webhook_events",
  {
    /** The event id; sent as `webhook-id`, the same on every retry. */
    id: text("id").primaryKey(),
    /**
     * Enqueue order. Events sharing an ordering key are delivered strictly in
     * this order, one after another.
     */
    seq: bigserial("seq", { mode: "number" }).notNull(),
    projectId: text("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    /** The `X-Enfonica-Event` value: CALL_STATE_UPDATE, RECORDING_READY, ... */
    eventType: text("event_type").notNull(),
    /** Events with the same key (e.g. a call's name) are delivered in order; null: no ordering. */
    orderingKey: text("ordering_key"),
    /** Destinations, tried in order within one round until one answers 2xx. */
    uris: text("uris").array().notNull(),
    /** The exact body sent (and signed). */
    body: text("body").notNull(),
    state: text("state", { enum: WEBHOOK_EVENT_STATES }).notNull(),
    /** Rounds made so far (a round tries every URI until one succeeds). */
    attemptCount: integer("attempt_count").notNull().default(0),
    /** When the next round is due; null once DELIVERED or FAILED. */
    nextAttemptTime: timestamptz("next_attempt_time"),
    /** The worker holding the event, until `lease_expire_time`. */
    leaseOwner: text("lease_owner"),
    leaseExpireTime: timestamptz("lease_expire_time"),
    createTime: timestamptz("create_time").notNull(),
    /** When the event became DELIVERED or FAILED. */
    completeTime: timestamptz("complete_time"),
    /**
     * The call the event is about (call-control exchanges and state
     * updates), for the inspector's `call` filter; null otherwise.
     */
    callId: text("call_id"),
  },
  (t) => [
    /**
     * The workers' scan: pending events no worker holds, in the claim's
     * order (due time, then enqueue order), so a claim reads only what it
     * may take and stops at its limit. Leased events (in flight) are not
     * in it: a claim no longer walks past them.
     */
    index("webhook_events_due_idx")
      .on(t.nextAttemptTime, t.seq)
      .where(sql`${t.state} = 'PENDING' and ${t.leaseOwner} is null`),
    /** Leased pending events by lease expiry: a claim takes back those of a worker that died. */
    index("webhook_events_leased_idx")
      .on(t.leaseExpireTime)
      .where(sql`${t.state} = 'PENDING' and ${t.leaseOwner} is not null`),
    /** "Is an earlier event of this key still pending?" */
    index("webhook_events_ordering_idx")
      .on(t.projectId, t.orderingKey, t.seq)
      .where(sql`${t.state} = 'PENDING' and ${t.orderingKey} is not null`),
    /**
     * Abandoned events, for the queue-depth gauge (src/observability/queue-depth.ts),
     * which counts PENDING ones through webhook_events_due_idx and _leased_idx: a scrape reads the
     * unfinished and the abandoned events, never the delivered ones. Delivered events
     * never enter it, so the workers' writes do not touch it.
     */
    index("webhook_events_failed_idx").on(t.projectId).where(sql`${t.state} = 'FAILED'`),
    index("webhook_events_project_create_time_idx").on(t.projectId, t.createTime.desc(), t.id.desc()),
    index("webhook_events_project_call_idx")
      .on(t.projectId, t.callId, t.createTime.desc())
      .where(sql`${t.callId} is not null`),
    check("webhook_events_state_check", sql`${t.state} in ('PENDING', 'DELIVERED', 'FAILED')`),
  ],
);

export const webhookAttempts = pgTable(
  "webhook_attempts",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    eventId: text("event_id")
      .notNull()
      .references(() => webhookEvents.id, { onDelete: "cascade" }),
    /** The round this request belongs to (1 = the first). */
    round: integer("round").notNull(),
    uri: text("uri").notNull(),
    startTime: timestamptz("start_time").notNull(),
    finishTime: timestamptz("finish_time").notNull(),
    /** HTTP status of the final response (after redirects); null when no response came. */
    statusCode: integer("status_code"),
    /** Why the request failed without a response (timeout, refused destination, ...). */
    error: text("error"),
    /** Wall-clock duration of the request, milliseconds. */
    durationMs: integer("duration_ms").notNull(),
    /**
     * The response body, kept for call-control exchanges only (the markup
     * received), cut at RESPONSE_BODY_LIMIT bytes (src/events/exchanges.ts).
     */
    responseBody: text("response_body"),
    /** Whether `response_body` was cut. */
    responseTruncated: boolean("response_truncated").notNull().default(false),
  },
  (t) => [index("webhook_attempts_event_idx").on(t.eventId, t.id)],
);

export type WebhookEventRow = typeof webhookEvents.$inferSelect;
export type NewWebhookEventRow = typeof webhookEvents.$inferInsert;
export type WebhookAttemptRow = typeof webhookAttempts.$inferSelect;
export type NewWebhookAttemptRow = typeof webhookAttempts.$inferInsert;
