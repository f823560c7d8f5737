/**
 * The `filter` of ListWebhookDeliveries (project inspector and admin): the
 * AIP-160 subset of ListCalls (src/voice/calls/filter.ts: AND, OR, NOT,
 * parentheses) over these fields:
 *
 * - `event`: `=` / `!=` CALL, CALL_STATE_UPDATE, RECORDING_READY, TRANSCRIPTION_READY,
 *   INCOMING_MESSAGE, MESSAGE_STATUS_UPDATE;
 * - `state`: `=` / `!=` PENDING, DELIVERED, FAILED;
 * - `host`: `=` / `!=` a destination host, case-insensitive: a delivery
 *   matches `=` when any of its URIs has that host (`host = "hooks.example.com"`);
 * - `call`: `=` / `!=` a call's name (`projects/p/calls/c`) or id;
 * - `create_time`: `=`, `!=`, `<`, `<=`, `>`, `>=` an RFC 3339 timestamp.
 */
import { type SQL, sql } from "drizzle-orm";
import { webhookEvents as t, WEBHOOK_EVENT_STATES } from "../db/schema/index.js";
import { compileFilter, equality, filterError, timeComparison } from "../voice/calls/filter.js";

export const WEBHOOK_EVENT_TYPES = [
  "CALL",
  "CALL_STATE_UPDATE",
  "RECORDING_READY",
  "TRANSCRIPTION_READY",
  "INCOMING_MESSAGE",
  "MESSAGE_STATUS_UPDATE",
] as const;

const ENUMS: Record<string, { column: typeof t.eventType | typeof t.state; values: readonly string[] }> = {
  event: { column: t.eventType, values: WEBHOOK_EVENT_TYPES },
  state: { column: t.state, values: WEBHOOK_EVENT_STATES },
};

/** The host of a URI in SQL (scheme://[userinfo@]host[:port]...), lower case. */
const HOST_OF = (uri: SQL) =>
  sql`lower(substring(${uri} from '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?(\\[[^]]*\\]|[^:/?#]*)'))`;

function restriction(field: string, op: string, value: string): SQL {
  const e = ENUMS[field];
  if (e !== undefined) {
    if (!e.values.includes(value))
      filterError(`${field} must be compared with one of ${e.values.join(", ")}`);
    return equality(field, op, e.column, value);
  }
  if (field === "host") {
    const host = value.toLowerCase();
    const any = sql`exists (select 1 from unnest(${t.uris}) as u(uri) where ${HOST_OF(sql`u.uri`)} = ${host})`;
    if (op === "=") return any;
    if (op === "!=") return sql`not ${any}`;
    filterError("host supports only = and !=");
  }
  if (field === "call") {
    const id = /^projects\/[^/]+\/calls\/([^/]+)$/.exec(value)?.[1] ?? value;
    if (op === "=") return sql`${t.callId} = ${id}`;
    if (op === "!=") return sql`${t.callId} is distinct from ${id}`;
    filterError("call supports only = and !=");
  }
  if (field === "create_time") return timeComparison(field, op, t.createTime, value);
  filterError(`unknown field ${JSON.stringify(field)}; filterable: event, state, host, call, create_time`);
}

/** The SQL condition of `filter`; undefined when empty; INVALID_ARGUMENT `filter` otherwise. */
export function compileDeliveryFilter(filter: string): SQL | undefined {
  return compileFilter(filter, restriction);
}
