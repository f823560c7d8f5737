/**
 * The UAC side of digest authentication (RFC 3261 §22.2-22.3, RFC 7616,
 * RFC 8760) for a client holding credentials: a carrier trunk's username
 * and password. Given a 401 (WWW-Authenticate) or 407 (Proxy-Authenticate)
 * it gives the Authorization / Proxy-Authorization header(s) to send with
 * the request again, on digest.ts's primitives.
 *
 * - One answer per realm challenged (a forking proxy may relay several);
 *   SHA-256 preferred to MD5 within a realm; other algorithms (SHA-512-256,
 *   the -sess variants) and challenges offering only qop=auth-int are not
 *   answered: nothing is sent that the server could not check.
 * - qop=auth when offered, with a fresh cnonce each time and the nonce-count
 *   rising for every request answered with the same nonce (a server refuses
 *   a count it has seen); no qop: the RFC 2069 answer.
 * - `again(request)` answers a later request (re-INVITE, BYE) with the last
 *   challenge of each realm, the next count of its nonce.
 * A client per trunk (or per dialog); it remembers the last 64 nonces.
 */
import { randomBytes } from "node:crypto";
import { answerChallenge, parseDigestParams } from "./digest.js";

export interface DigestCredentials {
  username: string;
  password: string;
}

/** The request being answered: its method and Request-URI as sent. */
export interface DigestTarget {
  method: string;
  uri: string;
}

/** A response that may carry a challenge: its status and header values by name. */
export interface ChallengeResponse {
  status: number;
  headers: { getAll(name: string): string[] };
}

export type AuthorizationHeader = ["Authorization" | "Proxy-Authorization", string];

const REMEMBERED_NONCES = 64;

/** The algorithm of a challenge this client can answer, or undefined. */
function answerable(params: Map<string, string>): "SHA-256" | "MD5" | undefined {
  const algorithm = (params.get("algorithm") ?? "MD5").toUpperCase();
  if (algorithm !== "SHA-256" && algorithm !== "MD5") return undefined;
  if (params.get("realm") === undefined || params.get("nonce") === undefined) return undefined;
  const qop = params.get("qop");
  if (qop !== undefined && !qop.split(",").some((q) => q.trim().toLowerCase() === "auth")) return undefined;
  return algorithm;
}

/** The challenges to answer among header values: per realm, SHA-256 when offered, else MD5. */
export function chooseChallenges(values: string[]): Map<string, string>[] {
  const byRealm = new Map<string, Map<string, string>>();
  for (const value of values) {
    const params = parseDigestParams(value);
    if (params === undefined) continue;
    const algorithm = answerable(params);
    if (algorithm === undefined) continue;
    const realm = params.get("realm")!;
    const chosen = byRealm.get(realm);
    if (chosen === undefined || (algorithm === "SHA-256" && answerable(chosen) !== "SHA-256")) {
      byRealm.set(realm, params);
    }
  }
  return [...byRealm.values()];
}

export class DigestClient {
  /** Nonce-counts used, by realm and nonce (oldest first). */
  private readonly counts = new Map<string, number>();
  /** The last challenge of each realm, and whether it came in a 407. */
  private readonly last = new Map<string, { params: Map<string, string>; proxy: boolean }>();

  constructor(
    private readonly credentials: DigestCredentials,
    private readonly cnonce: () => string = () => randomBytes(12).toString("base64url"),
  ) {}

  /**
   * The header(s) answering `response`'s challenges for `request`, or an
   * empty list when there is nothing this client can answer (not a 401/407,
   * no usable digest challenge).
   */
  answer(response: ChallengeResponse, request: DigestTarget): AuthorizationHeader[] {
    const proxy = response.status === 407;
    if (response.status !== 401 && !proxy) return [];
    const challenges = chooseChallenges(
      response.headers.getAll(proxy ? "Proxy-Authenticate" : "WWW-Authenticate"),
    );
    return challenges.map((params) => {
      this.last.set(params.get("realm")!, { params, proxy });
      return this.header(params, proxy, request);
    });
  }

  /** Headers for a later request, answering again the last challenge of each realm (none before any). */
  again(request: DigestTarget): AuthorizationHeader[] {
    return [...this.last.values()].map(({ params, proxy }) => this.header(params, proxy, request));
  }

  private header(params: Map<string, string>, proxy: boolean, request: DigestTarget): AuthorizationHeader {
    const key = `${params.get("realm")}\n${params.get("nonce")}`;
    const nc = (this.counts.get(key) ?? 0) + 1;
    this.counts.delete(key);
    this.counts.set(key, nc);
    if (this.counts.size > REMEMBERED_NONCES) this.counts.delete(this.counts.keys().next().value!);
    const value = answerChallenge(params, this.credentials, request, nc, this.cnonce());
    return [proxy ? "Proxy-Authorization" : "Authorization", value];
  }
}
