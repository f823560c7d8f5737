import { describe, expect, it } from "vitest";
import {
  authorizeSipCall,
  type DomainOptionalCandidate,
  matchDomainOptional,
  type SipCallAuthorization,
  type SipCallAuthorizationInput,
  type SipDomainAuthorizationFacts,
} from "../../src/voice/sip-domains/authorization.js";
import { findOverlapAcrossGroups } from "../../src/voice/sip-domains/cidr.js";

const domain = (facts: Partial<SipDomainAuthorizationFacts>): SipDomainAuthorizationFacts => ({
  cidrBlocks: [],
  hasUsers: false,
  domainOptional: false,
  deleted: false,
  ...facts,
});

const call = (
  facts: Partial<SipDomainAuthorizationFacts>,
  sourceIp: string,
  extra: Partial<Omit<SipCallAuthorizationInput, "domain" | "sourceIp">> = {},
): SipCallAuthorizationInput => ({
  domain: domain(facts),
  sourceIp,
  authenticatedUser: false,
  namedDomain: true,
  ...extra,
});

type Expected =
  | { allow: true; rule: 2 | 3; matchedBlock: string }
  | { allow: false; rule: 1 | 2 | 3 | 5 | null; code: string };

function expectDecision(actual: SipCallAuthorization, expected: Expected): void {
  if (expected.allow) {
    expect(actual).toEqual(expected);
  } else {
    expect(actual).toMatchObject(expected);
    if (!actual.allow) expect(actual.reason).not.toBe("");
  }
}

const TEST_NET_3 = ["203.0.113.0/24"];
const SEVERAL = ["198.51.100.0/24", "192.0.2.7/32", "10.0.0.0/8"];

const cases: [string, SipCallAuthorizationInput, Expected][] = [
  // Rule 1: no blocks and no users: unusable.
  [
    "rule 1: denies any call to a domain with no CIDR blocks and no users",
    call({}, "203.0.113.7"),
    { allow: false, rule: 1, code: "DOMAIN_UNUSABLE" },
  ],
  [
    "rule 1: denies even an authenticated-looking request with no blocks and no users",
    call({}, "203.0.113.7", { authenticatedUser: true }),
    { allow: false, rule: 1, code: "DOMAIN_UNUSABLE" },
  ],
  [
    "rule 1: denies a malformed source address as unusable first (domain checks come first)",
    call({}, "not-an-ip"),
    { allow: false, rule: 1, code: "DOMAIN_UNUSABLE" },
  ],
  [
    "rule 1: denies an unnamed call to a domain-optional domain with no blocks and no users",
    call({ domainOptional: true }, "203.0.113.7", { namedDomain: false }),
    { allow: false, rule: 1, code: "DOMAIN_UNUSABLE" },
  ],

  // Rule 2: blocks and no users: any matching address, no authentication.
  [
    "rule 2: allows 203.0.113.7 in 203.0.113.0/24 without auth",
    call({ cidrBlocks: TEST_NET_3 }, "203.0.113.7"),
    { allow: true, rule: 2, matchedBlock: "203.0.113.0/24" },
  ],
  [
    "rule 2: allows 203.0.113.0 (network) in 203.0.113.0/24 without auth",
    call({ cidrBlocks: TEST_NET_3 }, "203.0.113.0"),
    { allow: true, rule: 2, matchedBlock: "203.0.113.0/24" },
  ],
  [
    "rule 2: allows 203.0.113.255 (broadcast) in 203.0.113.0/24 without auth",
    call({ cidrBlocks: TEST_NET_3 }, "203.0.113.255"),
    { allow: true, rule: 2, matchedBlock: "203.0.113.0/24" },
  ],
  [
    "rule 2: denies 203.0.112.255 (just below 203.0.113.0/24)",
    call({ cidrBlocks: TEST_NET_3 }, "203.0.112.255"),
    { allow: false, rule: 2, code: "SOURCE_IP_NOT_ALLOWED" },
  ],
  [
    "rule 2: denies 203.0.114.0 (just above 203.0.113.0/24)",
    call({ cidrBlocks: TEST_NET_3 }, "203.0.114.0"),
    { allow: false, rule: 2, code: "SOURCE_IP_NOT_ALLOWED" },
  ],
  [
    "rule 2: allows 203.0.113.7 with an authenticated flag that is ignored (no users)",
    call({ cidrBlocks: TEST_NET_3 }, "203.0.113.7", { authenticatedUser: true }),
    { allow: true, rule: 2, matchedBlock: "203.0.113.0/24" },
  ],
  [
    "rule 2: allows the exact address of a /32",
    call({ cidrBlocks: ["203.0.113.7/32"] }, "203.0.113.7"),
    { allow: true, rule: 2, matchedBlock: "203.0.113.7/32" },
  ],
  [
    "rule 2: denies the neighbours of a /32 (203.0.113.6)",
    call({ cidrBlocks: ["203.0.113.7/32"] }, "203.0.113.6"),
    { allow: false, rule: 2, code: "SOURCE_IP_NOT_ALLOWED" },
  ],
  [
    "rule 2: denies the neighbours of a /32 (203.0.113.8)",
    call({ cidrBlocks: ["203.0.113.7/32"] }, "203.0.113.8"),
    { allow: false, rule: 2, code: "SOURCE_IP_NOT_ALLOWED" },
  ],
  [
    "rule 2: allows 0.0.0.0 in 0.0.0.0/0",
    call({ cidrBlocks: ["0.0.0.0/0"] }, "0.0.0.0"),
    { allow: true, rule: 2, matchedBlock: "0.0.0.0/0" },
  ],
  [
    "rule 2: allows 255.255.255.255 in 0.0.0.0/0",
    call({ cidrBlocks: ["0.0.0.0/0"] }, "255.255.255.255"),
    { allow: true, rule: 2, matchedBlock: "0.0.0.0/0" },
  ],
  [
    "rule 2: allows 255.255.255.255 in 255.255.255.255/32",
    call({ cidrBlocks: ["255.255.255.255/32"] }, "255.255.255.255"),
    { allow: true, rule: 2, matchedBlock: "255.255.255.255/32" },
  ],
  [
    "rule 2: allows 0.0.0.0 in 0.0.0.0/32",
    call({ cidrBlocks: ["0.0.0.0/32"] }, "0.0.0.0"),
    { allow: true, rule: 2, matchedBlock: "0.0.0.0/32" },
  ],
  [
    "rule 2: denies 0.0.0.1 outside 0.0.0.0/32",
    call({ cidrBlocks: ["0.0.0.0/32"] }, "0.0.0.1"),
    { allow: false, rule: 2, code: "SOURCE_IP_NOT_ALLOWED" },
  ],
  [
    "rule 2: allows 255.255.255.255 in 128.0.0.0/1 (high bit set)",
    call({ cidrBlocks: ["128.0.0.0/1"] }, "255.255.255.255"),
    { allow: true, rule: 2, matchedBlock: "128.0.0.0/1" },
  ],
  [
    "rule 2: allows an address in the last of several blocks",
    call({ cidrBlocks: SEVERAL }, "10.255.255.255"),
    { allow: true, rule: 2, matchedBlock: "10.0.0.0/8" },
  ],
  [
    "rule 2: allows the /32 among several blocks",
    call({ cidrBlocks: SEVERAL }, "192.0.2.7"),
    { allow: true, rule: 2, matchedBlock: "192.0.2.7/32" },
  ],
  [
    "rule 2: reports the first matching block when blocks nest",
    call({ cidrBlocks: ["10.1.0.0/16", "10.0.0.0/8"] }, "10.1.2.3"),
    { allow: true, rule: 2, matchedBlock: "10.1.0.0/16" },
  ],
  [
    "rule 2: denies 192.0.2.8, outside every one of several blocks",
    call({ cidrBlocks: SEVERAL }, "192.0.2.8"),
    { allow: false, rule: 2, code: "SOURCE_IP_NOT_ALLOWED" },
  ],
  [
    "rule 2: denies 11.0.0.0, just past 10.0.0.0/8",
    call({ cidrBlocks: SEVERAL }, "11.0.0.0"),
    { allow: false, rule: 2, code: "SOURCE_IP_NOT_ALLOWED" },
  ],
  [
    "rule 2: denies 0.0.0.0 outside every block",
    call({ cidrBlocks: SEVERAL }, "0.0.0.0"),
    { allow: false, rule: 2, code: "SOURCE_IP_NOT_ALLOWED" },
  ],
  [
    "rule 2: denies 255.255.255.255 outside every block",
    call({ cidrBlocks: SEVERAL }, "255.255.255.255"),
    { allow: false, rule: 2, code: "SOURCE_IP_NOT_ALLOWED" },
  ],

  // Rule 3: blocks and users: authentication required, from a matching address.
  [
    "rule 3: allows an authenticated user from 203.0.113.7 in 203.0.113.0/24",
    call({ cidrBlocks: TEST_NET_3, hasUsers: true }, "203.0.113.7", { authenticatedUser: true }),
    { allow: true, rule: 3, matchedBlock: "203.0.113.0/24" },
  ],
  [
    "rule 3: allows an authenticated user from 203.0.113.0 (network)",
    call({ cidrBlocks: TEST_NET_3, hasUsers: true }, "203.0.113.0", { authenticatedUser: true }),
    { allow: true, rule: 3, matchedBlock: "203.0.113.0/24" },
  ],
  [
    "rule 3: allows an authenticated user from 203.0.113.255 (broadcast)",
    call({ cidrBlocks: TEST_NET_3, hasUsers: true }, "203.0.113.255", { authenticatedUser: true }),
    { allow: true, rule: 3, matchedBlock: "203.0.113.0/24" },
  ],
  [
    "rule 3: allows an authenticated user from anywhere in 0.0.0.0/0",
    call({ cidrBlocks: ["0.0.0.0/0"], hasUsers: true }, "198.51.100.9", { authenticatedUser: true }),
    { allow: true, rule: 3, matchedBlock: "0.0.0.0/0" },
  ],
  [
    "rule 3: allows an authenticated user from the exact /32",
    call({ cidrBlocks: SEVERAL, hasUsers: true }, "192.0.2.7", { authenticatedUser: true }),
    { allow: true, rule: 3, matchedBlock: "192.0.2.7/32" },
  ],
  [
    "rule 3: denies an unauthenticated request from a matching address",
    call({ cidrBlocks: TEST_NET_3, hasUsers: true }, "203.0.113.7"),
    { allow: false, rule: 3, code: "AUTHENTICATION_REQUIRED" },
  ],
  [
    "rule 3: denies an unauthenticated request even from 0.0.0.0/0",
    call({ cidrBlocks: ["0.0.0.0/0"], hasUsers: true }, "255.255.255.255"),
    { allow: false, rule: 3, code: "AUTHENTICATION_REQUIRED" },
  ],
  [
    "rule 3: denies an authenticated user from outside every block",
    call({ cidrBlocks: SEVERAL, hasUsers: true }, "203.0.113.7", { authenticatedUser: true }),
    { allow: false, rule: 3, code: "SOURCE_IP_NOT_ALLOWED" },
  ],
  [
    "rule 3: denies an authenticated user from the neighbour of a /32",
    call({ cidrBlocks: ["192.0.2.7/32"], hasUsers: true }, "192.0.2.8", { authenticatedUser: true }),
    { allow: false, rule: 3, code: "SOURCE_IP_NOT_ALLOWED" },
  ],
  [
    "rule 3: reports the address, not authentication, when both fail",
    call({ cidrBlocks: TEST_NET_3, hasUsers: true }, "198.51.100.1"),
    { allow: false, rule: 3, code: "SOURCE_IP_NOT_ALLOWED" },
  ],
  [
    "rule 3: denies an authenticated user when the domain has users but no CIDR blocks",
    call({ hasUsers: true }, "203.0.113.7", { authenticatedUser: true }),
    { allow: false, rule: 3, code: "DOMAIN_UNUSABLE" },
  ],
  [
    "rule 3: denies an unauthenticated request when the domain has users but no CIDR blocks",
    call({ hasUsers: true }, "203.0.113.7"),
    { allow: false, rule: 3, code: "DOMAIN_UNUSABLE" },
  ],

  // Rule 4: domainOptional true: unnamed calls matched by source network; rules 1-3 still apply.
  [
    "rule 4: allows an unnamed call from a matching address to a domain-optional domain (rule 2)",
    call({ cidrBlocks: TEST_NET_3, domainOptional: true }, "203.0.113.7", { namedDomain: false }),
    { allow: true, rule: 2, matchedBlock: "203.0.113.0/24" },
  ],
  [
    "rule 4: allows a named call to a domain-optional domain too",
    call({ cidrBlocks: TEST_NET_3, domainOptional: true }, "203.0.113.7"),
    { allow: true, rule: 2, matchedBlock: "203.0.113.0/24" },
  ],
  [
    "rule 4: still requires authentication for an unnamed call when users are defined",
    call({ cidrBlocks: TEST_NET_3, domainOptional: true, hasUsers: true }, "203.0.113.7", {
      namedDomain: false,
    }),
    { allow: false, rule: 3, code: "AUTHENTICATION_REQUIRED" },
  ],
  [
    "rule 4: allows an authenticated unnamed call when users are defined",
    call({ cidrBlocks: TEST_NET_3, domainOptional: true, hasUsers: true }, "203.0.113.7", {
      namedDomain: false,
      authenticatedUser: true,
    }),
    { allow: true, rule: 3, matchedBlock: "203.0.113.0/24" },
  ],
  [
    "rule 4: still denies an unnamed call from outside the blocks",
    call({ cidrBlocks: TEST_NET_3, domainOptional: true }, "198.51.100.1", { namedDomain: false }),
    { allow: false, rule: 2, code: "SOURCE_IP_NOT_ALLOWED" },
  ],

  // Rule 5: domainOptional false: calls must name the domain.
  [
    "rule 5: denies an unnamed call to a domain that is not domain-optional",
    call({ cidrBlocks: TEST_NET_3 }, "203.0.113.7", { namedDomain: false }),
    { allow: false, rule: 5, code: "DOMAIN_NAME_REQUIRED" },
  ],
  [
    "rule 5: denies an unnamed authenticated call to a domain with users that is not domain-optional",
    call({ cidrBlocks: TEST_NET_3, hasUsers: true }, "203.0.113.7", {
      namedDomain: false,
      authenticatedUser: true,
    }),
    { allow: false, rule: 5, code: "DOMAIN_NAME_REQUIRED" },
  ],
  [
    "rule 5: checks naming before rule 1",
    call({}, "203.0.113.7", { namedDomain: false }),
    { allow: false, rule: 5, code: "DOMAIN_NAME_REQUIRED" },
  ],
  [
    "rule 5: allows a named call to a domain that is not domain-optional",
    call({ cidrBlocks: TEST_NET_3 }, "203.0.113.7", { namedDomain: true }),
    { allow: true, rule: 2, matchedBlock: "203.0.113.0/24" },
  ],

  // Deleted domains accept no calls.
  [
    "deleted: denies a call that rule 2 would allow",
    call({ cidrBlocks: TEST_NET_3, deleted: true }, "203.0.113.7"),
    { allow: false, rule: null, code: "DOMAIN_DELETED" },
  ],
  [
    "deleted: denies a call that rule 3 would allow",
    call({ cidrBlocks: TEST_NET_3, hasUsers: true, deleted: true }, "203.0.113.7", {
      authenticatedUser: true,
    }),
    { allow: false, rule: null, code: "DOMAIN_DELETED" },
  ],
  [
    "deleted: denies an unnamed call to a deleted domain-optional domain",
    call({ cidrBlocks: TEST_NET_3, domainOptional: true, deleted: true }, "203.0.113.7", {
      namedDomain: false,
    }),
    { allow: false, rule: null, code: "DOMAIN_DELETED" },
  ],
  [
    "deleted: reports deletion before rule 1",
    call({ deleted: true }, "203.0.113.7"),
    { allow: false, rule: null, code: "DOMAIN_DELETED" },
  ],

  // Malformed input fails closed.
  ...(
    [
      "010.0.0.1",
      "10.0.0.256",
      "10.0.0",
      "",
      " 203.0.113.7",
      "203.0.113.7/32",
      "::ffff:203.0.113.7",
      "2001:db8::1",
    ] as const
  ).map((sourceIp): [string, SipCallAuthorizationInput, Expected] => [
    `malformed source: denies ${JSON.stringify(sourceIp)} even with 0.0.0.0/0`,
    call({ cidrBlocks: ["0.0.0.0/0"] }, sourceIp),
    { allow: false, rule: null, code: "INVALID_SOURCE_IP" },
  ]),
  [
    "malformed block: a stored block with host bits set matches nothing",
    call({ cidrBlocks: ["203.0.113.1/24"] }, "203.0.113.7"),
    { allow: false, rule: 2, code: "SOURCE_IP_NOT_ALLOWED" },
  ],
  [
    "malformed block: a garbage block matches nothing but valid blocks still match",
    call({ cidrBlocks: ["garbage", "203.0.113.0/24"] }, "203.0.113.7"),
    { allow: true, rule: 2, matchedBlock: "203.0.113.0/24" },
  ],
];

describe("authorizeSipCall", () => {
  it.each(cases)("%s", (_name, input, expected) => {
    expectDecision(authorizeSipCall(input), expected);
  });

  it("is pure: same input, same answer, input untouched", () => {
    const input = call({ cidrBlocks: [...SEVERAL], hasUsers: true }, "10.1.2.3", { authenticatedUser: true });
    const snapshot = structuredClone(input);
    const first = authorizeSipCall(input);
    expect(authorizeSipCall(input)).toEqual(first);
    expect(input).toEqual(snapshot);
  });

  it("covers every combination of flags with a decision and a reason on denial", () => {
    const flags = [false, true];
    for (const deleted of flags)
      for (const domainOptional of flags)
        for (const hasUsers of flags)
          for (const authenticatedUser of flags)
            for (const namedDomain of flags)
              for (const cidrBlocks of [[], TEST_NET_3])
                for (const sourceIp of ["203.0.113.7", "198.51.100.7"]) {
                  const result = authorizeSipCall({
                    domain: { cidrBlocks, hasUsers, domainOptional, deleted },
                    sourceIp,
                    authenticatedUser,
                    namedDomain,
                  });
                  const shouldAllow =
                    !deleted &&
                    (domainOptional || namedDomain) &&
                    cidrBlocks.length > 0 &&
                    sourceIp === "203.0.113.7" &&
                    (!hasUsers || authenticatedUser);
                  expect(result.allow, JSON.stringify({ deleted, domainOptional, hasUsers })).toBe(
                    shouldAllow,
                  );
                  if (!result.allow) expect(result.reason.length).toBeGreaterThan(0);
                }
  });
});

describe("matchDomainOptional", () => {
  const domains: DomainOptionalCandidate[] = [
    { id: "alpha", cidrBlocks: ["203.0.113.0/24", "198.51.100.7/32"] },
    { id: "beta", cidrBlocks: ["10.0.0.0/8", "10.1.0.0/16"] },
    { id: "gamma", cidrBlocks: [] },
  ];

  const matches: [string, string, string, string][] = [
    ["network address", "203.0.113.0", "alpha", "203.0.113.0/24"],
    ["broadcast address", "203.0.113.255", "alpha", "203.0.113.0/24"],
    ["a /32", "198.51.100.7", "alpha", "198.51.100.7/32"],
    ["a nested block of the same domain", "10.1.2.3", "beta", "10.0.0.0/8"],
    ["the top of a /8", "10.255.255.255", "beta", "10.0.0.0/8"],
  ];
  it.each(matches)("matches one domain for %s (%s -> %s)", (_name, ip, id, cidrBlock) => {
    expect(matchDomainOptional(domains, ip)).toEqual({ matched: true, id, cidrBlock });
  });

  const misses: [string, string][] = [
    ["just below a /24", "203.0.112.255"],
    ["the neighbour of a /32", "198.51.100.8"],
    ["0.0.0.0", "0.0.0.0"],
    ["255.255.255.255", "255.255.255.255"],
    ["just past a /8", "11.0.0.0"],
  ];
  it.each(misses)("matches no domain for %s (%s)", (_name, ip) => {
    expect(matchDomainOptional(domains, ip)).toMatchObject({
      matched: false,
      code: "NO_MATCHING_DOMAIN",
      candidates: [],
    });
  });

  it("matches no domain when there are no domain-optional domains", () => {
    expect(matchDomainOptional([], "203.0.113.7")).toMatchObject({
      matched: false,
      code: "NO_MATCHING_DOMAIN",
    });
  });

  it("matches the one domain with 0.0.0.0/0 for any address", () => {
    const all = [{ id: "catch-all", cidrBlocks: ["0.0.0.0/0"] }];
    for (const ip of ["0.0.0.0", "255.255.255.255", "128.0.0.0"]) {
      expect(matchDomainOptional(all, ip)).toEqual({
        matched: true,
        id: "catch-all",
        cidrBlock: "0.0.0.0/0",
      });
    }
  });

  it.each(["010.0.0.1", "10.0.0.256", "", "10.0.0.0/8"])("refuses a malformed source address %j", (ip) => {
    expect(matchDomainOptional(domains, ip)).toMatchObject({ matched: false, code: "INVALID_SOURCE_IP" });
  });

  it("ignores malformed stored blocks", () => {
    expect(matchDomainOptional([{ id: "bad", cidrBlocks: ["10.0.0.1/8"] }], "10.0.0.1")).toMatchObject({
      matched: false,
      code: "NO_MATCHING_DOMAIN",
    });
  });

  it("refuses to guess when overlapping domain-optional domains both match, and findOverlapAcrossGroups reports the set", () => {
    const overlapping: DomainOptionalCandidate[] = [
      { id: "alpha", cidrBlocks: ["203.0.113.0/24"] },
      { id: "beta", cidrBlocks: ["192.0.2.0/24"] },
      { id: "delta", cidrBlocks: ["203.0.113.128/25"] },
    ];
    expect(matchDomainOptional(overlapping, "203.0.113.200")).toMatchObject({
      matched: false,
      code: "AMBIGUOUS_DOMAIN",
      candidates: ["alpha", "delta"],
    });
    // Outside the overlap, the match is still unambiguous.
    expect(matchDomainOptional(overlapping, "203.0.113.1")).toEqual({
      matched: true,
      id: "alpha",
      cidrBlock: "203.0.113.0/24",
    });
    // The write path refuses such a set in the first place.
    expect(findOverlapAcrossGroups(overlapping)).toEqual({
      a: { id: "alpha", cidrBlock: "203.0.113.0/24" },
      b: { id: "delta", cidrBlock: "203.0.113.128/25" },
    });
  });

  it("has no overlap to report for a valid domain-optional set, so every address matches at most one domain", () => {
    expect(findOverlapAcrossGroups(domains)).toBeNull();
  });

  it("feeds authorizeSipCall: a matched unnamed call is then authorized by rules 1-3", () => {
    const match = matchDomainOptional(domains, "203.0.113.7");
    expect(match.matched).toBe(true);
    if (!match.matched) return;
    const facts = domains.find((d) => d.id === match.id)!;
    expect(
      authorizeSipCall({
        domain: { cidrBlocks: facts.cidrBlocks, hasUsers: false, domainOptional: true, deleted: false },
        sourceIp: "203.0.113.7",
        authenticatedUser: false,
        namedDomain: false,
      }),
    ).toEqual({ allow: true, rule: 2, matchedBlock: "203.0.113.0/24" });
  });
});
