/**
 * Byte ranges of downloads (RFC 9110 section 14): the one `Range` header
 * form browsers' audio players send, `bytes=first-last`, `bytes=first-` or
 * `bytes=-suffix`, parsed into a request; a blob store resolves it against
 * the blob's size (`resolveRange`). Several ranges in one header, another
 * unit, or a header that does not parse are not range requests (the whole
 * blob is served, as the RFC allows).
 */

/** A range asked for: from `first` to `last` (inclusive; open when absent), or the last `suffix` bytes. */
export type RangeRequest = { first: number; last?: number } | { suffix: number };

/** A range served: bytes `start` to `end`, inclusive. */
export interface ByteRange {
  start: number;
  end: number;
}

/** A range that the blob's size cannot satisfy (416, `Content-Range: bytes *\/size`). */
export class RangeNotSatisfiable extends Error {
  override name = "RangeNotSatisfiable";
  constructor(readonly size: number) {
    super(`range not satisfiable for ${size} bytes`);
  }
}

const SINGLE = /^bytes=(\d{0,15})-(\d{0,15})$/;

/** The range a `Range` header asks for, or undefined when it asks for none this serves. */
export function parseRange(header: string | undefined): RangeRequest | undefined {
  if (header === undefined) return undefined;
  const m = SINGLE.exec(header.trim().replace(/\s+/g, ""));
  if (m === null) return undefined;
  const [, a = "", b = ""] = m;
  if (a === "" && b === "") return undefined;
  if (a === "") return { suffix: Number(b) };
  const first = Number(a);
  if (b === "") return { first };
  const last = Number(b);
  return last < first ? undefined : { first, last };
}

/** The bytes of a `size`-byte blob that `range` names; RangeNotSatisfiable when none. */
export function resolveRange(range: RangeRequest, size: number): ByteRange {
  if ("suffix" in range) {
    if (range.suffix === 0 || size === 0) throw new RangeNotSatisfiable(size);
    return { start: Math.max(0, size - range.suffix), end: size - 1 };
  }
  if (range.first >= size) throw new RangeNotSatisfiable(size);
  return { start: range.first, end: Math.min(size - 1, range.last ?? size - 1) };
}

/** The `Range` header value asking for `range` (to pass a request on). */
export function rangeHeader(range: RangeRequest): string {
  if ("suffix" in range) return `bytes=-${range.suffix}`;
  return `bytes=${range.first}-${range.last ?? ""}`;
}
