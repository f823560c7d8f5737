/**
 * The memory the credential, SIP credential and signing key caches share
 * (src/db/invalidated-cache.ts): read once then served until it expires or
 * is forgotten; unknown keys not kept unless asked; at most `maxEntries`;
 * nothing served or stored while invalidations cannot reach it; and a read
 * that raced with an invalidation (of its own cache or of one sharing its
 * Generation) not stored.
 */
import { describe, expect, it } from "vitest";
import {
  Generation,
  InvalidatedCache,
  type InvalidatedCacheOptions,
} from "../../src/db/invalidated-cache.js";

/** A table read through `load`, counting reads; `hold` keeps the next reads waiting until `release`. */
function table<V>() {
  const rows = new Map<string, V>();
  const waiting: Array<() => void> = [];
  const t = {
    rows,
    reads: 0,
    held: false,
    load(key: string): () => Promise<V | undefined> {
      return async () => {
        t.reads++;
        // The row as read now, delivered when released (a change may land meanwhile).
        const row = rows.get(key);
        if (t.held) await new Promise<void>((resolve) => waiting.push(resolve));
        return row;
      };
    },
    release() {
      t.held = false;
      for (const resolve of waiting.splice(0)) resolve();
    },
  };
  return t;
}

function cache<V>(options: Partial<InvalidatedCacheOptions> = {}): InvalidatedCache<V | undefined> {
  return new InvalidatedCache<V | undefined>({ ttlMs: 1000, maxEntries: 100, ...options });
}

describe("InvalidatedCache", () => {
  it("reads a key on a miss, then serves it from memory", async () => {
    const t = table<string>();
    t.rows.set("a", "one");
    const c = cache<string>();
    expect(await c.get("a", t.load("a"))).toBe("one");
    t.rows.set("a", "changed");
    expect(await c.get("a", t.load("a"))).toBe("one");
    expect(c.peek("a")).toBe("one");
    expect(t.reads).toBe(1);
    expect(c.misses).toBe(1);
    expect(c.size).toBe(1);
  });

  it("does not store an undefined answer", async () => {
    const t = table<string>();
    const c = cache<string>();
    expect(await c.get("nobody", t.load("nobody"))).toBeUndefined();
    expect(await c.get("nobody", t.load("nobody"))).toBeUndefined();
    expect(t.reads).toBe(2);
    expect(c.has("nobody")).toBe(false);
  });

  it("stores false and other falsy answers", async () => {
    let reads = 0;
    const c = new InvalidatedCache<boolean>({ ttlMs: 1000, maxEntries: 10 });
    const load = async () => {
      reads++;
      return false;
    };
    expect(await c.get("d1", load)).toBe(false);
    expect(await c.get("d1", load)).toBe(false);
    expect(reads).toBe(1);
  });

  it("reads again once an entry's ttlMs has passed, and peek drops it", async () => {
    const t = table<string>();
    t.rows.set("a", "one");
    let now = 0;
    const c = cache<string>({ now: () => now });
    await c.get("a", t.load("a"));
    now = 999;
    expect(await c.get("a", t.load("a"))).toBe("one");
    expect(t.reads).toBe(1);
    now = 1000;
    expect(c.peek("a")).toBeUndefined();
    expect(c.has("a")).toBe(false);
    t.rows.set("a", "two");
    expect(await c.get("a", t.load("a"))).toBe("two");
    expect(t.reads).toBe(2);
    // The new entry's lifetime counts from its read.
    now = 1999;
    expect(await c.get("a", t.load("a"))).toBe("two");
    expect(t.reads).toBe(2);
  });

  it("keeps at most maxEntries, dropping the oldest stored first", async () => {
    const t = table<string>();
    for (const key of ["a", "b", "c"]) t.rows.set(key, key.toUpperCase());
    const c = cache<string>({ maxEntries: 2 });
    await c.get("a", t.load("a"));
    await c.get("b", t.load("b"));
    // A hit does not make "a" younger: insertion order decides.
    await c.get("a", t.load("a"));
    await c.get("c", t.load("c"));
    expect(c.size).toBe(2);
    expect(c.has("a")).toBe(false);
    expect(c.has("b")).toBe(true);
    expect(c.has("c")).toBe(true);
    expect(t.reads).toBe(3);
  });

  it("neither serves nor stores while not live, nor stores a read that was not live throughout", async () => {
    const t = table<string>();
    t.rows.set("a", "one");
    let live = true;
    const c = cache<string>({ live: () => live });
    await c.get("a", t.load("a"));
    live = false;
    expect(c.peek("a")).toBeUndefined();
    expect(await c.get("a", t.load("a"))).toBe("one");
    expect(t.reads).toBe(2);
    c.clear();
    expect(await c.get("a", t.load("a"))).toBe("one");
    expect(c.size).toBe(0);

    // Live before, not after: not stored.
    live = true;
    t.held = true;
    const pending = c.get("a", t.load("a"));
    live = false;
    t.release();
    await pending;
    live = true;
    expect(c.size).toBe(0);
    // Live after, not before: not stored either.
    live = false;
    t.held = true;
    const begun = c.get("a", t.load("a"));
    live = true;
    t.release();
    await begun;
    expect(c.size).toBe(0);
    // Live throughout: stored.
    await c.get("a", t.load("a"));
    expect(c.size).toBe(1);
    expect(t.reads).toBe(6);
    expect(c.misses).toBe(6);
  });

  it.each([
    ["delete of its key", (c: InvalidatedCache<string | undefined>) => c.delete("a")],
    ["delete of another key", (c: InvalidatedCache<string | undefined>) => c.delete("b")],
    ["deleteWhere", (c: InvalidatedCache<string | undefined>) => c.deleteWhere(() => false)],
    ["clear", (c: InvalidatedCache<string | undefined>) => c.clear()],
  ])("does not store a read that raced with a %s", async (_, invalidate) => {
    const t = table<string>();
    t.rows.set("a", "old");
    const c = cache<string>();
    t.held = true;
    const racing = c.get("a", t.load("a"));
    t.rows.set("a", "new");
    invalidate(c);
    t.release();
    expect(await racing).toBe("old");
    expect(c.has("a")).toBe(false);
    expect(await c.get("a", t.load("a"))).toBe("new");
    expect(c.has("a")).toBe(true);
  });

  it("does not store a read that raced with an invalidation of a cache sharing its Generation", async () => {
    const t = table<string>();
    t.rows.set("a", "old");
    const generation = new Generation();
    const users = cache<string>({ generation });
    const domains = cache<string>({ generation });
    const elsewhere = cache<string>();
    t.held = true;
    const racing = users.get("a", t.load("a"));
    domains.delete("d1");
    elsewhere.clear();
    t.release();
    expect(await racing).toBe("old");
    expect(users.has("a")).toBe(false);

    // A cache with a Generation of its own is not held back by the others.
    t.held = true;
    const unshared = elsewhere.get("a", t.load("a"));
    users.clear();
    t.release();
    await unshared;
    expect(elsewhere.has("a")).toBe(true);
  });

  it("forgets the keys a predicate accepts and keeps the others", async () => {
    const t = table<string>();
    for (const key of ["d1\u0000alice", "d1\u0000bob", "d10\u0000alice", "d2\u0000alice"]) {
      t.rows.set(key, key);
    }
    const c = cache<string>();
    for (const key of t.rows.keys()) await c.get(key, t.load(key));
    expect(c.size).toBe(4);
    c.deleteWhere((key) => key.startsWith("d1\u0000"));
    expect([...t.rows.keys()].filter((key) => c.has(key))).toEqual(["d10\u0000alice", "d2\u0000alice"]);
    c.delete("d2\u0000alice");
    expect(c.size).toBe(1);
    expect(c.has("d10\u0000alice")).toBe(true);
  });

  it("readThrough counts a miss and stores what keep picks, only when the answer may be kept", async () => {
    const c = new InvalidatedCache<true>({ ttlMs: 1000, maxEntries: 10 });
    const missing = await c.readThrough(
      async () => ["p2"],
      (answer, store) => {
        for (const id of ["p1", "p2", "p3"]) if (!answer.includes(id)) store(id, true);
      },
    );
    expect(missing).toEqual(["p2"]);
    expect(c.peek("p1")).toBe(true);
    expect(c.peek("p2")).toBeUndefined();
    expect(c.peek("p3")).toBe(true);
    expect(c.misses).toBe(1);

    let kept = false;
    let release: () => void = () => {};
    const racing = c.readThrough(
      () =>
        new Promise<string[]>((resolve) => {
          release = () => resolve([]);
        }),
      () => {
        kept = true;
      },
    );
    c.delete("p9");
    release();
    await racing;
    expect(kept).toBe(false);
    expect(c.misses).toBe(2);
  });
});
