/**
 * The SIP edge's guard against floods and password guessing, per source
 * address (the IP a request came from; ports do not count):
 *
 * - Rate limits: a token bucket per source for INVITE and one for REGISTER
 *   (outside dialogs: `admit`), `rate` tokens a second up to `burst`. A
 *   request that finds its bucket empty is refused with 503 and a
 *   Retry-After of the seconds until a token is back (at least 1); the
 *   endpoint answers it without keeping any transaction state.
 * - Password guessing: `authFailed` counts a source's failed digest answers
 *   (a wrong password or an unknown user, not a first challenge nor a stale
 *   nonce) within `authWindowMs`; at `authFailures` the source is blocked
 *   for `blockMs`: every request it sends is dropped on UDP (an attacker
 *   learns nothing, not even that the service is there) and refused 403 on
 *   TCP and TLS (the connection is the attacker's own). A good answer
 *   (`authSucceeded`) clears the count.
 * - Sources in `exempt` (CIDR blocks, IPv4 and IPv6; loopback by default:
 *   a proxy such as Kamailio on the same host, the benchmarks) are never
 *   limited nor blocked.
 * - Memory is bounded: at most `maxSources` sources are tracked (a new one
 *   beyond that evicts the longest-tracked), and state that has returned
 *   to rest (a full bucket, no failures, no block) is swept every minute.
 *
 * `screen` is what the endpoint asks of every request that would start a
 * transaction; the guard keeps no SIP knowledge beyond methods.
 */
import net from "node:net";

export interface SipGuardSettings {
  /** INVITE: tokens per second and bucket size, per source. */
  inviteRate: number;
  inviteBurst: number;
  /** REGISTER: tokens per second and bucket size, per source. */
  registerRate: number;
  registerBurst: number;
  /** Failed digest answers within `authWindowSeconds` that block a source (0: never). */
  authFailures: number;
  authWindowSeconds: number;
  /** How long a blocked source stays blocked. */
  blockSeconds: number;
  /** CIDR blocks never limited nor blocked. */
  exemptNetworks: string[];
}

export const DEFAULT_SIP_GUARD: SipGuardSettings = {
  inviteRate: 20,
  inviteBurst: 100,
  registerRate: 20,
  registerBurst: 200,
  authFailures: 10,
  authWindowSeconds: 60,
  blockSeconds: 600,
  exemptNetworks: ["127.0.0.0/8", "::1/128"],
};

/** What the guard decides for a request. */
export type Screening =
  | { action: "pass" }
  | { action: "drop"; reason: "blocked" }
  | { action: "reply"; status: 403; reason: "blocked" }
  | {
      action: "reply";
      status: 503;
      reason: "rate-limited-invite" | "rate-limited-register";
      retryAfter: number;
    };

/** A refusal worth a log line: the first for a source in `logEveryMs`. */
export interface GuardNotice {
  address: string;
  reason: string;
  detail: string;
}

interface SourceState {
  invite?: { tokens: number; at: number } | undefined;
  register?: { tokens: number; at: number } | undefined;
  failures?: number[] | undefined;
  blockedUntil?: number | undefined;
  lastNotice?: number | undefined;
}

const PASS: Screening = { action: "pass" };

/** An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, from a dual-stack socket) as the IPv4 address. */
function unmapped(address: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return m === null ? address : m[1]!;
}
const SWEEP_MS = 60_000;

export class SipGuard {
  private readonly sources = new Map<string, SourceState>();
  private readonly exempt = new net.BlockList();
  private nextSweep: number;

  constructor(
    readonly settings: SipGuardSettings,
    private readonly options: {
      /** Monotonic milliseconds. */
      now?: () => number;
      maxSources?: number;
      logEveryMs?: number;
      /** Told once per source and interval when it is refused (for the log). */
      notice?: (notice: GuardNotice) => void;
    } = {},
  ) {
    for (const block of settings.exemptNetworks) {
      const [address, bits] = block.split("/");
      const family = net.isIPv6(address ?? "") ? "ipv6" : "ipv4";
      this.exempt.addSubnet(address!, Number(bits ?? (family === "ipv6" ? 128 : 32)), family);
    }
    this.nextSweep = this.now() + SWEEP_MS;
  }

  private now(): number {
    return this.options.now?.() ?? performance.now();
  }

  private isExempt(address: string): boolean {
    const plain = unmapped(address);
    const family = net.isIPv4(plain) ? "ipv4" : net.isIPv6(plain) ? "ipv6" : undefined;
    return family !== undefined && this.exempt.check(plain, family);
  }

  private state(address: string, create: boolean): SourceState | undefined {
    let s = this.sources.get(address);
    if (s === undefined && create) {
      if (this.sources.size >= (this.options.maxSources ?? 100_000)) {
        const oldest = this.sources.keys().next();
        if (!oldest.done) this.sources.delete(oldest.value);
      }
      s = {};
      this.sources.set(address, s);
    }
    return s;
  }

  private notify(address: string, s: SourceState, now: number, reason: string, detail: string): void {
    if (s.lastNotice !== undefined && now - s.lastNotice < (this.options.logEveryMs ?? 60_000)) return;
    s.lastNotice = now;
    this.options.notice?.({ address, reason, detail });
  }

  /** Whether `address` is blocked now. */
  blocked(source: string): boolean {
    const address = unmapped(source);
    const until = this.sources.get(address)?.blockedUntil;
    return until !== undefined && until > this.now();
  }

  /**
   * The decision for a request of `method` from `address` over `transport`
   * that would start a transaction (not a retransmission, not an ACK).
   * `inDialog`: a request inside a dialog (never rate limited, but blocked).
   */
  screen(method: string, source: string, transport: "UDP" | "TCP" | "TLS", inDialog: boolean): Screening {
    // One source whether it came over an IPv4 socket or a dual-stack one (::ffff:a.b.c.d).
    const address = unmapped(source);
    const now = this.now();
    this.sweep(now);
    if (this.isExempt(address)) return PASS;
    const s = this.sources.get(address);
    if (s?.blockedUntil !== undefined) {
      if (s.blockedUntil > now) {
        return transport === "UDP"
          ? { action: "drop", reason: "blocked" }
          : { action: "reply", status: 403, reason: "blocked" };
      }
      s.blockedUntil = undefined;
    }
    if (inDialog || (method !== "INVITE" && method !== "REGISTER")) return PASS;
    const invite = method === "INVITE";
    const rate = invite ? this.settings.inviteRate : this.settings.registerRate;
    const burst = invite ? this.settings.inviteBurst : this.settings.registerBurst;
    if (rate <= 0) return PASS;
    const st = s ?? this.state(address, true)!;
    const bucket = (invite ? st.invite : st.register) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * rate);
    bucket.at = now;
    if (invite) st.invite = bucket;
    else st.register = bucket;
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return PASS;
    }
    const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / rate));
    const reason = invite ? "rate-limited-invite" : "rate-limited-register";
    this.notify(address, st, now, reason, `more than ${rate}/s (burst ${burst}) ${method} requests`);
    return { action: "reply", status: 503, reason, retryAfter };
  }

  /** A failed digest answer from `address`; true when it blocked the source. */
  authFailed(source: string): boolean {
    const address = unmapped(source);
    const limit = this.settings.authFailures;
    if (limit <= 0 || this.isExempt(address)) return false;
    const now = this.now();
    const s = this.state(address, true)!;
    const since = now - this.settings.authWindowSeconds * 1000;
    const failures = (s.failures ?? []).filter((t) => t > since);
    failures.push(now);
    s.failures = failures;
    if (failures.length < limit) return false;
    s.failures = undefined;
    s.blockedUntil = now + this.settings.blockSeconds * 1000;
    s.lastNotice = undefined;
    this.notify(
      address,
      s,
      now,
      "blocked",
      `${limit} failed digest answers within ${this.settings.authWindowSeconds} s: blocked for ${this.settings.blockSeconds} s`,
    );
    return true;
  }

  /** A good digest answer from `address`: its failures are forgotten. */
  authSucceeded(source: string): void {
    const address = unmapped(source);
    const s = this.sources.get(address);
    if (s !== undefined) s.failures = undefined;
  }

  /** Sources tracked now (for tests and diagnostics). */
  get tracked(): number {
    return this.sources.size;
  }

  /** Sources blocked now. */
  get blockedCount(): number {
    const now = this.now();
    let n = 0;
    for (const s of this.sources.values()) if (s.blockedUntil !== undefined && s.blockedUntil > now) n++;
    return n;
  }

  /** Drops state that is back at rest: full buckets, no recent failures, no block. */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + SWEEP_MS;
    const since = now - this.settings.authWindowSeconds * 1000;
    for (const [address, s] of this.sources) {
      const full = (b: { tokens: number; at: number } | undefined, rate: number, burst: number) =>
        b === undefined || b.tokens + ((now - b.at) / 1000) * rate >= burst;
      if (
        full(s.invite, this.settings.inviteRate, this.settings.inviteBurst) &&
        full(s.register, this.settings.registerRate, this.settings.registerBurst) &&
        (s.failures === undefined || s.failures.every((t) => t <= since)) &&
        (s.blockedUntil === undefined || s.blockedUntil <= now)
      ) {
        this.sources.delete(address);
      }
    }
  }
}

/** A setting with a bad value (config.ts turns it into its ConfigError). */
export class SipGuardSettingsError extends Error {
  override readonly name = "SipGuardSettingsError";
}

function number(env: NodeJS.ProcessEnv, name: string, fallback: number, integer: boolean): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw.trim());
  if (!Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n))) {
    throw new SipGuardSettingsError(
      `${name} must be ${integer ? "a whole number" : "a number"} of 0 or more, got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}

/** Whether `block` is `address[/bits]`, IPv4 or IPv6 (host bits may be set). */
function validCidr(block: string): boolean {
  const [address, bits, extra] = block.split("/");
  if (extra !== undefined || address === undefined) return false;
  const max = net.isIPv4(address) ? 32 : net.isIPv6(address) ? 128 : 0;
  if (max === 0) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= max;
}

/**
 * SIP_GUARD_* from the environment:
 * - SIP_GUARD_INVITE_RATE / SIP_GUARD_INVITE_BURST (20/s, 100),
 *   SIP_GUARD_REGISTER_RATE / SIP_GUARD_REGISTER_BURST (20/s, 200): per
 *   source address; a rate of 0 turns the limit off;
 * - SIP_GUARD_AUTH_FAILURES (10; 0 never blocks) within
 *   SIP_GUARD_AUTH_WINDOW_SECONDS (60) block a source for
 *   SIP_GUARD_BLOCK_SECONDS (600);
 * - SIP_GUARD_EXEMPT_NETWORKS: comma-separated CIDR blocks never limited
 *   nor blocked; default loopback (`127.0.0.0/8,::1/128`); empty: none.
 */
export function loadSipGuardSettings(env: NodeJS.ProcessEnv): SipGuardSettings {
  const d = DEFAULT_SIP_GUARD;
  const rawExempt = env.SIP_GUARD_EXEMPT_NETWORKS;
  const exemptNetworks =
    rawExempt === undefined
      ? d.exemptNetworks
      : rawExempt
          .split(",")
          .map((b) => b.trim())
          .filter((b) => b !== "");
  const bad = exemptNetworks.find((b) => !validCidr(b));
  if (bad !== undefined) {
    throw new SipGuardSettingsError(
      `SIP_GUARD_EXEMPT_NETWORKS must list CIDR blocks (192.0.2.0/24, 2001:db8::/32), got ${JSON.stringify(bad)}`,
    );
  }
  const settings: SipGuardSettings = {
    inviteRate: number(env, "SIP_GUARD_INVITE_RATE", d.inviteRate, false),
    inviteBurst: number(env, "SIP_GUARD_INVITE_BURST", d.inviteBurst, true),
    registerRate: number(env, "SIP_GUARD_REGISTER_RATE", d.registerRate, false),
    registerBurst: number(env, "SIP_GUARD_REGISTER_BURST", d.registerBurst, true),
    authFailures: number(env, "SIP_GUARD_AUTH_FAILURES", d.authFailures, true),
    authWindowSeconds: number(env, "SIP_GUARD_AUTH_WINDOW_SECONDS", d.authWindowSeconds, false),
    blockSeconds: number(env, "SIP_GUARD_BLOCK_SECONDS", d.blockSeconds, false),
    exemptNetworks,
  };
  for (const [rate, burst, name] of [
    [settings.inviteRate, settings.inviteBurst, "SIP_GUARD_INVITE_BURST"],
    [settings.registerRate, settings.registerBurst, "SIP_GUARD_REGISTER_BURST"],
  ] as const) {
    if (rate > 0 && burst < 1)
      throw new SipGuardSettingsError(`${name} must be at least 1 while its rate is above 0`);
  }
  return settings;
}
