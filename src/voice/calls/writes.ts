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
 * once. The signing key read before every call-control request is one too.
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

/** Statement texts by the patch's columns (and whether it enqueues). */
const texts = new Map<string, string>();

function textOf(keys: readonly string[], enqueue: boolean): string {
  const signature = `${enqueue ? "+" : "-"}${keys.join(",")}`;
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
  else {
    const n = keys.length + 1;
    const p = (i: number) => `$${n + i}`;
    text = `with changed as (${update} returning id),
      e as (insert into webhook_events
        (id, project_id, event_type, ordering_key, uris, body, state, attempt_count, next_attempt_time, create_time, call_id)
        select ${p(1)}::text, ${p(2)}::text, ${p(3)}::text, ${p(4)}::text, array[${p(5)}::text], ${p(6)}::text,
          'PENDING', 0, ${p(7)}::timestamptz, ${p(7)}::timestamptz, ${id}::text
        from changed on conflict (id) do nothing returning id)
      select id from e`;
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
 * Writes `patch` to `row`'s call while it is not terminal and, given a
 * state update (`event`, one URI), enqueues it when the row was written.
 * Resolves true when the state update was enqueued.
 */
export async function writeTransition(
  db: Db,
  row: Pick<CallRow, "id">,
  patch: Patch,
  event: (WebhookToEnqueue & { id: string }) | undefined,
): Promise<boolean> {
  const keys = Object.keys(patch).filter((k) => patch[k as keyof Patch] !== undefined);
  if (keys.length === 0) return false;
  const params: Param[] = keys.map((k) => param(patch[k as keyof Patch]));
  params.push(row.id);
  if (event === undefined) {
    await groupedRows(db, textOf(keys, false), params);
    return false;
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
  const rows = await groupedRows(db, textOf(keys, true), params);
  return rows.length > 0;
}

/** The project's current signing key (read each time: a rotation applies at once); undefined when no such project. */
export async function signingKeyOf(db: Db, projectId: string): Promise<string | undefined> {
  const rows = await fixedRows(db, "select signing_key from projects where id = $1", [projectId]);
  return rows[0]?.[0] as string | undefined;
}
