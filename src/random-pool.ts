/**
 * Random bytes for the hot paths (SIP tags, branches and Call-IDs, digest
 * nonces, RTP sessions' SSRC, sequence and timestamp) from one pool that the
 * CSPRNG refills 4 KiB at a time, as crypto.randomUUID's cache does: a fresh
 * `randomBytes` per value cost a native call and an allocation each, several
 * per SIP transaction and call. The bytes are the CSPRNG's all the same, and
 * each is handed out once.
 */
import { randomBytes, randomFillSync } from "node:crypto";

const pool = Buffer.allocUnsafe(4096);
let offset = pool.length;

/** Where `bytes` fresh bytes start in the pool (refilled when too few are left). */
function take(bytes: number): number {
  if (offset + bytes > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const at = offset;
  offset += bytes;
  return at;
}

/** `bytes` random bytes as hex. */
export function randomHex(bytes: number): string {
  if (bytes > pool.length) return randomBytes(bytes).toString("hex");
  const at = take(bytes);
  return pool.toString("hex", at, at + bytes);
}

/** `bytes` random bytes as base64url. */
export function randomBase64url(bytes: number): string {
  if (bytes > pool.length) return randomBytes(bytes).toString("base64url");
  const at = take(bytes);
  return pool.toString("base64url", at, at + bytes);
}

/** `bytes` random bytes, a copy of its own. */
export function pooledRandomBytes(bytes: number): Buffer {
  if (bytes > pool.length) return randomBytes(bytes);
  const at = take(bytes);
  return Buffer.from(pool.subarray(at, at + bytes));
}
