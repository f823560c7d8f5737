/**
 * Opt-out links of APPEND_URL messages: `{public base}/u/{token}`, where the
 * token is 128 random bits (base64url, 22 characters), so links cannot be
 * guessed or enumerated. Only the token's SHA-256 is stored (on the
 * message), so the database alone does not give working links away.
 *
 * The public base is RECORDING_LINK_BASE_URL (the origin the service is
 * reached at, as for recording download links); when it is not set, the
 * address the service listens on.
 */
import { createHash, randomBytes } from "node:crypto";

/** Path of the opt-out page of `token`. */
export const OPT_OUT_PATH = /^\/u\/([A-Za-z0-9_-]{22})$/;

export function newOptOutToken(): string {
  return randomBytes(16).toString("base64url");
}

export function hashOptOutToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

export function optOutUrl(base: string, token: string): string {
  return `${base}/u/${token}`;
}

/** What APPEND_URL adds to the body. */
export function optOutSuffix(url: string): string {
  return `\nOpt out: ${url}`;
}
