/**
 * IPv4 CIDR blocks as the API takes them (`ipv4_prefix`): four decimal
 * octets, a prefix length 0-32, and no host bits set. Checked as the user
 * types; the API checks again.
 */

/** Why `text` is not a CIDR block the API accepts, or undefined when it is one. */
export function cidrProblem(text: string): string | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(text);
  if (m === null) return "not an IPv4 block such as 203.0.113.0/24";
  const octets = m.slice(1, 5).map(Number);
  if (octets.some((o, i) => o > 255 || (m[i + 1]!.length > 1 && m[i + 1]!.startsWith("0")))) {
    return "each part of the address is 0 to 255";
  }
  const bits = Number(m[5]);
  if (bits > 32 || (m[5]!.length > 1 && m[5]!.startsWith("0"))) return "the prefix length is 0 to 32";
  const address = octets.reduce((a, o) => a * 256 + o, 0);
  const hostBits = 2 ** (32 - bits);
  if (address % hostBits !== 0) {
    const base = address - (address % hostBits);
    const start = [24, 16, 8, 0].map((s) => Math.floor(base / 2 ** s) % 256).join(".");
    return `host bits are set: the block is ${start}/${bits}`;
  }
  return undefined;
}

/** One block per line: the blocks, and a problem per line that has one. */
export function parseCidrLines(text: string): { blocks: string[]; problems: string[] } {
  const blocks = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  const problems = blocks.flatMap((b) => {
    const p = cidrProblem(b);
    return p === undefined ? [] : [`${b}: ${p}`];
  });
  return { blocks, problems };
}
