/**
 * The SIP edge's memory of users' credentials (src/voice/sip-users/credentials-cache.ts):
 * served without a read until the user changes; unknown users never kept;
 * a lookup racing with a change not stored; nothing served while changes
 * cannot reach it; and on PostgreSQL a change made through another database
 * connection (another replica) reaches it by NOTIFY.
 */
import { afterAll, describe, expect, it } from "vitest";
import { SipDomains } from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipUsers } from "../../gen/switchboard/voice/v1/sip_users_pb.js";
import { systemClock } from "../../src/clock.js";
import { openPostgres } from "../../src/db/client.js";
import { createLogger } from "../../src/log.js";
import { VoiceStore } from "../../src/voice/sip-domains/repository.js";
import {
  type CredentialsLookup,
  cachedSipCredentials,
  SipCredentialsCache,
} from "../../src/voice/sip-users/credentials-cache.js";
import type { SipUserCredentials } from "../../src/voice/sip-users/domain.js";
import { SipUsersDomain } from "../../src/voice/sip-users/domain.js";
import { createTestClient, newProject } from "../support/app.js";
import { describePostgres, postgresTestBackend, useTestDatabase } from "../support/db.js";
import { newSipDomainId } from "./support.js";

function directory(): CredentialsLookup & { reads: number; users: Map<string, SipUserCredentials> } {
  const users = new Map<string, SipUserCredentials>();
  const d = {
    reads: 0,
    users,
    async credentials(sipDomainId: string, username: string) {
      d.reads++;
      // The row as read now, delivered a moment later (a change may land meanwhile).
      const row = users.get(`${sipDomainId}/${username}`);
      await new Promise((r) => setTimeout(r, 2));
      return row;
    },
    async hasUsers(domain: { projectId: string; id: string }) {
      d.reads++;
      const found = [...users.keys()].some((k) => k.startsWith(`${domain.id}/`));
      await new Promise((r) => setTimeout(r, 2));
      return found;
    },
  };
  return d;
}

const alice = (domain: string, ha1 = "a"): SipUserCredentials => ({
  projectId: "p",
  sipDomainId: domain,
  userId: "alice",
  username: "alice",
  disabled: false,
  realm: `${domain}.sip.example`,
  ha1Md5: ha1,
  ha1Sha256: ha1,
});

describe("SipCredentialsCache", () => {
  it("serves a user from memory until its domain is invalidated, other domains kept", async () => {
    const dir = directory();
    dir.users.set("d1/alice", alice("d1"));
    dir.users.set("d2/alice", alice("d2"));
    const cache = new SipCredentialsCache(dir);
    await cache.credentials("d1", "alice");
    await cache.credentials("d2", "alice");
    expect((await cache.credentials("d1", "alice"))?.ha1Md5).toBe("a");
    expect(dir.reads).toBe(2);
    dir.users.set("d1/alice", alice("d1", "b"));
    cache.invalidate("d1");
    expect((await cache.credentials("d1", "alice"))?.ha1Md5).toBe("b");
    await cache.credentials("d2", "alice");
    expect(dir.reads).toBe(3);
    cache.invalidate(undefined);
    expect(cache.size).toBe(0);
  });

  it("never keeps an unknown user, and expires entries", async () => {
    const dir = directory();
    let now = 0;
    const cache = new SipCredentialsCache(dir, { ttlMs: 1000, now: () => now });
    expect(await cache.credentials("d1", "nobody")).toBeUndefined();
    expect(await cache.credentials("d1", "nobody")).toBeUndefined();
    expect(dir.reads).toBe(2);
    dir.users.set("d1/alice", alice("d1"));
    await cache.credentials("d1", "alice");
    now = 1000;
    await cache.credentials("d1", "alice");
    expect(dir.reads).toBe(4);
  });

  it("does not store a lookup that raced with an invalidation", async () => {
    const dir = directory();
    dir.users.set("d1/alice", alice("d1", "old"));
    const cache = new SipCredentialsCache(dir);
    const racing = cache.credentials("d1", "alice");
    dir.users.set("d1/alice", alice("d1", "new"));
    cache.invalidate("d1");
    expect((await racing)?.ha1Md5).toBe("old");
    expect((await cache.credentials("d1", "alice"))?.ha1Md5).toBe("new");
  });

  it("remembers whether a domain has users until the domain's users change", async () => {
    const dir = directory();
    const cache = new SipCredentialsCache(dir);
    const d1 = { projectId: "p", id: "d1" };
    expect(await cache.hasUsers(d1)).toBe(false);
    expect(await cache.hasUsers(d1)).toBe(false);
    expect(dir.reads).toBe(1);
    // A user is created: until its domain is invalidated the memory says none...
    dir.users.set("d1/alice", alice("d1"));
    cache.invalidate("d2");
    expect(await cache.hasUsers(d1)).toBe(false);
    // ...and the invalidation that creating a user sends makes it ask again.
    cache.invalidate("d1");
    expect(await cache.hasUsers(d1)).toBe(true);
    expect(await cache.hasUsers(d1)).toBe(true);
    expect(dir.reads).toBe(2);
    // A read racing with an invalidation is not stored.
    const racing = cache.hasUsers(d1);
    dir.users.delete("d1/alice");
    cache.invalidate(undefined);
    expect(await racing).toBe(true);
    expect(await cache.hasUsers(d1)).toBe(false);
  });

  it("neither serves nor stores while invalidations cannot reach it", async () => {
    const dir = directory();
    dir.users.set("d1/alice", alice("d1"));
    let live = false;
    const cache = new SipCredentialsCache(dir, { live: () => live });
    await cache.credentials("d1", "alice");
    await cache.credentials("d1", "alice");
    expect(dir.reads).toBe(2);
    expect(cache.size).toBe(0);
    live = true;
    await cache.credentials("d1", "alice");
    await cache.credentials("d1", "alice");
    expect(dir.reads).toBe(3);
  });
});

describePostgres("SIP credentials of another replica's change", () => {
  const database = useTestDatabase(postgresTestBackend()!);
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });

  it("forgets a user changed through another connection (NOTIFY), and caches again when listening", async () => {
    const other = openPostgres(database.url!);
    closers.push(other.close);
    const log = createLogger("silent");
    const config = { baseDomain: "sip.example" };
    // This replica: its own pool to the same database, and its cache over it.
    const mine = new SipUsersDomain(new VoiceStore(other.db), systemClock, config);
    const cached = cachedSipCredentials(other.db, mine, log);
    closers.push(cached.close);
    const domains = createTestClient(SipDomains, database.db, systemClock);
    const users = createTestClient(SipUsers, database.db, systemClock);
    const d = await domains.createSipDomain({
      parent: await newProject(database.db),
      sipDomainId: newSipDomainId("cc"),
      sipDomain: { allowRegister: true },
    });
    const u = await users.createSipUser({
      parent: d.name,
      sipUserId: "alice",
      sipUser: { username: "alice", password: "first-password" },
    });
    // Wait for the LISTEN connection.
    for (let i = 0; i < 200; i++) {
      await cached.cache.credentials(d.sipDomainId, "alice");
      if (cached.cache.size > 0) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const before = await cached.cache.credentials(d.sipDomainId, "alice");
    const misses = cached.cache.misses;
    await cached.cache.credentials(d.sipDomainId, "alice");
    expect(cached.cache.misses).toBe(misses);
    // The change goes through the other replica's database handle.
    await users.updateSipUser({
      sipUser: { name: u.name, password: "second-password" },
      updateMask: { paths: ["password"] },
    });
    let after = before;
    for (let i = 0; i < 200 && after?.ha1Md5 === before?.ha1Md5; i++) {
      await new Promise((r) => setTimeout(r, 25));
      after = await cached.cache.credentials(d.sipDomainId, "alice");
    }
    expect(after?.ha1Md5).not.toBe(before?.ha1Md5);
    expect(cached.cache.misses).toBeGreaterThan(misses);
  });

  it("learns that a domain without users got one through another connection (NOTIFY on create)", async () => {
    const other = openPostgres(database.url!);
    closers.push(other.close);
    const log = createLogger("silent");
    const mine = new SipUsersDomain(new VoiceStore(other.db), systemClock, { baseDomain: "sip.example" });
    const cached = cachedSipCredentials(other.db, mine, log);
    closers.push(cached.close);
    const domains = createTestClient(SipDomains, database.db, systemClock);
    const users = createTestClient(SipUsers, database.db, systemClock);
    const d = await domains.createSipDomain({
      parent: await newProject(database.db),
      sipDomainId: newSipDomainId("cn"),
      sipDomain: { allowRegister: true },
    });
    const ref = { projectId: d.name.split("/")[1]!, id: d.sipDomainId };
    // Wait until the answer "no users" is remembered (the LISTEN connection is up).
    for (let i = 0; i < 200; i++) {
      const misses = cached.cache.misses;
      expect(await cached.cache.hasUsers(ref)).toBe(false);
      if (cached.cache.misses === misses) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const misses = cached.cache.misses;
    expect(await cached.cache.hasUsers(ref)).toBe(false);
    expect(cached.cache.misses).toBe(misses);
    await users.createSipUser({
      parent: d.name,
      sipUserId: "bob",
      sipUser: { username: "bob", password: "a-password-1" },
    });
    let has = false;
    for (let i = 0; i < 200 && !has; i++) {
      await new Promise((r) => setTimeout(r, 25));
      has = await cached.cache.hasUsers(ref);
    }
    expect(has).toBe(true);
  });
});
