/**
 * Access tokens are opaque: `sbat_<id>_<43 chars of base64url randomness>`.
 * The id finds the stored row; only SHA-256 of the whole token is stored
 * (src/auth/secrets.ts hashes and compares it), as for API key secrets.
 */
import { randomBytes } from "node:crypto";

export function newAccessToken(id: string): string {
  return `sbat_${id}_${randomBytes(32).toString("base64url")}`;
}

/** The token id inside an access token, or undefined when it is not one. */
export function accessTokenIdOf(token: string): string | undefined {
  const m = /^sbat_([a-z0-9]{1,40})_[A-Za-z0-9_-]{43}$/.exec(token);
  return m?.[1];
}
