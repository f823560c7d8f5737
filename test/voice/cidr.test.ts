import { describe, expect, it } from "vitest";
import {
  contains,
  findOverlap,
  findOverlapAcrossGroups,
  formatCidr,
  formatIpv4,
  MAX_CIDR_BLOCKS,
  maskOf,
  overlaps,
  parseCidr,
  parseIpv4,
  validateCidrBlocks,
} from "../../src/voice/sip-domains/cidr.js";

describe("parseIpv4", () => {
  const valid: [string, number][] = [
    ["0.0.0.0", 0],
    ["255.255.255.255", 0xffffffff],
    ["203.0.113.7", 0xcb007107],
    ["10.0.0.1", 0x0a000001],
    ["128.0.0.0", 0x80000000],
    ["1.2.3.4", 0x01020304],
    ["100.20.3.0", 0x64140300],
  ];
  it.each(valid)("accepts %s as %i (unsigned)", (text, value) => {
    const parsed = parseIpv4(text);
    expect(parsed).toEqual({ ok: true, value });
    if (parsed.ok) {
      expect(parsed.value).toBeGreaterThanOrEqual(0);
      expect(formatIpv4(parsed.value)).toBe(text);
    }
  });

  const invalid: [string, string, RegExp][] = [
    ["leading zero", "010.0.0.1", /leading zero/],
    ["leading zero in last octet", "10.0.0.01", /leading zero/],
    ["double zero", "10.00.0.1", /leading zero/],
    ["octet 256", "10.0.0.256", /out of range 0-255/],
    ["octet 999", "999.0.0.1", /out of range/],
    ["four-digit octet", "1000.0.0.1", /out of range/],
    ["three octets", "10.0.1", /four decimal octets/],
    ["five octets", "10.0.0.0.1", /four decimal octets/],
    ["empty string", "", /four decimal octets/],
    ["empty octet", "10..0.1", /not a decimal number/],
    ["trailing dot", "10.0.0.", /not a decimal number/],
    ["negative octet", "10.0.0.-1", /not a decimal number/],
    ["plus sign", "+10.0.0.1", /not a decimal number/],
    ["hexadecimal", "0x0a.0.0.1", /not a decimal number/],
    ["leading space", " 10.0.0.1", /not a decimal number/],
    ["trailing newline", "10.0.0.1\n", /not a decimal number/],
    ["letters", "a.b.c.d", /not a decimal number/],
    ["IPv6", "::1", /four decimal octets/],
    ["IPv4-mapped IPv6", "::ffff:10.0.0.1", /not a decimal number/],
    ["CIDR block", "10.0.0.0/8", /not a decimal number/],
    ["single integer", "167772161", /four decimal octets/],
    ["non-ASCII digits", "１.2.3.4", /not a decimal number/],
  ];
  it.each(invalid)("rejects %s: %j", (_name, text, message) => {
    const parsed = parseIpv4(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toMatch(message);
  });
});

describe("maskOf", () => {
  const cases: [number, number][] = [
    [0, 0],
    [1, 0x80000000],
    [8, 0xff000000],
    [24, 0xffffff00],
    [31, 0xfffffffe],
    [32, 0xffffffff],
  ];
  it.each(cases)("/%i is %i (unsigned, /0 is not /32)", (prefix, mask) => {
    expect(maskOf(prefix)).toBe(mask);
  });
  it.each([-1, 33, 1.5, Number.NaN])("throws for prefix %s", (prefix) => {
    expect(() => maskOf(prefix)).toThrow(RangeError);
  });
});

describe("parseCidr", () => {
  const valid: [string, number, number][] = [
    ["0.0.0.0/0", 0, 0xffffffff],
    ["10.0.0.0/8", 0x0a000000, 0x0affffff],
    ["203.0.113.0/24", 0xcb007100, 0xcb0071ff],
    ["203.0.113.7/32", 0xcb007107, 0xcb007107],
    ["255.255.255.255/32", 0xffffffff, 0xffffffff],
    ["0.0.0.0/32", 0, 0],
    ["128.0.0.0/1", 0x80000000, 0xffffffff],
    ["192.168.0.0/31", 0xc0a80000, 0xc0a80001],
  ];
  it.each(valid)("accepts %s (first %i, last %i)", (text, first, last) => {
    const parsed = parseCidr(text);
    expect(parsed.ok).toBe(true);
    if (parsed.ok) {
      expect(parsed.value.first).toBe(first);
      expect(parsed.value.network).toBe(first);
      expect(parsed.value.last).toBe(last);
      expect(parsed.value.last).toBeGreaterThanOrEqual(parsed.value.first);
      expect(formatCidr(parsed.value)).toBe(text);
    }
  });

  const invalid: [string, string, string | RegExp][] = [
    ["host bits set in /24", "10.0.0.1/24", "host bits set; did you mean 10.0.0.0/24?"],
    ["host bits set in /8", "10.1.2.3/8", "host bits set; did you mean 10.0.0.0/8?"],
    ["host bits set in /0", "1.2.3.4/0", "host bits set; did you mean 0.0.0.0/0?"],
    ["host bits set in /31", "192.168.0.1/31", "host bits set; did you mean 192.168.0.0/31?"],
    ["broadcast as network", "203.0.113.255/24", "host bits set; did you mean 203.0.113.0/24?"],
    ["top address /1", "255.255.255.255/1", "host bits set; did you mean 128.0.0.0/1?"],
    ["no prefix", "203.0.113.7", "did you mean 203.0.113.7/32?"],
    ["no prefix, bad address", "203.0.113", /expected address\/prefix/],
    ["prefix 33", "10.0.0.0/33", /must be 0-32/],
    ["prefix -1", "10.0.0.0/-1", /must be 0-32/],
    ["prefix with leading zero", "10.0.0.0/08", /must be 0-32 without leading zeros/],
    ["empty prefix", "10.0.0.0/", /must be 0-32/],
    ["prefix with space", "10.0.0.0/ 8", /must be 0-32/],
    ["two slashes", "10.0.0.0/8/8", /must be 0-32/],
    ["netmask instead of prefix", "10.0.0.0/255.0.0.0", /must be 0-32/],
    ["address with leading zero", "010.0.0.0/8", /leading zero/],
    ["octet out of range", "256.0.0.0/8", /out of range/],
    ["empty address", "/24", /four decimal octets/],
    ["empty string", "", /expected address\/prefix/],
    ["IPv6 block", "2001:db8::/32", /four decimal octets/],
  ];
  it.each(invalid)("rejects %s: %j", (_name, text, message) => {
    const parsed = parseCidr(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toMatch(message);
  });
});

describe("contains", () => {
  const cases: [string, string, boolean][] = [
    ["203.0.113.0/24", "203.0.113.0", true], // network address
    ["203.0.113.0/24", "203.0.113.255", true], // broadcast address
    ["203.0.113.0/24", "203.0.113.77", true],
    ["203.0.113.0/24", "203.0.112.255", false], // just below
    ["203.0.113.0/24", "203.0.114.0", false], // just above
    ["203.0.113.7/32", "203.0.113.7", true],
    ["203.0.113.7/32", "203.0.113.6", false],
    ["203.0.113.7/32", "203.0.113.8", false],
    ["0.0.0.0/0", "0.0.0.0", true],
    ["0.0.0.0/0", "255.255.255.255", true],
    ["0.0.0.0/0", "128.0.0.0", true],
    ["0.0.0.0/32", "0.0.0.0", true],
    ["0.0.0.0/32", "0.0.0.1", false],
    ["255.255.255.255/32", "255.255.255.255", true],
    ["255.255.255.255/32", "255.255.255.254", false],
    ["128.0.0.0/1", "255.255.255.255", true], // high bit set: signed arithmetic would break this
    ["128.0.0.0/1", "128.0.0.0", true],
    ["128.0.0.0/1", "127.255.255.255", false],
    ["0.0.0.0/1", "127.255.255.255", true],
    ["0.0.0.0/1", "128.0.0.0", false],
    ["240.0.0.0/4", "255.255.255.255", true],
    ["192.168.0.0/31", "192.168.0.1", true],
    ["192.168.0.0/31", "192.168.0.2", false],
    // Malformed input contains / is contained in nothing.
    ["10.0.0.1/24", "10.0.0.1", false],
    ["10.0.0.0/24", "010.0.0.1", false],
    ["10.0.0.0/24", "10.0.0.256", false],
    ["0.0.0.0/0", "not an address", false],
  ];
  it.each(cases)("%s contains %s: %s", (block, ip, expected) => {
    expect(contains(block, ip)).toBe(expected);
    const parsedBlock = parseCidr(block);
    const parsedIp = parseIpv4(ip);
    if (parsedBlock.ok && parsedIp.ok) expect(contains(parsedBlock.value, parsedIp.value)).toBe(expected);
  });
});

describe("overlaps", () => {
  const cases: [string, string, string, boolean][] = [
    ["identical", "10.0.0.0/24", "10.0.0.0/24", true],
    ["nested", "10.0.0.0/8", "10.1.2.0/24", true],
    ["nested /32 at network address", "10.0.0.0/24", "10.0.0.0/32", true],
    ["nested /32 at broadcast address", "10.0.0.0/24", "10.0.0.255/32", true],
    ["/0 with anything", "0.0.0.0/0", "203.0.113.7/32", true],
    ["/0 with top address", "0.0.0.0/0", "255.255.255.255/32", true],
    ["adjacent halves", "10.0.0.0/25", "10.0.0.128/25", false],
    ["adjacent /24s", "10.0.0.0/24", "10.0.1.0/24", false],
    ["adjacent /32s", "10.0.0.1/32", "10.0.0.2/32", false],
    ["high halves of the space", "0.0.0.0/1", "128.0.0.0/1", false],
    ["disjoint", "192.168.0.0/16", "172.16.0.0/12", false],
    ["malformed overlaps nothing", "10.0.0.1/24", "10.0.0.0/24", false],
  ];
  it.each(cases)("%s: %s and %s -> %s", (_name, a, b, expected) => {
    expect(overlaps(a, b)).toBe(expected);
    expect(overlaps(b, a)).toBe(expected);
  });
});

describe("findOverlap", () => {
  const cases: [string, string[], [number, number] | null][] = [
    ["empty list", [], null],
    ["single block", ["10.0.0.0/8"], null],
    ["disjoint blocks", ["10.0.0.0/8", "192.168.0.0/16", "172.16.0.0/12"], null],
    ["adjacent, not overlapping", ["10.0.0.0/25", "10.0.0.128/25", "10.0.1.0/24"], null],
    ["adjacent /32s", ["203.0.113.1/32", "203.0.113.2/32", "203.0.113.3/32"], null],
    ["identical", ["192.168.0.0/16", "10.0.0.0/24", "10.0.0.0/24"], [1, 2]],
    ["nested, container first", ["10.0.0.0/8", "192.168.0.0/16", "10.20.0.0/16"], [0, 2]],
    ["nested, container last", ["10.20.0.0/16", "192.168.0.0/16", "10.0.0.0/8"], [0, 2]],
    ["/32 at broadcast of a /24", ["203.0.113.255/32", "203.0.113.0/24"], [0, 1]],
    ["/0 with anything", ["203.0.113.0/24", "0.0.0.0/0"], [0, 1]],
    ["overlap after a long disjoint run", ["1.0.0.0/8", "2.0.0.0/8", "3.0.0.0/8", "2.5.0.0/16"], [1, 3]],
    ["malformed entries are skipped", ["10.0.0.1/24", "10.0.0.0/24", "nonsense"], null],
  ];
  it.each(cases)("%s", (_name, blocks, expected) => {
    const found = findOverlap(blocks);
    if (expected === null) {
      expect(found).toBeNull();
    } else {
      expect(found).toEqual({
        first: expected[0],
        second: expected[1],
        firstBlock: blocks[expected[0]],
        secondBlock: blocks[expected[1]],
      });
    }
  });

  it("agrees with pairwise overlaps() on generated lists", () => {
    // Deterministic pseudo-random blocks (LCG), compared against the O(n^2) definition.
    let seed = 12345;
    const next = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed;
    };
    for (let round = 0; round < 300; round++) {
      const blocks: string[] = [];
      const n = 1 + (next() % 8);
      for (let i = 0; i < n; i++) {
        const prefix = 20 + (next() % 13);
        const address = (0x0a000000 | (next() & 0x3fff)) >>> 0;
        const network = (address & maskOf(prefix)) >>> 0;
        blocks.push(`${formatIpv4(network)}/${prefix}`);
      }
      const pairwise = blocks.some((a, i) => blocks.some((b, j) => i < j && overlaps(a, b)));
      const found = findOverlap(blocks);
      expect(found !== null, blocks.join(" ")).toBe(pairwise);
      if (found !== null) expect(overlaps(found.firstBlock, found.secondBlock)).toBe(true);
    }
  });
});

describe("findOverlapAcrossGroups", () => {
  it("reports nothing for disjoint domain-optional domains", () => {
    expect(
      findOverlapAcrossGroups([
        { id: "alpha", cidrBlocks: ["10.0.0.0/24", "10.0.2.0/24"] },
        { id: "beta", cidrBlocks: ["10.0.1.0/24", "10.0.3.0/24"] },
        { id: "gamma", cidrBlocks: [] },
      ]),
    ).toBeNull();
  });

  it("allows overlapping blocks inside one domain", () => {
    expect(
      findOverlapAcrossGroups([
        { id: "alpha", cidrBlocks: ["10.0.0.0/8", "10.1.0.0/16", "10.1.0.0/16"] },
        { id: "beta", cidrBlocks: ["192.168.0.0/16"] },
      ]),
    ).toBeNull();
  });

  const conflicts: [string, { id: string; cidrBlocks: string[] }[], [string, string], [string, string]][] = [
    [
      "identical blocks",
      [
        { id: "alpha", cidrBlocks: ["203.0.113.0/24"] },
        { id: "beta", cidrBlocks: ["203.0.113.0/24"] },
      ],
      ["alpha", "203.0.113.0/24"],
      ["beta", "203.0.113.0/24"],
    ],
    [
      "a /32 inside another domain's /24",
      [
        { id: "alpha", cidrBlocks: ["198.51.100.0/24", "203.0.113.0/24"] },
        { id: "beta", cidrBlocks: ["192.0.2.0/24", "203.0.113.255/32"] },
      ],
      ["alpha", "203.0.113.0/24"],
      ["beta", "203.0.113.255/32"],
    ],
    [
      "/0 against anything",
      [
        { id: "alpha", cidrBlocks: ["203.0.113.7/32"] },
        { id: "beta", cidrBlocks: ["0.0.0.0/0"] },
      ],
      ["alpha", "203.0.113.7/32"],
      ["beta", "0.0.0.0/0"],
    ],
    [
      "a nested own block does not hide another domain's block",
      [
        { id: "alpha", cidrBlocks: ["10.0.0.0/8", "10.1.0.0/16"] },
        { id: "beta", cidrBlocks: ["10.2.0.0/16"] },
      ],
      ["alpha", "10.0.0.0/8"],
      ["beta", "10.2.0.0/16"],
    ],
  ];
  it.each(conflicts)("reports %s", (_name, groups, a, b) => {
    expect(findOverlapAcrossGroups(groups)).toEqual({
      a: { id: a[0], cidrBlock: a[1] },
      b: { id: b[0], cidrBlock: b[1] },
    });
  });

  it("reports adjacent blocks of different domains as no overlap", () => {
    expect(
      findOverlapAcrossGroups([
        { id: "alpha", cidrBlocks: ["10.0.0.0/25"] },
        { id: "beta", cidrBlocks: ["10.0.0.128/25"] },
      ]),
    ).toBeNull();
  });
});

describe("validateCidrBlocks", () => {
  it("accepts an empty list and a list of valid blocks", () => {
    expect(validateCidrBlocks([])).toEqual([]);
    expect(validateCidrBlocks(["0.0.0.0/0", "203.0.113.7/32", "10.0.0.0/8"])).toEqual([]);
  });

  it("reports each invalid entry by index", () => {
    expect(validateCidrBlocks(["10.0.0.0/8", "10.0.0.1/24", "010.0.0.0/8"])).toEqual([
      { index: 1, message: expect.stringContaining("host bits set; did you mean 10.0.0.0/24?") },
      { index: 2, message: expect.stringContaining("leading zero") },
    ]);
  });

  it(`accepts ${MAX_CIDR_BLOCKS} blocks and rejects ${MAX_CIDR_BLOCKS + 1}`, () => {
    const blocks = Array.from({ length: MAX_CIDR_BLOCKS + 1 }, (_, i) => `10.0.${i}.0/24`);
    expect(validateCidrBlocks(blocks.slice(0, MAX_CIDR_BLOCKS))).toEqual([]);
    expect(validateCidrBlocks(blocks)).toEqual([
      { index: null, message: "at most 100 CIDR blocks, got 101" },
    ]);
  });
});
