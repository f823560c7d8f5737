/**
 * Keyset pagination on one unique, ordered string key, for results that are
 * not ordered newest first (SearchPhoneNumbers orders by number). The rules
 * are those of `pagination.ts` — `page_size` 0 means 10 and above 100 means
 * 100; one more row than the page size is read; opaque tokens bound to the
 * query (a malformed token or one used with another query is
 * INVALID_ARGUMENT naming `page_token`); never OFFSET — only the position
 * differs: the key of the last row returned, and the next page starts
 * strictly after it.
 */
import { badField } from "./errors.js";
import { effectivePageSize, type PageRequest, type PageResult, queryHash } from "./pagination.js";

const TOKEN_VERSION = 1;
const PAGE_TOKEN_FIELD = "page_token";

interface KeyTokenPayload {
  v: number;
  /** Key of the last row returned. */
  k: string;
  /** queryHash of the query. */
  q: string;
}

function encode(key: string, hash: string): string {
  const payload: KeyTokenPayload = { v: TOKEN_VERSION, k: key, q: hash };
  return Buffer.from(JSON.stringify(payload), "utf8").toString("base64url");
}

function decode(token: string): KeyTokenPayload | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (payload === null || typeof payload !== "object") return undefined;
  const p = payload as Record<string, unknown>;
  if (p.v !== TOKEN_VERSION || typeof p.k !== "string" || p.k === "" || p.k.length > 200) return undefined;
  if (typeof p.q !== "string") return undefined;
  return { v: p.v, k: p.k, q: p.q };
}

/**
 * Reads one page with `fetch(after, limit)`, which returns rows in key order
 * strictly after `after` (all rows when undefined); `keyOf` gives a row's key.
 */
export async function readKeyPage<T>(
  request: PageRequest,
  keyOf: (row: T) => string,
  fetch: (after: string | undefined, limit: number) => Promise<T[]>,
): Promise<PageResult<T>> {
  const hash = queryHash(request.query);
  const limit = effectivePageSize(request.pageSize);
  let after: string | undefined;
  if (request.pageToken !== "") {
    const payload = decode(request.pageToken);
    if (payload === undefined) {
      throw badField(
        PAGE_TOKEN_FIELD,
        "malformed page token; pass a next_page_token unchanged",
        "page_token.malformed",
      );
    }
    if (payload.q !== hash) {
      throw badField(
        PAGE_TOKEN_FIELD,
        "the page token was issued for a different query; keep the filters unchanged while paging",
        "page_token.query_mismatch",
      );
    }
    after = payload.k;
  }
  const rows = await fetch(after, limit + 1);
  if (rows.length <= limit) return { items: rows, nextPageToken: "" };
  const items = rows.slice(0, limit);
  return { items, nextPageToken: encode(keyOf(items[items.length - 1]!), hash) };
}
