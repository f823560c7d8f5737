/**
 * The `filter` of ListMessages: the AIP-160 subset of ListCalls
 * (src/voice/calls/filter.ts: AND, OR, NOT, parentheses) over these fields:
 * - `status`, `direction`, `encoding`, `classification`: `=` or `!=` an
 *   enum value name (`status = DELIVERED`, `classification = MARKETING`);
 * - `to`, `from`: `=` or `!=` a string (`to = "+61491570156"`);
 * - `create_time`, `send_time`, `deliver_time`: `=`, `!=`, `<`, `<=`, `>`,
 *   `>=` an RFC 3339 timestamp in quotes; a missing time never matches.
 * Anything else is INVALID_ARGUMENT naming `filter`.
 */
import type { SQL } from "drizzle-orm";
import {
  MESSAGE_CLASSIFICATIONS,
  MESSAGE_DIRECTIONS,
  MESSAGE_ENCODINGS,
  MESSAGE_STATUSES,
  messages,
} from "../../db/schema/index.js";
import { compileFilter, equality, filterError, timeComparison } from "../../voice/calls/filter.js";

const ENUM_FIELDS = {
  status: { column: messages.status, values: MESSAGE_STATUSES },
  direction: { column: messages.direction, values: MESSAGE_DIRECTIONS },
  encoding: { column: messages.encoding, values: MESSAGE_ENCODINGS },
  classification: { column: messages.classification, values: MESSAGE_CLASSIFICATIONS },
} as const;
const STRING_FIELDS = { to: messages.to, from: messages.from } as const;
const TIME_FIELDS = {
  create_time: messages.createTime,
  send_time: messages.sendTime,
  deliver_time: messages.deliverTime,
} as const;

function messageRestriction(field: string, op: string, value: string): SQL {
  if (field in ENUM_FIELDS) {
    const { column, values } = ENUM_FIELDS[field as keyof typeof ENUM_FIELDS];
    if (!(values as readonly string[]).includes(value)) {
      filterError(`${field} must be compared with one of ${values.join(", ")}`);
    }
    return equality(field, op, column, value);
  }
  if (field in STRING_FIELDS) {
    return equality(field, op, STRING_FIELDS[field as keyof typeof STRING_FIELDS], value);
  }
  if (field in TIME_FIELDS) {
    return timeComparison(field, op, TIME_FIELDS[field as keyof typeof TIME_FIELDS], value);
  }
  filterError(
    `unknown field ${JSON.stringify(field)}; filterable: ${[
      ...Object.keys(ENUM_FIELDS),
      ...Object.keys(STRING_FIELDS),
      ...Object.keys(TIME_FIELDS),
    ].join(", ")}`,
  );
}

/** The SQL condition of ListMessages' `filter`; undefined for an empty filter. */
export function compileMessageFilter(filter: string): SQL | undefined {
  return compileFilter(filter, messageRestriction);
}
