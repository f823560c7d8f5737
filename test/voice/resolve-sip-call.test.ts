/**
 * SipDomainsDomain.resolveSipCall — what the call engine asks for every SIP
 * call: which domain it belongs to (by FQDN, or by source network for
 * domain-optional domains) and whether authorization rules 1-5 and the
 * collaboration type's channel_limit let it through.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { SipCallResolution, SipUserDirectory } from "../../src/voice/sip-domains/call-resolution.js";
import { SipDomainsDomain } from "../../src/voice/sip-domains/domain.js";
import type { NewSipDomain } from "../../src/voice/sip-domains/model.js";
import { VoiceStore } from "../../src/voice/sip-domains/repository.js";
import { newProject, testConfig } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { newSipDomainId } from "./support.js";

const BASE = "sip.switchboard.local";

function settings(overrides: Partial<NewSipDomain> = {}): NewSipDomain {
  return {
    displayName: "",
    allowRegister: false,
    callTerminationMode: "PSTN_TRUNK",
    callTerminationHandlerUris: [],
    cidrBlocks: [],
    callRecording: undefined,
    channelLimit: 0,
    type: undefined,
    ...overrides,
  };
}

const blocks = (...cidrs: string[]) => cidrs.map((cidrBlock) => ({ displayName: "", cidrBlock }));

function expectDenied(result: SipCallResolution, code: string, rule?: number | null): void {
  expect(result.allow, JSON.stringify(result)).toBe(false);
  if (!result.allow) {
    expect(result.code).toBe(code);
    if (rule !== undefined) expect(result.rule).toBe(rule);
    expect(result.reason).not.toBe("");
  }
}

describe.each(testDatabases())("resolveSipCall on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock();
  const usersOf = new Set<string>();
  const users: SipUserDirectory = { hasUsers: async (d) => usersOf.has(d.id) };
  let domain: SipDomainsDomain;

  beforeAll(() => {
    domain = new SipDomainsDomain(new VoiceStore(database.db), clock, testConfig().sipDomains, users);
  });

  async function create(overrides: Partial<NewSipDomain> = {}) {
    const project = (await newProject(database.db)).split("/")[1]!;
    return domain.create(project, newSipDomainId("call"), settings(overrides));
  }

  describe("calls naming a domain", () => {
    it("rule 2: admits any address in the blocks without authentication, and nothing else", async () => {
      const d = await create({ cidrBlocks: blocks("198.51.100.0/24", "203.0.113.7/32") });
      const ok = await domain.resolveSipCall({
        domainName: d.fqdn,
        sourceIp: "203.0.113.7",
        authenticatedUser: false,
      });
      expect(ok).toMatchObject({ allow: true, rule: 2, matchedBlock: "203.0.113.7/32", namedDomain: true });
      expect(ok.domain?.name).toBe(d.name);
      expectDenied(
        await domain.resolveSipCall({
          domainName: d.fqdn,
          sourceIp: "203.0.113.8",
          authenticatedUser: false,
        }),
        "SOURCE_IP_NOT_ALLOWED",
        2,
      );
      expectDenied(
        await domain.resolveSipCall({ domainName: d.fqdn, sourceIp: "not-an-ip", authenticatedUser: false }),
        "INVALID_SOURCE_IP",
        null,
      );
    });

    it("rule 1: a domain without blocks or users takes no call", async () => {
      const d = await create();
      expectDenied(
        await domain.resolveSipCall({
          domainName: d.fqdn,
          sourceIp: "198.51.100.1",
          authenticatedUser: true,
        }),
        "DOMAIN_UNUSABLE",
        1,
      );
    });

    it("rule 3: with users, authentication is required, from an address in the blocks", async () => {
      const d = await create({ cidrBlocks: blocks("198.51.100.0/24") });
      usersOf.add(d.id);
      expectDenied(
        await domain.resolveSipCall({
          domainName: d.fqdn,
          sourceIp: "198.51.100.9",
          authenticatedUser: false,
        }),
        "AUTHENTICATION_REQUIRED",
        3,
      );
      expect(
        await domain.resolveSipCall({
          domainName: d.fqdn,
          sourceIp: "198.51.100.9",
          authenticatedUser: true,
        }),
      ).toMatchObject({ allow: true, rule: 3 });
      expectDenied(
        await domain.resolveSipCall({ domainName: d.fqdn, sourceIp: "192.0.2.1", authenticatedUser: true }),
        "SOURCE_IP_NOT_ALLOWED",
        3,
      );
    });

    it("matches the FQDN case-insensitively, with or without a trailing dot", async () => {
      const d = await create({ cidrBlocks: blocks("198.51.100.0/24") });
      for (const name of [d.fqdn.toUpperCase(), `${d.fqdn}.`]) {
        expect(
          (
            await domain.resolveSipCall({
              domainName: name,
              sourceIp: "198.51.100.1",
              authenticatedUser: false,
            })
          ).allow,
        ).toBe(true);
      }
    });

    it.each([
      ["an unknown domain", `nobody-here.${BASE}`],
      ["another base domain", "acme.sip.example.com"],
      ["the base domain itself", BASE],
      ["a nested name", `a.b.${BASE}`],
    ])("refuses %s with DOMAIN_NOT_FOUND", async (_, domainName) => {
      const result = await domain.resolveSipCall({
        domainName,
        sourceIp: "198.51.100.1",
        authenticatedUser: false,
      });
      expectDenied(result, "DOMAIN_NOT_FOUND", null);
      expect(result.domain).toBeUndefined();
    });

    it("refuses every call to a deleted domain", async () => {
      const d = await create({ cidrBlocks: blocks("198.51.100.0/24") });
      await domain.delete(d);
      const result = await domain.resolveSipCall({
        domainName: d.fqdn,
        sourceIp: "198.51.100.1",
        authenticatedUser: true,
      });
      expectDenied(result, "DOMAIN_DELETED", null);
      expect(result.domain?.deleteTime).toBeDefined();
    });

    it("admits named calls to a domain-optional domain too", async () => {
      const d = await create();
      await domain.setDomainOptional(d, true, blocks("100.80.0.0/24"));
      expect(
        await domain.resolveSipCall({ domainName: d.fqdn, sourceIp: "100.80.0.4", authenticatedUser: false }),
      ).toMatchObject({ allow: true, namedDomain: true });
    });
  });

  describe("calls naming no domain (rule 4)", () => {
    it("are matched by source network to the one domain-optional domain", async () => {
      const a = await create();
      const b = await create();
      await domain.setDomainOptional(a, true, blocks("100.81.0.0/24"));
      await domain.setDomainOptional(b, true, blocks("100.81.1.0/24", "100.81.2.0/24"));
      const toA = await domain.resolveSipCall({ sourceIp: "100.81.0.200", authenticatedUser: false });
      expect(toA).toMatchObject({ allow: true, rule: 2, matchedBlock: "100.81.0.0/24", namedDomain: false });
      expect(toA.domain?.name).toBe(a.name);
      const toB = await domain.resolveSipCall({
        domainName: "",
        sourceIp: "100.81.2.1",
        authenticatedUser: false,
      });
      expect(toB.domain?.name).toBe(b.name);
    });

    it("match no domain that is not domain-optional (rule 5), and no deleted one", async () => {
      await create({ cidrBlocks: blocks("100.82.0.0/24") });
      expectDenied(
        await domain.resolveSipCall({ sourceIp: "100.82.0.1", authenticatedUser: false }),
        "NO_MATCHING_DOMAIN",
      );
      const gone = await create();
      await domain.setDomainOptional(gone, true, blocks("100.82.1.0/24"));
      await domain.delete(gone);
      expectDenied(
        await domain.resolveSipCall({ sourceIp: "100.82.1.1", authenticatedUser: false }),
        "NO_MATCHING_DOMAIN",
      );
    });

    it("still need authentication when the matched domain has users", async () => {
      const d = await create();
      await domain.setDomainOptional(d, true, blocks("100.83.0.0/24"));
      usersOf.add(d.id);
      expectDenied(
        await domain.resolveSipCall({ sourceIp: "100.83.0.1", authenticatedUser: false }),
        "AUTHENTICATION_REQUIRED",
        3,
      );
      expect((await domain.resolveSipCall({ sourceIp: "100.83.0.1", authenticatedUser: true })).allow).toBe(
        true,
      );
    });

    it("stop matching when the operator turns domain-optional off", async () => {
      const d = await create();
      await domain.setDomainOptional(d, true, blocks("100.84.0.0/24"));
      expect((await domain.resolveSipCall({ sourceIp: "100.84.0.1", authenticatedUser: false })).allow).toBe(
        true,
      );
      await domain.setDomainOptional(d, false, []);
      expectDenied(
        await domain.resolveSipCall({ sourceIp: "100.84.0.1", authenticatedUser: false }),
        "NO_MATCHING_DOMAIN",
      );
      // named calls still work from the kept blocks
      expect(
        (
          await domain.resolveSipCall({
            domainName: d.fqdn,
            sourceIp: "100.84.0.1",
            authenticatedUser: false,
          })
        ).allow,
      ).toBe(true);
    });
  });

  describe("the collaboration type", () => {
    it("admits the platform's signalling networks, up to channel_limit simultaneous calls", async () => {
      const d = await create({ type: "COLLAB_DIRECT_ROUTING", channelLimit: 3 });
      const call = (activeCalls?: number) =>
        domain.resolveSipCall({
          domainName: d.fqdn,
          sourceIp: "198.51.100.20",
          authenticatedUser: false,
          activeCalls,
        });
      expect(await call()).toMatchObject({ allow: true, matchedBlock: "198.51.100.0/24" });
      expect((await call(2)).allow).toBe(true);
      expectDenied(await call(3), "CHANNEL_LIMIT_REACHED", null);
      expectDenied(await call(10), "CHANNEL_LIMIT_REACHED", null);
      expectDenied(
        await domain.resolveSipCall({
          domainName: d.fqdn,
          sourceIp: "203.0.113.1",
          authenticatedUser: false,
        }),
        "SOURCE_IP_NOT_ALLOWED",
      );
      // calls naming no domain never reach it: it is never domain-optional
      expectDenied(
        await domain.resolveSipCall({ sourceIp: "198.51.100.20", authenticatedUser: false }),
        "NO_MATCHING_DOMAIN",
      );
    });

    it("ignores activeCalls for other types (channel_limit does not apply)", async () => {
      const d = await create({ cidrBlocks: blocks("100.85.0.0/24"), channelLimit: 1 });
      expect(
        (
          await domain.resolveSipCall({
            domainName: d.fqdn,
            sourceIp: "100.85.0.1",
            authenticatedUser: false,
            activeCalls: 50,
          })
        ).allow,
      ).toBe(true);
    });
  });
});
