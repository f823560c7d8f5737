import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { count, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MIGRATIONS_FOLDER, openPostgres } from "../../src/db/client.js";
import { unsubscribers } from "../../src/db/schema/index.js";
import { build } from "../../src/server.js";
import { TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { createScratchDatabase, testDatabases, useTestDatabase } from "../support/db.js";

/** How many migrations src/db/migrations holds (drizzle-kit's journal). */
function journalEntries(): number {
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, "meta", "_journal.json"), "utf8")) as {
    entries: unknown[];
  };
  return journal.entries.length;
}

/**
 * A Connect JSON call to the app as the operator (no client library: the
 * wire as any client sees it).
 */
async function call(
  base: string,
  method: string,
  body: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${base}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TEST_OPERATOR_TOKEN}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const CREATE_PROJECT = "switchboard.admin.v1.Projects/CreateProject";
const CREATE = "enfonica.messaging.v1.Unsubscribers/CreateUnsubscriber";
const LIST = "enfonica.messaging.v1.Unsubscribers/ListUnsubscribers";

/** Creates the project `id` through the admin API. */
async function createProject(base: string, id: string): Promise<void> {
  const created = await call(base, CREATE_PROJECT, { projectId: id });
  expect(created.status, JSON.stringify(created.json)).toBe(200);
}

describe("build() and the database", () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "switchboard-data-"));
  });

  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it("opens and migrates the embedded database in DATA_DIR, closes it, and finds the data after a restart", async () => {
    const config = testConfig({ DATA_DIR: dataDir });
    const first = await build({ config });
    const a = await first.listen(0, "127.0.0.1");
    await createProject(`http://127.0.0.1:${a.port}`, "restart");
    const created = await call(`http://127.0.0.1:${a.port}`, CREATE, {
      parent: "projects/restart",
      unsubscriber: { phone: "+61491570156" },
    });
    expect(created.status).toBe(200);
    await first.close();

    const second = await build({ config });
    const b = await second.listen(0, "127.0.0.1");
    const listed = await call(`http://127.0.0.1:${b.port}`, LIST, { parent: "projects/restart" });
    await second.close();
    expect(listed.status).toBe(200);
    expect(listed.json.unsubscribers).toEqual([created.json]);
  });

  // Only where PostgreSQL is configured, like every PostgreSQL run (no skipped tests).
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (adminUrl)
    it("migrates a PostgreSQL database named by DATABASE_URL on start, also with replicas starting together", async () => {
      const scratch = await createScratchDatabase(adminUrl);
      try {
        const config = testConfig({ DATABASE_URL: scratch.url });
        const apps = await Promise.all([build({ config }), build({ config }), build({ config })]);
        const address = await apps[0]!.listen(0, "127.0.0.1");
        await createProject(`http://127.0.0.1:${address.port}`, "pg");
        const created = await call(`http://127.0.0.1:${address.port}`, CREATE, {
          parent: "projects/pg",
          unsubscriber: { phone: "+61491570156" },
        });
        expect(created.status).toBe(200);
        await Promise.all(apps.map((app) => app.close()));
        const check = openPostgres(scratch.url);
        const rows = await check.db.execute(sql`select count(*)::int as n from drizzle.__drizzle_migrations`);
        await check.close();
        // Each migration applied exactly once, whichever replica applied it.
        expect((rows as unknown as { n: number }[])[0]?.n).toBe(journalEntries());
      } finally {
        await scratch.drop();
      }
    });
});

describe.each(testDatabases())("build() with a database passed in, on $name", (backend) => {
  const database = useTestDatabase(backend);

  it("uses it, migrates it (idempotently) and leaves it open on close()", async () => {
    const app = await build({ config: testConfig(), db: database.db });
    const address = await app.listen(0, "127.0.0.1");
    await createProject(`http://127.0.0.1:${address.port}`, "passed");
    const created = await call(`http://127.0.0.1:${address.port}`, CREATE, {
      parent: "projects/passed",
      unsubscriber: { phone: "+61491570156" },
    });
    expect(created.status).toBe(200);
    await app.close();
    const [row] = await database.db.select({ n: count() }).from(unsubscribers);
    expect(row?.n).toBe(1);
  });
});
