/**
 * The SIP guard's rules (src/sip/guard.ts) on a clock of the test's own:
 * token buckets per source and method with Retry-After, blocks after
 * repeated digest failures (dropped on UDP, 403 on TCP/TLS) that end,
 * exempt networks (IPv4, IPv6, IPv4-mapped), bounded memory, and the
 * settings' validation.
 */
import { describe, expect, it } from "vitest";
import {
  DEFAULT_SIP_GUARD,
  loadSipGuardSettings,
  SipGuard,
  type SipGuardSettings,
} from "../../src/sip/guard.js";
import { RefusalLogThrottle } from "../../src/sip/guard-log.js";

function guard(over: Partial<SipGuardSettings> = {}, maxSources?: number) {
  let now = 0;
  const notices: string[] = [];
  const g = new SipGuard(
    { ...DEFAULT_SIP_GUARD, exemptNetworks: [], ...over },
    {
      now: () => now,
      ...(maxSources === undefined ? {} : { maxSources }),
      notice: (n) => notices.push(`${n.address} ${n.reason}`),
    },
  );
  return { g, notices, advance: (ms: number) => (now += ms) };
}

describe("SipGuard", () => {
  it("lets a burst of INVITEs through, then refuses 503 with the seconds until a token is back", () => {
    const { g, notices, advance } = guard({ inviteRate: 2, inviteBurst: 3 });
    const screen = () => g.screen("INVITE", "198.51.100.7", "UDP", false);
    for (let i = 0; i < 3; i++) expect(screen()).toEqual({ action: "pass" });
    expect(screen()).toEqual({ action: "reply", status: 503, reason: "rate-limited-invite", retryAfter: 1 });
    expect(screen()).toMatchObject({ status: 503 });
    // One notice per source and minute, not one per refusal.
    expect(notices).toEqual(["198.51.100.7 rate-limited-invite"]);
    advance(500);
    expect(screen()).toEqual({ action: "pass" });
    expect(screen()).toMatchObject({ status: 503 });
    // Another source, and REGISTER from the same source, have buckets of their own.
    expect(g.screen("INVITE", "198.51.100.8", "UDP", false)).toEqual({ action: "pass" });
    expect(g.screen("REGISTER", "198.51.100.7", "UDP", false)).toEqual({ action: "pass" });
    // In-dialog requests and other methods are not limited.
    expect(g.screen("BYE", "198.51.100.7", "UDP", true)).toEqual({ action: "pass" });
    expect(g.screen("OPTIONS", "198.51.100.7", "UDP", false)).toEqual({ action: "pass" });
  });

  it("says how long to wait when the rate is slow", () => {
    const { g } = guard({ registerRate: 0.1, registerBurst: 1 });
    expect(g.screen("REGISTER", "203.0.113.1", "UDP", false)).toEqual({ action: "pass" });
    expect(g.screen("REGISTER", "203.0.113.1", "UDP", false)).toMatchObject({ status: 503, retryAfter: 10 });
  });

  it("blocks a source after repeated digest failures within the window, then lets it back", () => {
    const { g, notices, advance } = guard({ authFailures: 3, authWindowSeconds: 60, blockSeconds: 120 });
    const a = "192.0.2.50";
    expect(g.authFailed(a)).toBe(false);
    advance(61_000); // the first failure leaves the window
    expect(g.authFailed(a)).toBe(false);
    expect(g.authFailed(a)).toBe(false);
    expect(g.screen("REGISTER", a, "UDP", false)).toEqual({ action: "pass" });
    expect(g.authFailed(a)).toBe(true);
    expect(notices).toEqual([`${a} blocked`]);
    expect(g.blocked(a)).toBe(true);
    expect(g.blockedCount).toBe(1);
    expect(g.screen("REGISTER", a, "UDP", false)).toEqual({ action: "drop", reason: "blocked" });
    expect(g.screen("OPTIONS", a, "UDP", false)).toEqual({ action: "drop", reason: "blocked" });
    expect(g.screen("BYE", a, "UDP", true)).toEqual({ action: "drop", reason: "blocked" });
    expect(g.screen("REGISTER", a, "TCP", false)).toEqual({
      action: "reply",
      status: 403,
      reason: "blocked",
    });
    expect(g.screen("INVITE", "192.0.2.51", "UDP", false)).toEqual({ action: "pass" });
    advance(120_000);
    expect(g.blocked(a)).toBe(false);
    expect(g.screen("REGISTER", a, "UDP", false)).toEqual({ action: "pass" });
  });

  it("forgets a source's failures at a good answer", () => {
    const { g } = guard({ authFailures: 2 });
    expect(g.authFailed("192.0.2.60")).toBe(false);
    g.authSucceeded("192.0.2.60");
    expect(g.authFailed("192.0.2.60")).toBe(false);
    expect(g.authFailed("192.0.2.60")).toBe(true);
  });

  it("never limits nor blocks exempt networks, IPv4, IPv6 and IPv4-mapped alike", () => {
    const { g } = guard({
      inviteRate: 1,
      inviteBurst: 1,
      authFailures: 1,
      exemptNetworks: ["10.1.0.0/16", "2001:db8::/32"],
    });
    for (const address of ["10.1.2.3", "::ffff:10.1.9.9", "2001:db8::5"]) {
      for (let i = 0; i < 5; i++)
        expect(g.screen("INVITE", address, "UDP", false)).toEqual({ action: "pass" });
      expect(g.authFailed(address)).toBe(false);
    }
    expect(g.screen("INVITE", "10.2.0.1", "UDP", false)).toEqual({ action: "pass" });
    expect(g.screen("INVITE", "10.2.0.1", "UDP", false)).toMatchObject({ status: 503 });
    expect(g.screen("INVITE", "2001:db9::1", "UDP", false)).toEqual({ action: "pass" });
    expect(g.screen("INVITE", "2001:db9::1", "UDP", false)).toMatchObject({ status: 503 });
  });

  it("keeps at most maxSources sources and sweeps those back at rest", () => {
    const { g, advance } = guard({ inviteRate: 10, inviteBurst: 10 }, 100);
    for (let i = 0; i < 250; i++) g.screen("INVITE", `198.18.0.${i % 250}`, "UDP", false);
    expect(g.tracked).toBeLessThanOrEqual(100);
    g.authFailed("198.18.1.1");
    advance(61_000);
    g.screen("OPTIONS", "198.18.9.9", "UDP", false); // the sweep runs on the next request
    expect(g.tracked).toBe(0);
  });

  it("reads its settings from the environment and names a bad one", () => {
    expect(loadSipGuardSettings({})).toEqual(DEFAULT_SIP_GUARD);
    expect(
      loadSipGuardSettings({
        SIP_GUARD_INVITE_RATE: "5",
        SIP_GUARD_INVITE_BURST: "10",
        SIP_GUARD_REGISTER_RATE: "0",
        SIP_GUARD_AUTH_FAILURES: "4",
        SIP_GUARD_BLOCK_SECONDS: "30",
        SIP_GUARD_EXEMPT_NETWORKS: " 192.0.2.0/24 , 2001:db8::/32,",
      }),
    ).toMatchObject({
      inviteRate: 5,
      inviteBurst: 10,
      registerRate: 0,
      authFailures: 4,
      blockSeconds: 30,
      exemptNetworks: ["192.0.2.0/24", "2001:db8::/32"],
    });
    expect(loadSipGuardSettings({ SIP_GUARD_EXEMPT_NETWORKS: "" }).exemptNetworks).toEqual([]);
    expect(() => loadSipGuardSettings({ SIP_GUARD_INVITE_RATE: "fast" })).toThrow(/SIP_GUARD_INVITE_RATE/);
    expect(() => loadSipGuardSettings({ SIP_GUARD_AUTH_FAILURES: "2.5" })).toThrow(/SIP_GUARD_AUTH_FAILURES/);
    expect(() => loadSipGuardSettings({ SIP_GUARD_EXEMPT_NETWORKS: "10.0.0.0/33" })).toThrow(
      /SIP_GUARD_EXEMPT_NETWORKS.*10\.0\.0\.0\/33/,
    );
    expect(() => loadSipGuardSettings({ SIP_GUARD_REGISTER_BURST: "0" })).toThrow(/SIP_GUARD_REGISTER_BURST/);
  });
});

describe("the guard's sources", () => {
  it("are one source whether an address arrives IPv4-mapped (a dual-stack socket) or plain", () => {
    const { g } = guard({ authFailures: 2 });
    g.authFailed("::ffff:192.0.2.70");
    expect(g.authFailed("192.0.2.70")).toBe(true);
    expect(g.screen("OPTIONS", "::ffff:192.0.2.70", "UDP", false)).toEqual({
      action: "drop",
      reason: "blocked",
    });
    expect(g.blocked("192.0.2.70")).toBe(true);
  });
});

describe("the refusal log throttle", () => {
  it("lets one line per source and reason through an interval, and stays bounded", () => {
    let now = 0;
    const t = new RefusalLogThrottle({ intervalMs: 60_000, maxKeys: 3, now: () => now });
    expect(t.first("192.0.2.1", "scanner")).toBe(true);
    expect(t.first("192.0.2.1", "scanner")).toBe(false);
    expect(t.first("192.0.2.1", "parse-error")).toBe(true);
    expect(t.first("192.0.2.2", "scanner")).toBe(true);
    now = 59_999;
    expect(t.first("192.0.2.1", "scanner")).toBe(false);
    now = 60_000;
    expect(t.first("192.0.2.1", "scanner")).toBe(true);
    for (let i = 0; i < 100; i++) t.first(`198.51.100.${i}`, "scanner");
    expect(t.size).toBeLessThanOrEqual(3);
    now = 200_000;
    t.first("203.0.113.1", "scanner");
    expect(t.size).toBe(1);
  });
});
