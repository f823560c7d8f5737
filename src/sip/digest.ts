/**
 * HTTP digest authentication for SIP (RFC 3261 §22, RFC 2617, RFC 7616,
 * RFC 8760): SHA-256 and MD5 with qop=auth.
 *
 * Server side: challenges (WWW-/Proxy-Authenticate, SHA-256 first) carry
 * stateless nonces — a timestamp and random bytes signed with an HMAC key —
 * that expire (an expired nonce with otherwise right credentials gets a new
 * challenge with stale=true); each nonce's counts must rise (a replayed
 * nonce-count is refused). Credentials are checked against stored HA1 hashes
 * (H(username:realm:password)), never a password.
 *
 * Client side: the Authorization / Proxy-Authorization answering a challenge.
 */
import {
  createHmac,
  createSecretKey,
  type KeyObject,
  hash as oneShotHash,
  randomBytes,
  timingSafeEqual,
} from "node:crypto";
import type { Clock } from "../clock.js";
import { randomBase64url } from "../random-pool.js";

export type DigestAlgorithm = "SHA-256" | "MD5";

function hash(algorithm: DigestAlgorithm, text: string): string {
  // One-shot (crypto.hash): no Hash object per digest.
  return oneShotHash(algorithm === "MD5" ? "md5" : "sha256", text, "hex");
}

/** HA1 = H(username:realm:password): what is stored instead of the password. */
export function digestHa1(
  algorithm: DigestAlgorithm,
  username: string,
  realm: string,
  password: string,
): string {
  return hash(algorithm, `${username}:${realm}:${password}`);
}

/** request-digest = H(HA1:nonce:nc:cnonce:qop:H(method:uri)) (RFC 7616 §3.4.1, qop=auth). */
export function digestResponse(p: {
  algorithm: DigestAlgorithm;
  ha1: string;
  nonce: string;
  nc: string;
  cnonce: string;
  qop: string;
  method: string;
  uri: string;
}): string {
  const ha2 = hash(p.algorithm, `${p.method}:${p.uri}`);
  return hash(p.algorithm, `${p.ha1}:${p.nonce}:${p.nc}:${p.cnonce}:${p.qop}:${ha2}`);
}

/** Parses `Digest k=v, k="v", ...` into lower-cased keys; undefined when it is not a digest header. */
export function parseDigestParams(value: string): Map<string, string> | undefined {
  const m = /^\s*Digest\s+(.*)$/is.exec(value);
  if (m === null) return undefined;
  const params = new Map<string, string>();
  const re = /\s*([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*(?:,|$)/gy;
  const text = m[1]!;
  let last = 0;
  for (let match = re.exec(text); match !== null && match[0] !== ""; match = re.exec(text)) {
    const key = match[1]!.toLowerCase();
    if (params.has(key)) return undefined;
    params.set(key, match[2] !== undefined ? match[2].replace(/\\(.)/g, "$1") : (match[3] ?? ""));
    last = re.lastIndex;
  }
  if (last !== text.length) return undefined;
  return params;
}

function quote(s: string): string {
  return `"${s.replace(/(["\\])/g, "\\$1")}"`;
}

export type DigestResult =
  | { ok: true; username: string; algorithm: DigestAlgorithm }
  | {
      ok: false;
      /** missing/malformed: no usable header; stale: right credentials, expired nonce; the rest: refused. */
      reason:
        | "missing"
        | "malformed"
        | "unknown-user"
        | "wrong-credentials"
        | "bad-nonce"
        | "stale"
        | "replayed-nonce-count";
      username?: string;
    };

export interface DigestServerOptions {
  realm: string;
  /** The HMAC key signing nonces (32 random bytes; the same on every replica). */
  secret: Buffer;
  clock: Clock;
  /** Seconds a nonce stays valid (default 300). */
  nonceTtlSeconds?: number;
  /** Offered algorithms, preferred first (default SHA-256 then MD5). */
  algorithms?: DigestAlgorithm[];
}

/** Stored HA1 for a user and algorithm; undefined when the user is unknown or disabled. */
export type Ha1Lookup = (
  username: string,
  algorithm: DigestAlgorithm,
) => Promise<string | undefined> | string | undefined;

export class DigestServer {
  /** Highest nonce-count seen per nonce, and when the nonce expires. */
  private readonly counts = new Map<string, { nc: number; expiresMs: number }>();
  private readonly ttlMs: number;
  private readonly algorithms: DigestAlgorithm[];
  /** The nonce key as a KeyObject: an HMAC keyed by one is about five times cheaper than by a Buffer. */
  private readonly key: KeyObject;

  constructor(private readonly options: DigestServerOptions) {
    this.key = createSecretKey(options.secret);
    this.ttlMs = (options.nonceTtlSeconds ?? 300) * 1000;
    this.algorithms = options.algorithms ?? ["SHA-256", "MD5"];
  }

  private sign(body: string): string {
    return createHmac("sha256", this.key).update(body).digest("base64url").slice(0, 32);
  }

  /** A fresh nonce: issue time (ms, base 36), random bytes, HMAC. */
  nonce(): string {
    const body = `${this.options.clock.now().getTime().toString(36)}.${randomBase64url(12)}`;
    return `${body}.${this.sign(body)}`;
  }

  /** The issue time of a nonce this server signed, undefined for a forged or foreign one. */
  private issuedMs(nonce: string): number | undefined {
    const dot = nonce.lastIndexOf(".");
    if (dot < 0) return undefined;
    const body = nonce.slice(0, dot);
    const mac = Buffer.from(nonce.slice(dot + 1));
    const expected = Buffer.from(this.sign(body));
    if (mac.length !== expected.length || !timingSafeEqual(mac, expected)) return undefined;
    const ms = Number.parseInt(body.split(".")[0] ?? "", 36);
    return Number.isFinite(ms) ? ms : undefined;
  }

  /** The challenge header values (one per algorithm, preferred first). */
  challenge(stale = false): string[] {
    const nonce = this.nonce();
    return this.algorithms.map(
      (algorithm) =>
        `Digest realm=${quote(this.options.realm)}, nonce=${quote(nonce)}, algorithm=${algorithm}, qop="auth"` +
        (stale ? ", stale=true" : ""),
    );
  }

  /** Checks an Authorization (or Proxy-Authorization) value for a request's method. */
  async verify(method: string, authorization: string | undefined, lookup: Ha1Lookup): Promise<DigestResult> {
    if (authorization === undefined) return { ok: false, reason: "missing" };
    const p = parseDigestParams(authorization);
    const username = p?.get("username");
    const algorithmText = (p?.get("algorithm") ?? "MD5").toUpperCase();
    const algorithm = this.algorithms.find((a) => a === algorithmText);
    const fields = ["realm", "nonce", "uri", "response", "qop", "nc", "cnonce"].map((k) => p?.get(k));
    const [realm, nonce, uri, response, qop, nc, cnonce] = fields;
    if (
      p === undefined ||
      username === undefined ||
      algorithm === undefined ||
      fields.some((f) => f === undefined) ||
      realm !== this.options.realm ||
      qop !== "auth" ||
      !/^[0-9a-fA-F]{8}$/.test(nc!)
    ) {
      return { ok: false, reason: "malformed", ...(username === undefined ? {} : { username }) };
    }
    const issued = this.issuedMs(nonce!);
    if (issued === undefined) return { ok: false, reason: "bad-nonce", username };
    const ha1 = await lookup(username, algorithm);
    if (ha1 === undefined) return { ok: false, reason: "unknown-user", username };
    const expected = digestResponse({
      algorithm,
      ha1,
      nonce: nonce!,
      nc: nc!,
      cnonce: cnonce!,
      qop: qop!,
      method,
      uri: uri!,
    });
    const given = Buffer.from(response!.toLowerCase());
    if (given.length !== expected.length || !timingSafeEqual(given, Buffer.from(expected))) {
      return { ok: false, reason: "wrong-credentials", username };
    }
    const now = this.options.clock.now().getTime();
    if (now - issued > this.ttlMs || issued - now > 60_000) return { ok: false, reason: "stale", username };
    this.prune(now);
    const count = Number.parseInt(nc!, 16);
    const seen = this.counts.get(nonce!);
    if (seen !== undefined && count <= seen.nc)
      return { ok: false, reason: "replayed-nonce-count", username };
    this.counts.set(nonce!, { nc: count, expiresMs: issued + this.ttlMs });
    return { ok: true, username, algorithm };
  }

  /**
   * Forgets the counts of expired nonces. Nonces enter the map at their
   * first use, soon after they were issued, so the map is (nearly) in order
   * of expiry: it stops at the first live one instead of walking every
   * nonce on every request (an entry out of order goes at a later prune).
   */
  private prune(now: number): void {
    if (this.counts.size < 1024) return;
    for (const [nonce, entry] of this.counts) {
      if (entry.expiresMs >= now) break;
      this.counts.delete(nonce);
    }
  }
}

/** The challenge to answer among WWW-/Proxy-Authenticate values: SHA-256 when offered, else MD5. */
export function chooseChallenge(values: string[]): Map<string, string> | undefined {
  const parsed = values.map(parseDigestParams).filter((p): p is Map<string, string> => p !== undefined);
  const algo = (p: Map<string, string>) => (p.get("algorithm") ?? "MD5").toUpperCase();
  return parsed.find((p) => algo(p) === "SHA-256") ?? parsed.find((p) => algo(p) === "MD5");
}

/**
 * The Authorization value answering a challenge (qop=auth when offered).
 * `nc` counts the requests answered with this nonce (1 for the first).
 */
export function answerChallenge(
  challenge: Map<string, string>,
  credentials: { username: string; password: string },
  request: { method: string; uri: string },
  nc = 1,
  cnonce = randomBytes(12).toString("base64url"),
): string {
  const algorithm: DigestAlgorithm =
    (challenge.get("algorithm") ?? "MD5").toUpperCase() === "SHA-256" ? "SHA-256" : "MD5";
  const realm = challenge.get("realm") ?? "";
  const nonce = challenge.get("nonce") ?? "";
  const ha1 = digestHa1(algorithm, credentials.username, realm, credentials.password);
  const qops = (challenge.get("qop") ?? "").split(",").map((q) => q.trim());
  const parts = [
    `username=${quote(credentials.username)}`,
    `realm=${quote(realm)}`,
    `nonce=${quote(nonce)}`,
    `uri=${quote(request.uri)}`,
  ];
  let response: string;
  if (qops.includes("auth")) {
    const ncText = nc.toString(16).padStart(8, "0");
    response = digestResponse({ algorithm, ha1, nonce, nc: ncText, cnonce, qop: "auth", ...request });
    parts.push(
      `response=${quote(response)}`,
      `algorithm=${algorithm}`,
      `cnonce=${quote(cnonce)}`,
      "qop=auth",
      `nc=${ncText}`,
    );
  } else {
    // RFC 2069 compatibility: no qop.
    response = hash(algorithm, `${ha1}:${nonce}:${hash(algorithm, `${request.method}:${request.uri}`)}`);
    parts.push(`response=${quote(response)}`, `algorithm=${algorithm}`);
  }
  const opaque = challenge.get("opaque");
  if (opaque !== undefined) parts.push(`opaque=${quote(opaque)}`);
  return `Digest ${parts.join(", ")}`;
}
