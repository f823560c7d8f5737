/**
 * API key secrets: `sb_<keyId>_<43 chars of base64url randomness>`. The key
 * id lets the server find the key; only SHA-256 of the whole secret is
 * stored (a 256-bit random secret needs no slow hash), compared in constant
 * time.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

const ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/** A short random lowercase id (for keys and resources). */
export function randomId(length = 16): string {
  const bytes = randomBytes(length);
  let out = "";
  for (let i = 0; i < length; i++) out += ID_ALPHABET[bytes[i]! % ID_ALPHABET.length];
  return out;
}

export function newSecret(keyId: string): string {
  return `sb_${keyId}_${randomBytes(32).toString("base64url")}`;
}

export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** The key id inside a secret, or undefined when it is not one of ours. */
export function keyIdOf(secret: string): string | undefined {
  const m = /^sb_([a-z0-9]{1,40})_[A-Za-z0-9_-]{43}$/.exec(secret);
  return m?.[1];
}

/** Constant-time comparison of two equal-purpose strings. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, "utf8");
  const bb = Buffer.from(b, "utf8");
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

/** The first characters of a secret, safe to show in lists. */
export function secretPrefix(secret: string): string {
  // The random part is base64url and may itself contain "_": cut after the
  // key id's delimiter, never at the last "_".
  const m = /^(sb_[a-z0-9]+_)([A-Za-z0-9_-]{4})/.exec(secret);
  return m ? `${m[1]}${m[2]}…` : "…";
}
