/**
 * The call engine's memory of projects' signing keys (src/events/signing-keys.ts):
 * served without a read until the project's key changes; unknown projects never
 * kept; a read racing with a change not stored; nothing served while changes
 * cannot reach it; a rotation through the repository tells this process at
 * once, and on PostgreSQL one made through another connection (another
 * replica) arrives by NOTIFY.
 */
import { afterAll, describe, expect, it } from "vitest";
import { ProjectsDomain } from "../../src/admin/projects.js";
import { ProjectsRepository } from "../../src/admin/projects-repository.js";
import { systemClock } from "../../src/clock.js";
import { openPostgres } from "../../src/db/client.js";
import { cachedSigningKeys, SigningKeyCache } from "../../src/events/signing-keys.js";
import { createLogger } from "../../src/log.js";
import { signingKeyOf } from "../../src/voice/calls/writes.js";
import { newProject } from "../support/app.js";
import { describePostgres, postgresTestBackend, testDatabases, useTestDatabase } from "../support/db.js";

function keys(): {
  read: (id: string) => Promise<string | undefined>;
  reads: number;
  table: Map<string, string>;
} {
  const table = new Map<string, string>();
  const k = {
    reads: 0,
    table,
    async read(id: string) {
      k.reads++;
      const key = table.get(id);
      await new Promise((r) => setTimeout(r, 2));
      return key;
    },
  };
  return k;
}

describe("SigningKeyCache", () => {
  it("serves a key from memory until its project is invalidated", async () => {
    const k = keys();
    k.table.set("p1", "one");
    k.table.set("p2", "two");
    const cache = new SigningKeyCache(k.read);
    expect(await cache.get("p1")).toBe("one");
    expect(await cache.get("p1")).toBe("one");
    expect(await cache.get("p2")).toBe("two");
    expect(k.reads).toBe(2);
    k.table.set("p1", "one-rotated");
    expect(await cache.get("p1")).toBe("one");
    cache.invalidate("p1");
    expect(await cache.get("p1")).toBe("one-rotated");
    expect(await cache.get("p2")).toBe("two");
    expect(k.reads).toBe(3);
  });

  it("never keeps an unknown project, expires entries, and drops a read that raced with a change", async () => {
    const k = keys();
    let now = 0;
    const cache = new SigningKeyCache(k.read, { ttlMs: 1000, now: () => now });
    expect(await cache.get("nobody")).toBeUndefined();
    expect(await cache.get("nobody")).toBeUndefined();
    expect(k.reads).toBe(2);
    k.table.set("p1", "old");
    const racing = cache.get("p1");
    k.table.set("p1", "new");
    cache.invalidate(undefined);
    expect(await racing).toBe("old");
    expect(await cache.get("p1")).toBe("new");
    expect(k.reads).toBe(4);
    now = 1000;
    expect(await cache.get("p1")).toBe("new");
    expect(k.reads).toBe(5);
  });

  it("neither serves nor stores while invalidations cannot reach it", async () => {
    const k = keys();
    k.table.set("p1", "one");
    let live = false;
    const cache = new SigningKeyCache(k.read, { live: () => live });
    await cache.get("p1");
    await cache.get("p1");
    expect(k.reads).toBe(2);
    expect(cache.size).toBe(0);
    live = true;
    await cache.get("p1");
    await cache.get("p1");
    expect(k.reads).toBe(3);
  });
});

describe.each(testDatabases())("signing keys remembered on $name", (backend) => {
  const database = useTestDatabase(backend);

  it("a rotation through the repository (the admin API's) reaches this process's memory at once", async () => {
    const project = (await newProject(database.db)).split("/")[1]!;
    const remembered = cachedSigningKeys(
      database.db,
      (id) => signingKeyOf(database.db, id),
      createLogger("silent"),
    );
    try {
      const before = await signingKeyOf(database.db, project);
      // On PostgreSQL nothing is kept until the LISTEN connection is up.
      for (let i = 0; i < 200 && remembered.cache.size === 0; i++) {
        expect(await remembered.cache.get(project)).toBe(before);
        if (remembered.cache.size === 0) await new Promise((r) => setTimeout(r, 25));
      }
      expect(remembered.cache.size).toBe(1);
      const rotated = await new ProjectsDomain(
        new ProjectsRepository(database.db),
        systemClock,
      ).rotateSigningKey(project);
      expect(rotated.signingKey).not.toBe(before);
      expect(await remembered.cache.get(project)).toBe(rotated.signingKey);
    } finally {
      await remembered.close();
    }
  });
});

describePostgres("signing keys of another replica's rotation", () => {
  const database = useTestDatabase(postgresTestBackend()!);
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });

  it("forgets a key rotated through another connection (NOTIFY)", async () => {
    const other = openPostgres(database.url!);
    closers.push(other.close);
    const remembered = cachedSigningKeys(
      other.db,
      (id) => signingKeyOf(other.db, id),
      createLogger("silent"),
    );
    closers.push(remembered.close);
    const project = (await newProject(database.db)).split("/")[1]!;
    const before = await signingKeyOf(database.db, project);
    for (let i = 0; i < 200 && remembered.cache.size === 0; i++) {
      await remembered.cache.get(project);
      if (remembered.cache.size === 0) await new Promise((r) => setTimeout(r, 25));
    }
    const misses = remembered.cache.misses;
    expect(await remembered.cache.get(project)).toBe(before);
    expect(remembered.cache.misses).toBe(misses);
    // The rotation goes through the other replica's database handle.
    const rotated = await new ProjectsDomain(
      new ProjectsRepository(database.db),
      systemClock,
    ).rotateSigningKey(project);
    let seen = before;
    for (let i = 0; i < 200 && seen === before; i++) {
      await new Promise((r) => setTimeout(r, 25));
      seen = await remembered.cache.get(project);
    }
    expect(seen).toBe(rotated.signingKey);
  });
});
