/**
 * The engine's hot statements as fixed SQL texts, run on the database's
 * client directly: no query building per transition, and the same text each
 * time, so each connection prepares it once and PostgreSQL reuses its plan.
 *
 * A transition (engine.ts `write`) is one statement: the call's row is
 * updated while it is not terminal and, for a state change, its
 * CALL_STATE_UPDATE is inserted into the outbox from that update's RETURNING
 * (so only when the update happened). Patches are scalar columns only (the
 * engine's own: states, times, error, price, engine_id, bridged); the text
 * depends on which columns a patch sets, a handful of shapes. A statement
 * may be sent again after its reply was lost (engine.ts): the update sets
 * the same values, and the state update, under the same id, is inserted
 * once. Given a lease of the process's webhook worker, the state update is
 * written leased to it (see textOf) and the worker delivers it from memory
 * (src/events/worker.ts, EnqueueLease). The signing key read before every
 * call-control request is one too.
 * Transitions are committed in groups (../../db/group-commit.ts): those of
 * the calls that moved in one turn of the event loop, one transaction.
 */
import { getTableColumns } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import { fixedRows } from "../../db/direct.js";
import { groupedRows } from "../../db/group-commit.js";
import { type CallRow, calls } from "../../db/schema/index.js";
import type { WebhookToEnqueue } from "../../events/outbox.js";
import type { Patch } from "./active-call.js";

type Param = string | number | boolean | null;

const COLUMN_NAMES = new Map(Object.entries(getTableColumns(calls)).map(([key, c]) => [key, c.name]));

const NOT_TERMINAL = `state not in ('COMPLETED', 'FAILED', 'NOT_ANSWERED', 'BUSY', 'REJECTED')`;

/** Statement texts by the patch's columns (and whether it enqueues, and whether leased). */
const texts = new Map<string, string>();

/**
 * The statement of a patch of `keys`. Enqueuing, its parameters after the
 * patch's and the call's id are the event's id, project, type, ordering key,
 * URI, body and time; leased (`lease`), two more: the worker and the lease's
 * expiry. A leased text writes the event leased to that worker when every
 * pending event of its key is that worker's too (or there is none: it is its
 * key's head), free otherwise; it returns its seq, whether it was leased, and
 * whether pending events of its key were before it (the worker delivers it
 * after them: worker.ts, EnqueueLease). Leased and free are two texts, not a parameter that switches a
 * part off: each keeps one plan (repository.ts, FINISH_ROUNDS).
 */
function textOf(keys: readonly string[], enqueue: boolean, lease: boolean): string {
  const signature = `${enqueue ? (lease ? "L" : "+") : "-"}${keys.join(",")}`;
  let text = texts.get(signature);
  if (text !== undefined) return text;
  const set = keys
    .map((k, i) => {
      const column = COLUMN_NAMES.get(k);
      if (column === undefined) throw new Error(`calls has no column ${k}`);
      return `"${column}" = $${i + 1}`;
    })
    .join(", ");
  const id = `$${keys.length + 1}`;
  const update = `update calls set ${set} where id = ${id} and ${NOT_TERMINAL}`;
  if (!enqueue) text = update;
  else if (!lease) {
    const n = keys.length + 1;
    const p = (i: number) => `$${n + i}`;
    text = `with changed as (${update} returning id),
      e as (insert into webhook_events
        (id, project_id, event_type, ordering_key, uris, body, state, attempt_count, next_attempt_time, create_time, call_id)
        select ${p(1)}::text, ${p(2)}::text, ${p(3)}::text, ${p(4)}::text, array[${p(5)}::text], ${p(6)}::text,
          'PENDING', 0, ${p(7)}::timestamptz, ${p(7)}::timestamptz, ${id}::text
        from changed on conflict (id) do nothing returning id)
      select id from e`;
  } else {
    const n = keys.length + 1;
    const p = (i: number) => `$${n + i}`;
    text = `with changed as (${update} returning id),
      head as (select count(*) filter (where coalesce(w.lease_owner, '') <> ${p(8)}::text) = 0 as mine,
          count(*) > 0 as behind
        from webhook_events w
        where w.project_id = ${p(2)}::text and w.ordering_key = ${p(4)}::text and w.state = 'PENDING'),
      e as (insert into webhook_events
        (id, project_id, event_type, ordering_key, uris, body, state, attempt_count, next_attempt_time, create_time, call_id,
          lease_owner, lease_expire_time)
        select ${p(1)}::text, ${p(2)}::text, ${p(3)}::text, ${p(4)}::text, array[${p(5)}::text], ${p(6)}::text,
          'PENDING', 0, ${p(7)}::timestamptz, ${p(7)}::timestamptz, ${id}::text,
          case when head.mine then ${p(8)}::text end, case when head.mine then ${p(9)}::timestamptz end
        from changed, head on conflict (id) do nothing returning id, seq, lease_owner)
      select e.id, e.seq::float8, e.lease_owner is not null, head.behind from e, head`;
  }
  texts.set(signature, text);
  return text;
}

function param(value: unknown): Param {
  if (value instanceof Date) return value.toISOString();
  if (value === undefined) return null;
  if (
    typeof value === "string" ||
    typeof value === "number" ||
    typeof value === "boolean" ||
    value === null
  ) {
    return value;
  }
  throw new Error(`not a scalar column value: ${typeof value}`);
}

/**
 * What a transition enqueued: nothing, or its state update, free or leased
 * (its seq, and whether pending events of its key, all leased to the same
 * worker, were before it).
 */
export type Enqueued =
  | { enqueued: false }
  | { enqueued: true; leased: false }
  | { enqueued: true; leased: true; seq: number; behind: boolean };

/**
 * Writes `patch` to `row`'s call while it is not terminal and, given a
 * state update (`event`, one URI), enqueues it when the row was written:
 * leased to `lease.owner` until `lease.expiry` when given and every pending
 * event of its key is that owner's (see textOf).
 */
export async function writeTransition(
  db: Db,
  row: Pick<CallRow, "id">,
  patch: Patch,
  event: (WebhookToEnqueue & { id: string }) | undefined,
  lease?: { owner: string; expiry: Date },
): Promise<Enqueued> {
  const keys = Object.keys(patch).filter((k) => patch[k as keyof Patch] !== undefined);
  if (keys.length === 0) return { enqueued: false };
  const params: Param[] = keys.map((k) => param(patch[k as keyof Patch]));
  params.push(row.id);
  if (event === undefined) {
    await groupedRows(db, textOf(keys, false, false), params);
    return { enqueued: false };
  }
  params.push(
    event.id,
    event.projectId,
    event.eventType,
    event.orderingKey ?? null,
    event.uris[0]!,
    event.body,
    event.now.toISOString(),
  );
  if (lease === undefined || event.orderingKey === undefined) {
    const rows = await groupedRows(db, textOf(keys, true, false), params);
    return rows.length > 0 ? { enqueued: true, leased: false } : { enqueued: false };
  }
  params.push(lease.owner, lease.expiry.toISOString());
  const [enqueued] = await groupedRows(db, textOf(keys, true, true), params);
  if (enqueued === undefined) return { enqueued: false };
  return enqueued[2] === true
    ? { enqueued: true, leased: true, seq: Number(enqueued[1]), behind: enqueued[3] === true }
    : { enqueued: true, leased: false };
}

/** The project's current signing key (read each time: a rotation applies at once); undefined when no such project. */
export async function signingKeyOf(db: Db, projectId: string): Promise<string | undefined> {
  const rows = await fixedRows(db, "select signing_key from projects where id = $1", [projectId]);
  return rows[0]?.[0] as string | undefined;
}
