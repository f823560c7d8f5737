/**
 * The credential cache (src/auth/credential-cache.ts): a key is looked up
 * once, then served from memory, yet disabling, rebinding or deleting it, or
 * deleting its project, stops it at once — on the replica that made the
 * change, on another app sharing the database in this process, and (on
 * PostgreSQL) on another replica with its own connections, told by
 * LISTEN/NOTIFY. The other replicas' caches are built with an hour's
 * lifetime, so only the notification can explain a refusal.
 */
import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import type postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CachingCredentialStore } from "../../src/auth/credential-cache.js";
import { DbCredentialStore } from "../../src/auth/store.js";
import { type Db, openPostgres } from "../../src/db/client.js";
import { type App, build } from "../../src/server.js";
import { TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { describePostgres, postgresTestBackend, testDatabases, useTestDatabase } from "../support/db.js";

const HOUR = 3_600_000;

interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON answers of the REST surface
  json: Record<string, any>;
}

async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  token: string = TEST_OPERATOR_TOKEN,
): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Answer["json"] };
}

async function start(db: Db): Promise<{ app: App; base: string }> {
  const app = await build({ config: testConfig(), db, credentialCache: { ttlMs: HOUR } });
  const address = await app.listen(0, "127.0.0.1");
  return { app, base: `http://127.0.0.1:${address.port}` };
}

let counter = 0;
const newProject = () => `cc-${randomBytes(4).toString("hex")}-${counter++}`;

/** A project and an owner key on it, made through `base`; returns the key's id, name and secret. */
async function keyOn(base: string, project: string, roles = ["roles/owner"]) {
  const res = await call(base, "POST", "/admin/v1/apiKeys", {
    bindings: [{ project: `projects/${project}`, roles }],
  });
  expect(res.status).toBe(200);
  const name = res.json.apiKey.name as string;
  return { name, id: name.slice("apiKeys/".length), secret: res.json.secret as string };
}

describe.each(testDatabases())("credential cache on $name", (backend) => {
  const database = useTestDatabase(backend);
  let a: { app: App; base: string };
  let b: { app: App; base: string };

  beforeAll(async () => {
    a = await start(database.db);
    // A second app on the same database object (the in-process fan-out).
    b = await start(database.db);
  });

  afterAll(async () => {
    await a?.app.close();
    await b?.app.close();
  });

  async function project(): Promise<string> {
    const id = newProject();
    expect((await call(a.base, "POST", `/admin/v1/projects?projectId=${id}`, {})).status).toBe(200);
    return id;
  }

  it("looks a key up once, then serves it from the cache", async () => {
    const p = await project();
    const key = await keyOn(a.base, p);
    const list = `/v1beta1/projects/${p}/regulatoryListings`;
    const misses = a.app.credentials.cache.misses;
    expect((await call(a.base, "GET", list, undefined, key.secret)).status).toBe(200);
    expect(a.app.credentials.cache.has(key.id)).toBe(true);
    expect((await call(a.base, "GET", list, undefined, key.secret)).status).toBe(200);
    expect((await call(a.base, "GET", list, undefined, key.secret)).status).toBe(200);
    expect(a.app.credentials.cache.misses).toBe(misses + 1);
  });

  it("refuses another secret with a cached key's id (the verified secret is compared, not trusted by id)", async () => {
    const p = await project();
    const key = await keyOn(a.base, p);
    const list = `/v1beta1/projects/${p}/regulatoryListings`;
    expect((await call(a.base, "GET", list, undefined, key.secret)).status).toBe(200);
    expect(a.app.credentials.cache.has(key.id)).toBe(true);
    const random = key.secret.slice(-43);
    const flipped = random[0] === "A" ? `B${random.slice(1)}` : `A${random.slice(1)}`;
    for (const forged of [`sb_${key.id}_${flipped}`, `sb_${key.id}_${"x".repeat(43)}`]) {
      const refused = await call(a.base, "GET", list, undefined, forged);
      expect(refused.status).toBe(401);
      expect(refused.json.error.details[0].reason).toBe("CREDENTIALS_INVALID");
    }
    expect((await call(a.base, "GET", list, undefined, key.secret)).status).toBe(200);
  });

  it("stops a disabled, rebound or deleted key at once, on this app and on another sharing the database", async () => {
    const p = await project();
    const key = await keyOn(a.base, p);
    const list = `/v1beta1/projects/${p}/regulatoryListings`;
    const create = (base: string) =>
      call(
        base,
        "POST",
        list,
        {
          displayName: "Head office",
          address: {
            addressLines: ["1 Example St"],
            locality: "Sydney",
            administrativeArea: "NSW",
            postalCode: "2000",
            regionCode: "AU",
          },
          business: { business: "Example Pty Ltd" },
        },
        key.secret,
      );
    for (const app of [a, b])
      expect((await call(app.base, "GET", list, undefined, key.secret)).status).toBe(200);
    expect(b.app.credentials.cache.has(key.id)).toBe(true);

    // disabled through a: refused by both at once
    expect(
      (await call(a.base, "PATCH", `/admin/v1/${key.name}?updateMask=disabled`, { disabled: true })).status,
    ).toBe(200);
    for (const app of [a, b]) {
      const refused = await call(app.base, "GET", list, undefined, key.secret);
      expect(refused.status).toBe(401);
      expect(refused.json.error.details[0].reason).toBe("API_KEY_DISABLED");
    }
    expect(
      (await call(a.base, "PATCH", `/admin/v1/${key.name}?updateMask=disabled`, { disabled: false })).status,
    ).toBe(200);
    for (const app of [a, b]) expect((await create(app.base)).status).toBe(200);

    // rebound to a viewer through b: a refuses the write at once
    const rebound = await call(b.base, "PATCH", `/admin/v1/${key.name}`, {
      bindings: [{ project: `projects/${p}`, roles: ["roles/viewer"] }],
    });
    expect(rebound.status).toBe(200);
    for (const app of [a, b]) {
      expect((await create(app.base)).status).toBe(403);
      expect((await call(app.base, "GET", list, undefined, key.secret)).status).toBe(200);
    }

    // deleted through a
    expect((await call(a.base, "DELETE", `/admin/v1/${key.name}`)).status).toBe(200);
    for (const app of [a, b])
      expect((await call(app.base, "GET", list, undefined, key.secret)).status).toBe(401);
  });

  it("stops a key's access to a deleted project at once, and to a project re-created with its id", async () => {
    const p = await project();
    const key = await keyOn(a.base, p);
    const list = `/v1beta1/projects/${p}/regulatoryListings`;
    for (const app of [a, b])
      expect((await call(app.base, "GET", list, undefined, key.secret)).status).toBe(200);
    expect((await call(b.base, "DELETE", `/admin/v1/projects/${p}`)).status).toBe(200);
    for (const app of [a, b])
      expect((await call(app.base, "GET", list, undefined, key.secret)).status).toBe(403);
    // the operator's view of the project (its existence is cached too) follows as well
    for (const app of [a, b]) expect((await call(app.base, "GET", list)).status).toBe(404);
    expect((await call(a.base, "POST", `/admin/v1/projects?projectId=${p}`, {})).status).toBe(200);
    for (const app of [a, b]) {
      expect((await call(app.base, "GET", list, undefined, key.secret)).status).toBe(403);
      expect((await call(app.base, "GET", list)).status).toBe(200);
    }
  });

  it("does not store an answer read before a change it raced with", async () => {
    const p = await project();
    const key = await keyOn(a.base, p);
    const cache = new CachingCredentialStore(new DbCredentialStore(database.db), { ttlMs: HOUR });
    const pending = cache.findApiKey(key.id);
    cache.invalidate(key.id);
    expect(await pending).toBeDefined();
    expect(cache.has(key.id)).toBe(false);
    await cache.findApiKey(key.id);
    expect(cache.has(key.id)).toBe(true);
  });

  it("caches nothing while changes cannot reach it", async () => {
    const p = await project();
    const key = await keyOn(a.base, p);
    let live = false;
    const cache = new CachingCredentialStore(new DbCredentialStore(database.db), {
      ttlMs: HOUR,
      live: () => live,
    });
    await cache.findApiKey(key.id);
    await cache.findApiKey(key.id);
    expect(cache.misses).toBe(2);
    expect(cache.size).toBe(0);
    live = true;
    await cache.findApiKey(key.id);
    await cache.findApiKey(key.id);
    expect(cache.misses).toBe(3);
  });

  it("never caches an unknown key, nor a wrong secret of a known one", async () => {
    const p = await project();
    const key = await keyOn(a.base, p);
    const list = `/v1beta1/projects/${p}/regulatoryListings`;
    const unknown = `sb_nokey${counter++}_${"A".repeat(43)}`;
    const misses = a.app.credentials.cache.misses;
    for (let i = 0; i < 3; i++) {
      expect((await call(a.base, "GET", list, undefined, unknown)).status).toBe(401);
    }
    expect(a.app.credentials.cache.misses - misses).toBe(3);
    expect(a.app.credentials.cache.has(unknown.split("_")[1]!)).toBe(false);
    // a known key with a wrong secret: found (and cached), still refused every time
    const wrong = `sb_${key.id}_${"B".repeat(43)}`;
    for (let i = 0; i < 2; i++) {
      expect((await call(a.base, "GET", list, undefined, wrong)).status).toBe(401);
    }
    expect((await call(a.base, "GET", list, undefined, key.secret)).status).toBe(200);
  });
});

const adminUrl = process.env.TEST_DATABASE_URL;

describePostgres("credential cache across replicas on one PostgreSQL", () => {
  const database = useTestDatabase(postgresTestBackend()!);
  let a: { app: App; base: string };
  let b: { app: App; base: string };
  let second: { db: Db; close(): Promise<void> } | undefined;

  beforeAll(async () => {
    // Replica b: its own pool (and listener) on the same database.
    const dbName = (database.db as unknown as { $client: postgres.Sql }).$client.options.database;
    const url = new URL(adminUrl!);
    url.pathname = `/${dbName}`;
    second = openPostgres(url.toString());
    a = await start(database.db);
    b = await start(second.db);
    await vi.waitFor(() => expect(a.app.credentials.live() && b.app.credentials.live()).toBe(true), {
      timeout: 30_000,
    });
  });

  afterAll(async () => {
    await a?.app.close();
    await b?.app.close();
    await second?.close();
  });

  it("drops a key disabled or deleted through one replica from the other's cache when the change commits", async () => {
    const p = newProject();
    expect((await call(a.base, "POST", `/admin/v1/projects?projectId=${p}`, {})).status).toBe(200);
    const key = await keyOn(a.base, p);
    const list = `/v1beta1/projects/${p}/regulatoryListings`;
    expect((await call(b.base, "GET", list, undefined, key.secret)).status).toBe(200);
    expect(b.app.credentials.cache.has(key.id)).toBe(true);

    expect(
      (await call(a.base, "PATCH", `/admin/v1/${key.name}?updateMask=disabled`, { disabled: true })).status,
    ).toBe(200);
    // Not the hour's expiry: the notification.
    await vi.waitFor(() => expect(b.app.credentials.cache.has(key.id)).toBe(false), { timeout: 30_000 });
    const refused = await call(b.base, "GET", list, undefined, key.secret);
    expect(refused.status).toBe(401);
    expect(refused.json.error.details[0].reason).toBe("API_KEY_DISABLED");

    expect(
      (await call(a.base, "PATCH", `/admin/v1/${key.name}?updateMask=disabled`, { disabled: false })).status,
    ).toBe(200);
    await vi.waitFor(
      async () => expect((await call(b.base, "GET", list, undefined, key.secret)).status).toBe(200),
      {
        timeout: 30_000,
      },
    );
    expect(b.app.credentials.cache.has(key.id)).toBe(true);
    expect((await call(a.base, "DELETE", `/admin/v1/${key.name}`)).status).toBe(200);
    await vi.waitFor(() => expect(b.app.credentials.cache.has(key.id)).toBe(false), { timeout: 30_000 });
    expect((await call(b.base, "GET", list, undefined, key.secret)).status).toBe(401);
  });

  it("empties and bypasses the cache while its listening connection is lost, and listens again", async () => {
    const p = newProject();
    expect((await call(a.base, "POST", `/admin/v1/projects?projectId=${p}`, {})).status).toBe(200);
    const key = await keyOn(a.base, p);
    const list = `/v1beta1/projects/${p}/regulatoryListings`;
    expect((await call(b.base, "GET", list, undefined, key.secret)).status).toBe(200);
    expect(b.app.credentials.cache.has(key.id)).toBe(true);

    // Cut every listening connection of this database (both replicas').
    await database.db.execute(
      sql`select pg_terminate_backend(pid) from pg_stat_activity
          where datname = current_database() and query like 'listen switchboard_credentials%'`,
    );
    await vi.waitFor(() => expect(b.app.credentials.cache.size).toBe(0), { timeout: 30_000 });
    await vi.waitFor(() => expect(b.app.credentials.live()).toBe(true), { timeout: 30_000 });

    // Listening again: a change through a still reaches b.
    expect((await call(b.base, "GET", list, undefined, key.secret)).status).toBe(200);
    expect(b.app.credentials.cache.has(key.id)).toBe(true);
    expect((await call(a.base, "DELETE", `/admin/v1/${key.name}`)).status).toBe(200);
    await vi.waitFor(() => expect(b.app.credentials.cache.has(key.id)).toBe(false), { timeout: 30_000 });
    expect((await call(b.base, "GET", list, undefined, key.secret)).status).toBe(401);
  });
});
