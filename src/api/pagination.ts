/**
 * List pagination for every list and search method (AIP-158).
 *
 * - `page_size`: 0 means 10; above 100 means 100 (negative values are
 *   refused by protovalidate before a handler runs).
 * - Keyset pagination on (create_time desc, id desc) — never offset-based, so a
 *   page costs the same wherever it is and rows created or deleted between
 *   pages neither shift nor repeat the rest. One more row than the page size
 *   is read to learn whether a next page exists; the last page has an empty
 *   `next_page_token`.
 * - Page tokens are opaque (base64url JSON) and carry the position of the
 *   last row returned plus a hash of the query (method, parent, filters): a
 *   token used with a different query, or a malformed one, is
 *   INVALID_ARGUMENT naming `page_token`. Tokens do not expire; the page size
 *   may change between pages.
 * - create_time is stored as timestamptz(3) and carried in the token as epoch
 *   milliseconds, exactly what a JS Date holds, so comparisons are exact.
 */
import { createHash } from "node:crypto";
import { type AnyColumn, and, desc, type SQL, sql } from "drizzle-orm";
import type { PgSelect } from "drizzle-orm/pg-core";
import { badField } from "./errors.js";
import { isStorableText } from "./safe-input.js";

export const DEFAULT_PAGE_SIZE = 10;
export const MAX_PAGE_SIZE = 100;

/** The keyset position of a row: where the next page starts (exclusive). */
export interface PagePosition {
  createTime: Date;
  id: string;
}

/** What a list request says about paging. */
export interface PageRequest {
  pageSize: number;
  pageToken: string;
  /**
   * Everything the result depends on besides paging: the method, the parent
   * and every filter. A token is only accepted with the same query.
   */
  query: Readonly<Record<string, string | number | boolean>>;
}

/** A page to read: at most `limit` rows strictly after `after`. */
export interface Page {
  limit: number;
  after: PagePosition | undefined;
  queryHash: string;
}

/** A page of results. */
export interface PageResult<T> {
  items: T[];
  nextPageToken: string;
}

const TOKEN_VERSION = 1;
const PAGE_TOKEN_FIELD = "page_token";

/** `page_size` as the API defines it. */
export function effectivePageSize(requested: number): number {
  if (requested <= 0) return DEFAULT_PAGE_SIZE;
  return Math.min(requested, MAX_PAGE_SIZE);
}

/** Recent hashes by canonical query: most lists repeat a few queries (one parent, no filter). */
const queryHashes = new Map<string, string>();
const QUERY_HASHES_MAX = 1000;

/** A stable hash of the query a token is bound to (key order does not matter). */
export function queryHash(query: PageRequest["query"]): string {
  const canonical = JSON.stringify(
    Object.keys(query)
      .sort()
      .map((k) => [k, query[k]]),
  );
  let hash = queryHashes.get(canonical);
  if (hash === undefined) {
    hash = createHash("sha256").update(canonical).digest("base64url").slice(0, 22);
    if (canonical.length <= 512) {
      if (queryHashes.size >= QUERY_HASHES_MAX) queryHashes.clear();
      queryHashes.set(canonical, hash);
    }
  }
  return hash;
}

/**
 * A page token: base64url JSON of the position after which the next page
 * starts (its shape is the list's: [create_time ms, id] for keyset lists, a
 * string key for `readKeyPage`), and the hash of the query it belongs to.
 */
interface TokenPayload {
  v: number;
  /** The position. */
  p: unknown;
  /** queryHash of the query. */
  q: string;
}

/** A token for the page after `position` of the query hashed `hash`. */
export function writePageToken(position: unknown, hash: string): string {
  const payload: TokenPayload = { v: TOKEN_VERSION, p: position, q: hash };
  return Buffer.from(JSON.stringify(payload), "utf8").toString("base64url");
}

function decodePageToken(token: string): TokenPayload | undefined {
  if (token.length > 1000 || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (payload === null || typeof payload !== "object") return undefined;
  const p = payload as Record<string, unknown>;
  if (p.v !== TOKEN_VERSION || typeof p.q !== "string") return undefined;
  return { v: p.v, p: p.p, q: p.q };
}

/**
 * The paging part of a request: page size, query hash, and the position its
 * token carries (`parse` checks the position's shape; undefined on the first
 * page). A malformed token, or one issued for another query, is
 * INVALID_ARGUMENT naming `page_token`.
 */
export function readPageToken<P>(
  request: PageRequest,
  parse: (position: unknown) => P | undefined,
): { limit: number; hash: string; after: P | undefined } {
  const hash = queryHash(request.query);
  const limit = effectivePageSize(request.pageSize);
  if (request.pageToken === "") return { limit, hash, after: undefined };
  const payload = decodePageToken(request.pageToken);
  const after = payload === undefined ? undefined : parse(payload.p);
  if (payload === undefined || after === undefined) {
    throw badField(
      PAGE_TOKEN_FIELD,
      "malformed page token; pass a next_page_token unchanged",
      "page_token.malformed",
    );
  }
  if (payload.q !== hash) {
    throw badField(
      PAGE_TOKEN_FIELD,
      "the page token was issued for a different query; keep parent and filters unchanged while paging",
      "page_token.query_mismatch",
    );
  }
  return { limit, hash, after };
}

/** The times a token may carry: 0001-01-01 to 9999-12-31 (what timestamptz and JS both hold). */
const MIN_TOKEN_TIME = -62_135_596_800_000;
const MAX_TOKEN_TIME = 253_402_300_799_999;

function parsePosition(raw: unknown): PagePosition | undefined {
  if (!Array.isArray(raw) || raw.length !== 2) return undefined;
  const [t, i] = raw as [unknown, unknown];
  // A forged token must not reach the database with a time it cannot hold
  // or an id it cannot store (NUL, lone surrogates).
  if (typeof t !== "number" || !Number.isSafeInteger(t) || t < MIN_TOKEN_TIME || t > MAX_TOKEN_TIME)
    return undefined;
  if (typeof i !== "string" || i === "" || i.length > 200 || !isStorableText(i)) return undefined;
  return { createTime: new Date(t), id: i };
}

export function encodePageToken(position: PagePosition, hash: string): string {
  return writePageToken([position.createTime.getTime(), position.id], hash);
}

/** Reads the paging part of a request; throws INVALID_ARGUMENT `page_token` for a bad token. */
export function startPage(request: PageRequest): Page {
  const { limit, hash, after } = readPageToken(request, parsePosition);
  return { limit, after, queryHash: hash };
}

/**
 * Turns the rows read for `page` (up to `page.limit + 1`, newest first) into
 * the page's items and the token of the next page.
 */
export function finishPage<T extends PagePosition>(page: Page, rows: T[]): PageResult<T> {
  if (rows.length <= page.limit) return { items: rows, nextPageToken: "" };
  const items = rows.slice(0, page.limit);
  const last = items[items.length - 1]!;
  return { items, nextPageToken: encodePageToken(last, page.queryHash) };
}

/** Reads one page with `fetch(after, limit)`, which returns rows in keyset order. */
export async function readPage<T extends PagePosition>(
  request: PageRequest,
  fetch: (after: PagePosition | undefined, limit: number) => Promise<T[]>,
): Promise<PageResult<T>> {
  const page = startPage(request);
  return finishPage(page, await fetch(page.after, page.limit + 1));
}

/** The keyset condition "strictly after `after`" in (create_time desc, id desc) order. */
export function keysetAfter(
  createTime: AnyColumn,
  id: AnyColumn,
  after: PagePosition | undefined,
): SQL | undefined {
  if (after === undefined) return undefined;
  return sql`(${createTime}, ${id}) < (${after.createTime.toISOString()}::timestamptz, ${after.id}::text)`;
}

/** The order of every list: newest first, id as the tie-breaker. */
export function keysetOrder(createTime: AnyColumn, id: AnyColumn): SQL[] {
  return [desc(createTime), desc(id)];
}

/**
 * A list's two keyset reads prepared once (src/db/prepared.ts): `select` (a
 * dynamic select with its FROM and joins, `.$dynamic()`) under `where`
 * (placeholders allowed), newest first, as `<name>_first_page` and
 * `<name>_next_page`. Run them with `preparedPage`.
 */
export function preparedPages<Q extends PgSelect>(
  select: () => Q,
  columns: { createTime: AnyColumn; id: AnyColumn },
  where: SQL | undefined,
  name: string,
) {
  const ph = sql.placeholder;
  const { createTime, id } = columns;
  const page = (condition: SQL | undefined, suffix: string) =>
    select()
      .where(condition)
      .orderBy(...keysetOrder(createTime, id))
      .limit(ph("limit") as unknown as number)
      .prepare(`${name}_${suffix}`);
  return {
    firstPage: page(where, "first_page"),
    // keysetAfter() with placeholders
    nextPage: page(
      and(where, sql`(${createTime}, ${id}) < (${ph("afterTime")}::timestamptz, ${ph("afterId")}::text)`),
      "next_page",
    ),
  };
}

/** The page strictly after `after` (the first without it) of `pages` (preparedPages), with `params` for `where`. */
export function preparedPage<R>(
  pages: {
    firstPage: { execute(values: Record<string, unknown>): Promise<R[]> };
    nextPage: { execute(values: Record<string, unknown>): Promise<R[]> };
  },
  params: Record<string, unknown>,
  after: PagePosition | undefined,
  limit: number,
): Promise<R[]> {
  if (after === undefined) return pages.firstPage.execute({ ...params, limit });
  return pages.nextPage.execute({
    ...params,
    limit,
    afterTime: after.createTime.toISOString(),
    afterId: after.id,
  });
}
