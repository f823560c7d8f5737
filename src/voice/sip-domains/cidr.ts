/**
 * Strict IPv4 addresses and CIDR blocks for SipDomain.cidrBlocks.
 *
 * Addresses are unsigned 32-bit integers (0 .. 2^32-1). JavaScript bitwise
 * operators work on signed 32-bit values, so every bitwise result that is
 * stored or compared goes through `>>> 0` to bring it back into the unsigned
 * range (`0xffffffff << 8` is -256, `(0xffffffff << 8) >>> 0` is 4294967040).
 *
 * The textual forms accepted are exactly the canonical ones, the same as
 * protovalidate's `string.ipv4_prefix` on `CidrBlock.cidr_block`:
 *   - an address is four decimal octets 0-255 separated by dots, with no
 *     leading zeros (`010.0.0.1` is refused: some parsers read it as octal),
 *     no signs, no spaces, no hexadecimal and no shortened forms (`10.1`);
 *   - a block is an address, `/`, and a prefix length 0-32 without leading
 *     zeros, and its host bits must be zero (`10.0.0.1/24` is refused with a
 *     hint naming `10.0.0.0/24`). A single address is written `/32`.
 *
 * No npm package: nothing suitable is installed and this is a few lines.
 */

/** The most CIDR blocks a SIP domain may have (interface document, Limits). */
export const MAX_CIDR_BLOCKS = 100;

/** A parsed CIDR block; every number is an unsigned 32-bit integer except `prefix`. */
export interface Ipv4Block {
  /** The network address (host bits zero). */
  readonly network: number;
  /** The prefix length, 0 to 32. */
  readonly prefix: number;
  /** The netmask, e.g. 0xffffff00 for /24 and 0 for /0. */
  readonly mask: number;
  /** The first address in the block (the network address). */
  readonly first: number;
  /** The last address in the block (the broadcast address). */
  readonly last: number;
}

export type ParseResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: string };

const OCTET = /^(?:0|[1-9][0-9]{0,2})$/;
const PREFIX = /^(?:0|[1-9][0-9]?)$/;
const LOOSE_OCTET = /^[0-9]+$/;

/** The netmask for a prefix length. `<< 32` is `<< 0` in JavaScript, so /0 is special-cased. */
export function maskOf(prefix: number): number {
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > 32) {
    throw new RangeError(`prefix length must be an integer 0-32, got ${prefix}`);
  }
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** Parses a dotted-quad IPv4 address strictly; the value is an unsigned 32-bit integer. */
export function parseIpv4(text: string): ParseResult<number> {
  const parts = text.split(".");
  if (parts.length !== 4) {
    return fail(
      `not an IPv4 address: ${JSON.stringify(text)} (expected four decimal octets, e.g. 203.0.113.7)`,
    );
  }
  let value = 0;
  for (const part of parts) {
    if (!OCTET.test(part)) {
      if (LOOSE_OCTET.test(part) && part.length > 1 && part.startsWith("0")) {
        return fail(
          `not an IPv4 address: ${JSON.stringify(text)} (octet ${JSON.stringify(part)} has a leading zero)`,
        );
      }
      if (LOOSE_OCTET.test(part)) {
        return fail(`not an IPv4 address: ${JSON.stringify(text)} (octet ${part} is out of range 0-255)`);
      }
      return fail(
        `not an IPv4 address: ${JSON.stringify(text)} (octet ${JSON.stringify(part)} is not a decimal number)`,
      );
    }
    const octet = Number(part);
    if (octet > 255) {
      return fail(`not an IPv4 address: ${JSON.stringify(text)} (octet ${part} is out of range 0-255)`);
    }
    // Multiplication rather than `<< 8`: keeps the value a non-negative integer below 2^32.
    value = value * 256 + octet;
  }
  return { ok: true, value };
}

/** Parses a CIDR block strictly (canonical form, host bits zero). */
export function parseCidr(text: string): ParseResult<Ipv4Block> {
  const slash = text.indexOf("/");
  if (slash < 0) {
    const address = parseIpv4(text);
    return fail(
      address.ok
        ? `not a CIDR block: ${JSON.stringify(text)} (missing prefix length; did you mean ${text}/32?)`
        : `not a CIDR block: ${JSON.stringify(text)} (expected address/prefix, e.g. 203.0.113.0/24)`,
    );
  }
  const addressText = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  const address = parseIpv4(addressText);
  if (!address.ok) {
    return fail(`not a CIDR block: ${JSON.stringify(text)} (${address.error})`);
  }
  if (!PREFIX.test(prefixText) || Number(prefixText) > 32) {
    return fail(
      `not a CIDR block: ${JSON.stringify(text)} (prefix length ${JSON.stringify(prefixText)} must be 0-32 without leading zeros)`,
    );
  }
  const prefix = Number(prefixText);
  const mask = maskOf(prefix);
  const network = (address.value & mask) >>> 0;
  if (network !== address.value) {
    return fail(
      `not a CIDR block: ${JSON.stringify(text)} (host bits set; did you mean ${formatIpv4(network)}/${prefix}?)`,
    );
  }
  return { ok: true, value: blockOf(network, prefix) };
}

/** The canonical dotted-quad form of an unsigned 32-bit address. */
export function formatIpv4(address: number): string {
  return [address >>> 24, (address >>> 16) & 0xff, (address >>> 8) & 0xff, address & 0xff].join(".");
}

/** The canonical `a.b.c.d/n` form of a block. */
export function formatCidr(block: Ipv4Block): string {
  return `${formatIpv4(block.network)}/${block.prefix}`;
}

/**
 * Whether `block` contains `address`. Strings are parsed strictly; a string
 * that does not parse contains nothing and is contained in nothing (fail
 * closed), so a malformed stored block can never admit a call.
 */
export function contains(block: Ipv4Block | string, address: number | string): boolean {
  const b = typeof block === "string" ? parsedOrNull(parseCidr(block)) : block;
  const ip = typeof address === "string" ? parsedOrNull(parseIpv4(address)) : address;
  if (b === null || ip === null) return false;
  return (ip & b.mask) >>> 0 === b.network;
}

/**
 * Whether two blocks share at least one address. CIDR blocks are either
 * disjoint or nested, so this is "one contains the other". Malformed strings
 * overlap nothing.
 */
export function overlaps(a: Ipv4Block | string, b: Ipv4Block | string): boolean {
  const x = typeof a === "string" ? parsedOrNull(parseCidr(a)) : a;
  const y = typeof b === "string" ? parsedOrNull(parseCidr(b)) : b;
  if (x === null || y === null) return false;
  return x.first <= y.last && y.first <= x.last;
}

/** Two overlapping entries of the list given to `findOverlap`, by index (`first < second`). */
export interface BlockOverlap {
  readonly first: number;
  readonly second: number;
  readonly firstBlock: string;
  readonly secondBlock: string;
}

/**
 * The first pair (in address order) of overlapping blocks among `blocks`, or
 * null when all are pairwise disjoint. Identical and nested blocks overlap;
 * adjacent blocks (10.0.0.0/25 and 10.0.0.128/25) do not. Malformed entries
 * are skipped: they contain no address, so they cannot make matching
 * ambiguous (validate them separately with `validateCidrBlocks`).
 * O(n log n).
 */
export function findOverlap(blocks: readonly string[]): BlockOverlap | null {
  const found = sweep(blocks.map((text, index) => ({ text, index, owner: index })));
  if (found === null) return null;
  const [a, b] = ordered(found);
  return { first: a.index, second: b.index, firstBlock: a.text, secondBlock: b.text };
}

/** A block of one group overlapping a block of another, as found by `findOverlapAcrossGroups`. */
export interface GroupOverlap {
  readonly a: { readonly id: string; readonly cidrBlock: string };
  readonly b: { readonly id: string; readonly cidrBlock: string };
}

/**
 * The first overlap between blocks of *different* groups (e.g. different
 * domain-optional SIP domains), or null. Overlaps inside one group are
 * allowed: they cannot make "which group owns this address" ambiguous.
 * Malformed entries are skipped as in `findOverlap`. O(n log n) in the total
 * number of blocks.
 */
export function findOverlapAcrossGroups(
  groups: readonly { readonly id: string; readonly cidrBlocks: readonly string[] }[],
): GroupOverlap | null {
  const entries: SweepEntry[] = [];
  groups.forEach((group, owner) => {
    for (const text of group.cidrBlocks) entries.push({ text, index: entries.length, owner });
  });
  const found = sweep(entries);
  if (found === null) return null;
  const [a, b] = ordered(found);
  return {
    a: { id: groups[a.owner]!.id, cidrBlock: a.text },
    b: { id: groups[b.owner]!.id, cidrBlock: b.text },
  };
}

/** One problem with a cidrBlocks list; `index` is null for a problem with the list as a whole. */
export interface CidrBlockViolation {
  readonly index: number | null;
  readonly message: string;
}

/**
 * Checks a SipDomain.cidrBlocks list: at most MAX_CIDR_BLOCKS entries, each
 * strictly valid. Overlaps inside one domain are allowed (harmless); overlaps
 * across domain-optional domains are checked with `findOverlapAcrossGroups`.
 */
export function validateCidrBlocks(blocks: readonly string[]): CidrBlockViolation[] {
  const violations: CidrBlockViolation[] = [];
  if (blocks.length > MAX_CIDR_BLOCKS) {
    violations.push({ index: null, message: `at most ${MAX_CIDR_BLOCKS} CIDR blocks, got ${blocks.length}` });
  }
  blocks.forEach((text, index) => {
    const parsed = parseCidr(text);
    if (!parsed.ok) violations.push({ index, message: parsed.error });
  });
  return violations;
}

interface SweepEntry {
  readonly text: string;
  /** Position in the flattened input, for a deterministic report order. */
  readonly index: number;
  /** Entries with the same owner never conflict. */
  readonly owner: number;
}

/**
 * Finds two entries with different owners whose blocks overlap. Because CIDR
 * blocks are laminar (any two are disjoint or nested), sorting by first
 * address and then by size (largest first) puts every block right after the
 * chain of blocks enclosing it; a stack of open blocks holds that chain. On
 * the first conflict we stop, so until then every open block has the same
 * owner and comparing with the top of the stack is enough.
 */
function sweep(entries: readonly SweepEntry[]): [SweepEntry, SweepEntry] | null {
  const parsed: { entry: SweepEntry; block: Ipv4Block }[] = [];
  for (const entry of entries) {
    const result = parseCidr(entry.text);
    if (result.ok) parsed.push({ entry, block: result.value });
  }
  parsed.sort(
    (x, y) =>
      x.block.first - y.block.first || x.block.prefix - y.block.prefix || x.entry.index - y.entry.index,
  );
  const open: (typeof parsed)[number][] = [];
  for (const current of parsed) {
    while (open.length > 0 && open[open.length - 1]!.block.last < current.block.first) open.pop();
    const top = open[open.length - 1];
    if (top !== undefined && top.entry.owner !== current.entry.owner) {
      return [top.entry, current.entry];
    }
    open.push(current);
  }
  return null;
}

function ordered([x, y]: [SweepEntry, SweepEntry]): [SweepEntry, SweepEntry] {
  return x.index < y.index ? [x, y] : [y, x];
}

function blockOf(network: number, prefix: number): Ipv4Block {
  const mask = maskOf(prefix);
  return { network, prefix, mask, first: network, last: (network | ~mask) >>> 0 };
}

function parsedOrNull<T>(result: ParseResult<T>): T | null {
  return result.ok ? result.value : null;
}

function fail(error: string): { ok: false; error: string } {
  return { ok: false, error };
}
