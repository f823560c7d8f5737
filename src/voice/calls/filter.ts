/**
 * The `filter` of ListCalls: a subset of AIP-160.
 *
 *   expression  := sequence { OR sequence }      (AND binds tighter than OR)
 *   sequence    := factor { AND factor }
 *   factor      := [NOT] ( "(" expression ")" | restriction )
 *   restriction := field comparator value
 *
 * Fields and comparators:
 * - `state`, `direction`, `transport`, `create_method`: `=` or `!=` an enum
 *   value name (`state = COMPLETED`, `direction = OUTGOING`);
 * - `to`, `from`: `=` or `!=` a string (`to = "+61491570156"`; bare words work
 *   too, quotes are needed for nothing but spaces);
 * - `create_time`, `start_time`, `end_time`: `=`, `!=`, `<`, `<=`, `>`, `>=` an
 *   RFC 3339 timestamp in quotes (`create_time > "2026-01-01T00:00:00Z"`);
 *   a missing start / end time never matches.
 * Keywords AND, OR, NOT are upper case. Anything else is INVALID_ARGUMENT
 * naming `filter`. An empty filter matches every call. The filter is
 * normalised into the page-token query hash, so a token only works with the
 * filter it was issued for.
 */
import { and, eq, ne, not, or, type SQL, type SQLWrapper, sql } from "drizzle-orm";
import { badField } from "../../api/errors.js";
import {
  CALL_CREATE_METHODS,
  CALL_DIRECTIONS,
  CALL_STATES,
  CALL_TRANSPORTS,
  calls,
} from "../../db/schema/index.js";

export const MAX_FILTER_LENGTH = 2000;

type Token =
  | { kind: "word"; text: string }
  | { kind: "string"; text: string }
  | { kind: "op"; text: string }
  | { kind: "lparen" }
  | { kind: "rparen" };

function fail(description: string): never {
  throw badField("filter", description, "filter.invalid");
}

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "(") {
      tokens.push({ kind: "lparen" });
      i++;
    } else if (c === ")") {
      tokens.push({ kind: "rparen" });
      i++;
    } else if (c === '"') {
      let text = "";
      i++;
      for (;;) {
        if (i >= input.length) fail("unterminated string");
        const d = input[i]!;
        if (d === "\\" && i + 1 < input.length) {
          text += input[i + 1];
          i += 2;
        } else if (d === '"') {
          i++;
          break;
        } else {
          text += d;
          i++;
        }
      }
      tokens.push({ kind: "string", text });
    } else if ("<>!=".includes(c)) {
      const two = input.slice(i, i + 2);
      if (two === "<=" || two === ">=" || two === "!=") {
        tokens.push({ kind: "op", text: two });
        i += 2;
      } else if (c === "!") {
        fail("unexpected '!'");
      } else {
        tokens.push({ kind: "op", text: c });
        i++;
      }
    } else {
      const m = /^[^\s()"<>!=]+/.exec(input.slice(i))!;
      tokens.push({ kind: "word", text: m[0] });
      i += m[0].length;
    }
  }
  return tokens;
}

const ENUM_FIELDS = {
  state: { column: calls.state, values: CALL_STATES },
  direction: { column: calls.direction, values: CALL_DIRECTIONS },
  transport: { column: calls.transport, values: CALL_TRANSPORTS },
  create_method: { column: calls.createMethod, values: CALL_CREATE_METHODS },
} as const;
const STRING_FIELDS = { to: calls.to, from: calls.from } as const;
const TIME_FIELDS = {
  create_time: calls.createTime,
  start_time: calls.startTime,
  end_time: calls.endTime,
} as const;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/** Compiles one `field comparator value` of a filter; fails (INVALID_ARGUMENT `filter`) for what it does not know. */
export type Restriction = (field: string, op: string, value: string) => SQL;

class Parser {
  private pos = 0;
  constructor(
    private readonly tokens: Token[],
    private readonly restrict: Restriction,
  ) {}

  private peek(): Token | undefined {
    return this.tokens[this.pos];
  }

  private isKeyword(word: string): boolean {
    const t = this.peek();
    return t?.kind === "word" && t.text === word;
  }

  parse(): SQL {
    const e = this.expression();
    if (this.pos < this.tokens.length) fail("unexpected input after the end of the expression");
    return e;
  }

  private expression(): SQL {
    const parts = [this.sequence()];
    while (this.isKeyword("OR")) {
      this.pos++;
      parts.push(this.sequence());
    }
    return parts.length === 1 ? parts[0]! : or(...parts)!;
  }

  private sequence(): SQL {
    const parts = [this.factor()];
    for (;;) {
      if (this.isKeyword("AND")) {
        this.pos++;
        parts.push(this.factor());
        continue;
      }
      break;
    }
    return parts.length === 1 ? parts[0]! : and(...parts)!;
  }

  private factor(): SQL {
    const t = this.peek();
    if (t === undefined) fail("expression expected");
    if (t.kind === "word" && (t.text === "NOT" || t.text === "-")) {
      this.pos++;
      return not(this.factor());
    }
    if (t.kind === "lparen") {
      this.pos++;
      const e = this.expression();
      if (this.peek()?.kind !== "rparen") fail("missing ')'");
      this.pos++;
      return e;
    }
    return this.restriction();
  }

  private restriction(): SQL {
    const f = this.tokens[this.pos++];
    if (f?.kind !== "word") fail("a field name expected");
    const field = f.text;
    const op = this.tokens[this.pos++];
    if (op?.kind !== "op") fail(`a comparator (=, !=, <, <=, >, >=) expected after ${field}`);
    const v = this.tokens[this.pos++];
    if (v?.kind !== "word" && v?.kind !== "string") fail(`a value expected after ${field} ${op.text}`);
    return this.restrict(field, op.text, v.text);
  }
}

/** A comparison of a timestamp column with an RFC 3339 value (every comparator). */
export function timeComparison(field: string, op: string, column: SQLWrapper, value: string): SQL {
  if (!RFC3339.test(value) || Number.isNaN(Date.parse(value))) {
    fail(`${field} must be compared with an RFC 3339 timestamp such as "2026-01-01T00:00:00Z"`);
  }
  const at = sql`${new Date(value).toISOString()}::timestamptz`;
  switch (op) {
    case "=":
      return sql`${column} = ${at}`;
    case "!=":
      return sql`${column} <> ${at}`;
    case "<":
      return sql`${column} < ${at}`;
    case "<=":
      return sql`${column} <= ${at}`;
    case ">":
      return sql`${column} > ${at}`;
    default:
      return sql`${column} >= ${at}`;
  }
}

/** `=` / `!=` of `column` and `value`; other comparators fail. */
export function equality(field: string, op: string, column: Parameters<typeof eq>[0], value: string): SQL {
  if (op === "=") return eq(column, value);
  if (op === "!=") return ne(column, value);
  fail(`${field} supports only = and !=`);
}

/** The restrictions of ListCalls. */
function callRestriction(field: string, op: string, value: string): SQL {
  if (field in ENUM_FIELDS) {
    const { column, values } = ENUM_FIELDS[field as keyof typeof ENUM_FIELDS];
    if (!(values as readonly string[]).includes(value)) {
      fail(`${field} must be compared with one of ${values.join(", ")}`);
    }
    return equality(field, op, column, value);
  }
  if (field in STRING_FIELDS) {
    return equality(field, op, STRING_FIELDS[field as keyof typeof STRING_FIELDS], value);
  }
  if (field in TIME_FIELDS) {
    return timeComparison(field, op, TIME_FIELDS[field as keyof typeof TIME_FIELDS], value);
  }
  fail(
    `unknown field ${JSON.stringify(field)}; filterable: ${[
      ...Object.keys(ENUM_FIELDS),
      ...Object.keys(STRING_FIELDS),
      ...Object.keys(TIME_FIELDS),
    ].join(", ")}`,
  );
}

/**
 * The SQL condition of an AIP-160 `filter` whose restrictions `restrict`
 * compiles; undefined for an empty filter. INVALID_ARGUMENT `filter` otherwise.
 */
export function compileFilter(filter: string, restrict: Restriction): SQL | undefined {
  if (filter.trim() === "") return undefined;
  if (filter.length > MAX_FILTER_LENGTH) fail(`must be at most ${MAX_FILTER_LENGTH} characters`);
  return new Parser(tokenize(filter), restrict).parse();
}

/** The SQL condition of ListCalls' `filter`; undefined for an empty filter. INVALID_ARGUMENT `filter` otherwise. */
export function compileCallFilter(filter: string): SQL | undefined {
  return compileFilter(filter, callRestriction);
}

export { fail as filterError };
