/**
 * Keyset pagination on one unique, ordered string key, for results that are
 * not ordered newest first (SearchPhoneNumbers orders by number). The rules
 * are those of `pagination.ts` — `page_size` 0 means 10 and above 100 means
 * 100; one more row than the page size is read; opaque tokens bound to the
 * query (a malformed token or one used with another query is
 * INVALID_ARGUMENT naming `page_token`); never offset-based — only the position
 * differs: the key of the last row returned, and the next page starts
 * strictly after it.
 */

import { type PageRequest, type PageResult, readPageToken, writePageToken } from "./pagination.js";
import { isStorableText } from "./safe-input.js";

/**
 * Reads one page with `fetch(after, limit)`, which returns rows in key order
 * strictly after `after` (all rows when undefined); `keyOf` gives a row's key.
 */
export async function readKeyPage<T>(
  request: PageRequest,
  keyOf: (row: T) => string,
  fetch: (after: string | undefined, limit: number) => Promise<T[]>,
): Promise<PageResult<T>> {
  const { limit, hash, after } = readPageToken(request, (p) =>
    typeof p === "string" && p !== "" && p.length <= 200 && isStorableText(p) ? p : undefined,
  );
  const rows = await fetch(after, limit + 1);
  if (rows.length <= limit) return { items: rows, nextPageToken: "" };
  const items = rows.slice(0, limit);
  return { items, nextPageToken: writePageToken(keyOf(items[items.length - 1]!), hash) };
}
