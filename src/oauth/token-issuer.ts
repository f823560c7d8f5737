/**
 * The JWT-bearer grant (RFC 7523) of the token endpoint: checks an
 * assertion signed with a service account key and issues an access token.
 *
 * The assertion (verified with `jose`):
 * - a compact JWS with `alg` RS256 only;
 * - `kid` names the key; without `kid` (google-auth-library's JWT client
 *   sends none) each key of the account named by `iss` is tried;
 * - `iss` and `sub` both the account's email, the key the account's own;
 * - `aud` exactly the configured token URL;
 * - `iat` and `exp` present, `exp` at most `iat` + 3600 and not past, `iat`
 *   not in the future (60 s of clock skew allowed either way);
 * - the account and the key enabled;
 * - `scope` naming the services the token is for (scopes.ts);
 * - with a `jti`: never seen before. The account's `jti` is accepted once
 *   while the assertion is valid, and again is a replay, refused on every
 *   replica (the used ones are in the database; RFC 7523 section 3, item
 *   7). Without `jti` (the SDKs send none) an assertion may be exchanged
 *   again until it expires, as Google's token endpoint allows: SDK clients
 *   that start together on one key file sign byte-identical assertions
 *   (RS256 is deterministic, the claims are in seconds), and refusing all
 *   but the first broke them. The assertion is as exposed as the token it
 *   is exchanged for, and lives no longer (an hour).
 * Every refusal is `invalid_grant` (RFC 7523 section 3.1), except a bad
 * scope (`invalid_scope`).
 */
import { createHash, createPublicKey, type KeyObject } from "node:crypto";
import { decodeJwt, decodeProtectedHeader, errors, type JWTPayload, jwtVerify } from "jose";
import type {
  KeyForAssertion,
  ServiceAccountKeysRepository,
} from "../admin/service-account-keys-repository.js";
import { accountIdOfEmail, serviceAccountEmail } from "../admin/service-accounts.js";
import { newResourceId } from "../api/ids.js";
import { hashSecret } from "../auth/secrets.js";
import type { Clock } from "../clock.js";
import { newAccessToken } from "./access-token-format.js";
import type { AccessTokensRepository } from "./access-tokens-repository.js";
import { invalidGrant, OAuthError } from "./errors.js";
import { scopeServices } from "./scopes.js";
import type { UsedAssertionsRepository } from "./used-assertions-repository.js";

export const JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/** Allowed clock skew between the client and the server, seconds. */
export const CLOCK_SKEW_SECONDS = 60;
/** The longest an assertion may be valid: `exp` - `iat`, seconds. */
export const MAX_ASSERTION_LIFETIME_SECONDS = 3600;

export interface TokenAnswer {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
}

export interface TokenIssuerOptions {
  keys: ServiceAccountKeysRepository;
  tokens: AccessTokensRepository;
  assertions: UsedAssertionsRepository;
  clock: Clock;
  /** The token endpoint's public URL: the only accepted `aud`. */
  tokenUrl: () => string;
  /** Lifetime of issued access tokens, seconds. */
  accessTokenTtlSeconds: number;
  /** The services (`package.Service`) a scope may name. */
  services: ReadonlySet<string>;
}

const publicKeys = new Map<string, KeyObject>();

/** The parsed public key of a stored key (cached by key id: keys never change). */
function publicKeyOf(key: KeyForAssertion): KeyObject {
  let parsed = publicKeys.get(key.id);
  if (parsed === undefined) {
    parsed = createPublicKey(key.publicKey);
    if (publicKeys.size > 10_000) publicKeys.clear();
    publicKeys.set(key.id, parsed);
  }
  return parsed;
}

function claimError(err: unknown, tokenUrl: string): Error {
  if (err instanceof errors.JWTExpired) return invalidGrant("the assertion has expired (exp)");
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === "aud") return invalidGrant(`aud must be ${tokenUrl}`);
    if (err.reason === "missing") return invalidGrant(`the assertion has no ${err.claim} claim`);
    return invalidGrant(`the ${err.claim} claim is invalid`);
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return invalidGrant("alg must be RS256");
  if (err instanceof errors.JOSEError) return invalidGrant("the assertion is not a valid JWT");
  return err instanceof Error ? err : new Error(String(err));
}

export class TokenIssuer {
  constructor(private readonly options: TokenIssuerOptions) {}

  async exchange(assertion: string): Promise<TokenAnswer> {
    const { clock, tokenUrl } = this.options;
    let kid: unknown;
    let unverified: JWTPayload;
    try {
      const header = decodeProtectedHeader(assertion);
      if (header.alg !== "RS256") throw invalidGrant("alg must be RS256");
      if (assertion.split(".").length !== 3) throw invalidGrant("the assertion must be a signed JWT (JWS)");
      kid = header.kid;
      unverified = decodeJwt(assertion);
    } catch (err) {
      // jose throws TypeError or JWTInvalid for anything that is not a JWT.
      if (err instanceof OAuthError) throw err;
      throw invalidGrant("the assertion is not a JWT");
    }
    const accountId = typeof unverified.iss === "string" ? accountIdOfEmail(unverified.iss) : undefined;
    if (accountId === undefined) throw invalidGrant("iss names no service account");
    let candidates: KeyForAssertion[];
    if (kid !== undefined) {
      if (typeof kid !== "string" || !/^[0-9a-f]{40}$/.test(kid)) throw invalidGrant("unknown key (kid)");
      const key = await this.options.keys.findForAssertion(kid);
      if (key === undefined || key.serviceAccountId !== accountId) throw invalidGrant("unknown key (kid)");
      candidates = [key];
    } else {
      candidates = await this.options.keys.findForAccount(accountId);
      if (candidates.length === 0) throw invalidGrant("iss names no service account with keys");
    }

    const now = clock.now();
    let payload: JWTPayload | undefined;
    let key: KeyForAssertion | undefined;
    for (const candidate of candidates) {
      try {
        ({ payload } = await jwtVerify(assertion, publicKeyOf(candidate), {
          algorithms: ["RS256"],
          audience: tokenUrl(),
          clockTolerance: CLOCK_SKEW_SECONDS,
          currentDate: now,
          requiredClaims: ["iss", "sub", "aud", "iat", "exp"],
        }));
        key = candidate;
        break;
      } catch (err) {
        if (err instanceof errors.JWSSignatureVerificationFailed) continue;
        throw claimError(err, tokenUrl());
      }
    }
    if (payload === undefined || key === undefined) throw invalidGrant("invalid signature");

    const email = serviceAccountEmail(accountId);
    if (payload.sub !== email) throw invalidGrant("sub must equal iss (the service account's email)");
    const iat = payload.iat!;
    const exp = payload.exp!;
    if (exp - iat > MAX_ASSERTION_LIFETIME_SECONDS) {
      throw invalidGrant(`exp may be at most iat + ${MAX_ASSERTION_LIFETIME_SECONDS}`);
    }
    const nowSeconds = Math.floor(now.getTime() / 1000);
    if (iat > nowSeconds + CLOCK_SKEW_SECONDS) throw invalidGrant("iat is in the future");
    if (key.accountDisabled) throw invalidGrant(`serviceAccounts/${accountId} is disabled`);
    if (key.disabled) throw invalidGrant(`the key ${key.id} is disabled`);
    const services = scopeServices(payload.scope, this.options.services);

    // Expired rows are forgotten as new ones come (indexed by expire_time).
    await this.options.assertions.deleteExpired(now);
    await this.options.tokens.deleteExpired(now);
    if (payload.jti !== undefined) {
      if (typeof payload.jti !== "string" || payload.jti === "")
        throw invalidGrant("jti must be a non-empty string");
      const hash = createHash("sha256").update(`${accountId}\n${payload.jti}`, "utf8").digest("hex");
      const until = new Date((exp + CLOCK_SKEW_SECONDS) * 1000);
      if (!(await this.options.assertions.claim(hash, until))) {
        throw invalidGrant("this jti was already used; sign a new assertion with a new jti");
      }
    }
    const id = newResourceId();
    const token = newAccessToken(id);
    const ttl = this.options.accessTokenTtlSeconds;
    await this.options.tokens.insert({
      id,
      tokenHash: hashSecret(token),
      serviceAccountId: accountId,
      keyId: key.id,
      services,
      expireTime: new Date(now.getTime() + ttl * 1000),
      createTime: now,
    });
    return { access_token: token, token_type: "Bearer", expires_in: ttl };
  }
}
