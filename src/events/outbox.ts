/**
 * The webhook outbox: a change writes the events it causes with
 * `enqueueWebhook(tx, ...)` inside its own transaction, so an event exists
 * exactly when the change committed. Delivery happens later, in a worker
 * (worker.ts); call `worker.kick()` after the commit to deliver at once
 * rather than at the next poll. On PostgreSQL the kick also notifies
 * WEBHOOKS_CHANNEL, which wakes the workers of other replicas (listener.ts).
 */
import { type SQL, sql } from "drizzle-orm";
import { newResourceId } from "../api/ids.js";
import type { DbOrTx } from "../db/client.js";
import { webhookEvents } from "../db/schema/index.js";

/** The `X-Enfonica-Event` values of contract/WIRE.md. */
export type WebhookEventType =
  | "CALL"
  | "CALL_STATE_UPDATE"
  | "RECORDING_READY"
  | "TRANSCRIPTION_READY"
  | "INCOMING_MESSAGE"
  // Ours (the contract names none for outgoing messages): a status change of a sent message.
  | "MESSAGE_STATUS_UPDATE";

export interface WebhookToEnqueue {
  projectId: string;
  eventType: WebhookEventType;
  /** Destinations in order (fall-through); at least one. */
  uris: readonly string[];
  /** The body exactly as it is to be sent and signed (proto3 JSON of the resource). */
  body: string;
  /**
   * Events with the same key in a project are delivered strictly one after
   * another, in enqueue order: the next waits until the previous one was
   * delivered or abandoned. Use the call's name for CALL_STATE_UPDATE.
   */
  orderingKey?: string;
  /** Now, from the caller's clock: the create time and first due time. */
  now: Date;
}

/** The channel a committed enqueue is announced on (NOTIFY; see listener.ts). */
export const WEBHOOKS_CHANNEL = "switchboard_webhooks";

const CALL_NAME = /^projects\/[^/]+\/calls\/([^/]+)$/;

/**
 * The columns of a new pending event `id` for `event`, as enqueued: due at
 * once, no round made yet, no lease.
 */
export function pendingEvent(id: string, event: WebhookToEnqueue) {
  return {
    id,
    projectId: event.projectId,
    eventType: event.eventType,
    orderingKey: event.orderingKey ?? null,
    uris: [...event.uris],
    body: event.body,
    state: "PENDING" as const,
    attemptCount: 0,
    nextAttemptTime: event.now,
    createTime: event.now,
    // A call's state updates are ordered by its name: the inspector filters on it.
    callId: CALL_NAME.exec(event.orderingKey ?? "")?.[1] ?? null,
  };
}

/**
 * Writes a webhook event in the caller's transaction (or, given a `db`, on
 * its own). Returns the event id, which receivers see as `webhook-id`.
 */
export async function enqueueWebhook(tx: DbOrTx, event: WebhookToEnqueue): Promise<string> {
  if (event.uris.length === 0) throw new Error("a webhook needs at least one URI");
  const id = newResourceId();
  await tx.insert(webhookEvents).values(pendingEvent(id, event));
  return id;
}

/**
 * One statement that runs `change` (a data-modifying statement with a
 * RETURNING clause) and, when it returned a row, enqueues `event`: the
 * change and its event commit together, in
 * one round trip. The statement's rows: one when the event was enqueued,
 * none otherwise (`rowsOf`), with its `id` and `seq`. Given `leased`, the
 * event is `leased.id`, written leased to `leased.owner` until
 * `leased.expiry` (the caller knows nothing of its key is pending: a new
 * call's first update; worker.ts, EnqueueLease).
 */
export function changeWithWebhook(
  change: SQL,
  event: WebhookToEnqueue,
  leased?: { id: string; owner: string; expiry: Date },
): SQL {
  if (event.uris.length === 0) throw new Error("a webhook needs at least one URI");
  const uris = sql.join(
    event.uris.map((u) => sql`${u}::text`),
    sql`, `,
  );
  const now = event.now.toISOString();
  return sql`with changed as (${change}), e as (insert into ${webhookEvents}
      (id, project_id, event_type, ordering_key, uris, body, state, attempt_count, next_attempt_time, create_time, call_id,
        lease_owner, lease_expire_time)
      select ${leased?.id ?? newResourceId()}::text, ${event.projectId}::text, ${event.eventType}::text, ${event.orderingKey ?? null}::text,
        array[${uris}], ${event.body}::text, 'PENDING', 0, ${now}::timestamptz, ${now}::timestamptz,
        ${CALL_NAME.exec(event.orderingKey ?? "")?.[1] ?? null}::text,
        ${leased?.owner ?? null}::text, ${leased?.expiry.toISOString() ?? null}::timestamptz
      from (select 1 from changed limit 1) as c
      returning id, seq)
    select id, seq::float8 as seq from e`;
}

/** The rows of `db.execute`: an array on postgres.js, `{ rows }` on PGlite. */
export function rowsOf<R>(result: unknown): R[] {
  return Array.isArray(result) ? (result as R[]) : ((result as { rows?: R[] }).rows ?? []);
}
