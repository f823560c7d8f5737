/**
 * The pooled CSPRNG bytes (src/random-pool.ts): every value is fresh across
 * the pool's refills, in the asked length and encoding, and a copy handed
 * out is not changed by later draws.
 */
import { describe, expect, it } from "vitest";
import { pooledRandomBytes, randomBase64url, randomHex } from "../../src/random-pool.js";

describe("the random pool", () => {
  it("hands out distinct values of the asked length in each encoding, across refills", () => {
    const seen = new Set<string>();
    // 1,000 draws of 12 bytes in each of three forms: the 4 KiB pool is refilled several times.
    for (let i = 0; i < 1000; i++) {
      const hex = randomHex(12);
      const b64 = randomBase64url(12);
      const raw = pooledRandomBytes(12);
      expect(hex).toMatch(/^[0-9a-f]{24}$/);
      expect(b64).toMatch(/^[A-Za-z0-9_-]{16}$/);
      expect(raw.length).toBe(12);
      seen.add(hex).add(Buffer.from(b64, "base64url").toString("hex")).add(raw.toString("hex"));
    }
    expect(seen.size).toBe(3000);
  });

  it("gives a copy that later draws and refills leave alone", () => {
    const raw = pooledRandomBytes(16);
    const before = raw.toString("hex");
    for (let i = 0; i < 600; i++) randomHex(16);
    expect(raw.toString("hex")).toBe(before);
  });

  it("serves a draw larger than the pool from the CSPRNG directly", () => {
    expect(randomHex(5000)).toMatch(/^[0-9a-f]{10000}$/);
    expect(pooledRandomBytes(5000).length).toBe(5000);
    expect(randomBase64url(4097).length).toBe(Math.ceil((4097 * 4) / 3));
  });
});
