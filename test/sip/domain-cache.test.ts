/**
 * The edge's moment of memory of SIP domain rows (src/telephony/sip-edge/domain-cache.ts):
 * a row is read once for a challenge and its answer, forgotten after the TTL,
 * unknown domains are never kept, concurrent reads share one database read,
 * and the memory is bounded.
 */
import { describe, expect, it } from "vitest";
import type { SipDomainRow } from "../../src/db/schema/index.js";
import { DomainCache, type DomainLookup } from "../../src/telephony/sip-edge/domain-cache.js";

function table(ids: string[]): DomainLookup & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    async findById(id) {
      reads.push(id);
      await new Promise((r) => setTimeout(r, 5));
      return ids.includes(id) ? ({ id, allowRegister: true } as unknown as SipDomainRow) : undefined;
    },
  };
}

describe("DomainCache", () => {
  it("reads a domain once within the TTL and again after it", async () => {
    let now = 0;
    const inner = table(["a"]);
    const cache = new DomainCache(inner, { ttlMs: 2000, now: () => now });
    expect((await cache.findById("a"))?.id).toBe("a");
    now = 1999;
    expect((await cache.findById("a"))?.id).toBe("a");
    expect(inner.reads).toEqual(["a"]);
    now = 2000;
    expect((await cache.findById("a"))?.id).toBe("a");
    expect(inner.reads).toEqual(["a", "a"]);
    expect(cache.misses).toBe(2);
  });

  it("never keeps an unknown domain", async () => {
    const inner = table([]);
    const cache = new DomainCache(inner, { now: () => 0 });
    expect(await cache.findById("nope")).toBeUndefined();
    expect(await cache.findById("nope")).toBeUndefined();
    expect(inner.reads).toEqual(["nope", "nope"]);
  });

  it("shares one read among concurrent lookups", async () => {
    const inner = table(["a"]);
    const cache = new DomainCache(inner, { now: () => 0 });
    const rows = await Promise.all([cache.findById("a"), cache.findById("a"), cache.findById("a")]);
    expect(rows.map((r) => r?.id)).toEqual(["a", "a", "a"]);
    expect(inner.reads).toEqual(["a"]);
  });

  it("keeps at most maxEntries rows, the oldest dropped first", async () => {
    const inner = table(["a", "b", "c"]);
    const cache = new DomainCache(inner, { maxEntries: 2, now: () => 0 });
    for (const id of ["a", "b", "c", "b", "a"]) await cache.findById(id);
    expect(inner.reads).toEqual(["a", "b", "c", "a"]);
  });

  it("forgets a domain at once, and does not store a read that began before", async () => {
    const inner = table(["a", "b"]);
    const cache = new DomainCache(inner, { now: () => 0 });
    await cache.findById("a");
    await cache.findById("b");
    cache.forget("a");
    await cache.findById("a");
    await cache.findById("b");
    expect(inner.reads).toEqual(["a", "b", "a"]);
    const racing = cache.findById("c-unknown");
    const reading = (async () => {
      cache.forget(undefined);
      return cache.findById("b");
    })();
    await racing;
    await reading;
    expect(inner.reads).toEqual(["a", "b", "a", "c-unknown", "b"]);
    // A read racing with forget() is returned but not kept.
    const stale = cache.findById("a");
    cache.forget("a");
    await stale;
    await cache.findById("a");
    expect(inner.reads.filter((id) => id === "a")).toHaveLength(4);
  });

  it("with a TTL of 0 reads every time", async () => {
    const inner = table(["a"]);
    const cache = new DomainCache(inner, { ttlMs: 0, now: () => 0 });
    await cache.findById("a");
    await cache.findById("a");
    expect(inner.reads).toEqual(["a", "a"]);
  });
});
