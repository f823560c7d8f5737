/**
 * The embedded database as the service runs it: PGlite in a worker thread,
 * reached through the `postgres` client over the wire protocol
 * (src/db/pglite-thread.ts, src/db/pglite-worker.ts). A first start copies
 * the build's template into an empty data directory and nothing else; data
 * survives a restart; transactions, errors and concurrent queries behave as
 * on a server; and the event loop keeps turning while the database works.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Database, isUniqueViolation, openEmbedded } from "../../src/db/client.js";
import { startPgliteThread } from "../../src/db/pglite-thread.js";
import { resultRows } from "../../src/numbering/rows.js";
import { describeEmbedded } from "../support/db.js";

const root = mkdtempSync(join(tmpdir(), "sb-embedded-"));
const template = join(root, "template");

/** The single value of a one-row, one-column query. */
async function scalar(database: Database, query: ReturnType<typeof sql>): Promise<unknown> {
  const rows = resultRows(await database.db.execute(query)) as Record<string, unknown>[];
  return Object.values(rows[0]!)[0];
}

beforeAll(async () => {
  // A template as the build makes one: a closed PGlite data directory.
  const pg = await PGlite.create({ dataDir: template });
  await pg.exec(
    "create table marker (note text primary key); insert into marker values ('from the template')",
  );
  await pg.close();
}, 120_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describeEmbedded("the embedded database thread", () => {
  const dataDir = join(root, "data");
  let database: Database;

  afterAll(async () => {
    await database?.close();
  });

  it("copies the template into an empty data directory on a first start", async () => {
    database = await openEmbedded(dataDir, template);
    expect(database.driver).toBe("pglite");
    expect(database.created).toBe("template");
    expect(await scalar(database, sql`select note from marker`)).toBe("from the template");
  });

  it("runs transactions: a commit keeps its writes, a throw rolls them back", async () => {
    await database.db.execute(sql`create table items (id int primary key, tags text[] not null)`);
    await database.db.transaction(async (tx) => {
      await tx.execute(sql`insert into items values (1, ${sql.raw("'{a,b}'")})`);
      await tx.execute(sql`insert into items values (2, '{}')`);
    });
    await expect(
      database.db.transaction(async (tx) => {
        await tx.execute(sql`insert into items values (3, '{}')`);
        throw new Error("changed my mind");
      }),
    ).rejects.toThrow("changed my mind");
    expect(await scalar(database, sql`select count(*)::int from items`)).toBe(2);
    // Arrays come back parsed, as from a server.
    expect(await scalar(database, sql`select tags from items where id = 1`)).toEqual(["a", "b"]);
  });

  it("reports PostgreSQL errors with their SQLSTATE, and goes on serving", async () => {
    const err = await database.db.execute(sql`insert into items values (1, '{}')`).catch((e: unknown) => e);
    expect(isUniqueViolation(err)).toBe(true);
    expect(await scalar(database, sql`select count(*)::int from items`)).toBe(2);
  });

  it("answers concurrent queries, each with its own result", async () => {
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => scalar(database, sql`select ${i}::int * 2`)),
    );
    expect(answers).toEqual(Array.from({ length: 100 }, (_, i) => i * 2));
  });

  it("keeps the event loop turning while the database works", async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    try {
      // Long enough to be many timer periods on any machine.
      await database.db.execute(sql`select sum(x) from generate_series(1, 3000000) as x`);
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(0);
  });

  it("refuses a second connection while one is open, instead of interleaving two sessions", async () => {
    const thread = startPgliteThread(join(root, "one-session"));
    try {
      await thread.ready;
      const first = postgres({ socket: () => thread.connect(), max: 1, onnotice: () => {} } as never);
      const second = postgres({ socket: () => thread.connect(), max: 1, onnotice: () => {} } as never);
      try {
        expect((await first`select 1 as one`)[0]).toEqual({ one: 1 });
        await expect(second`select 2`).rejects.toThrow(/one connection at a time/);
        // The first connection goes on serving.
        expect((await first`select 3 as three`)[0]).toEqual({ three: 3 });
      } finally {
        await second.end({ timeout: 1 });
        await first.end({ timeout: 1 });
      }
    } finally {
      await thread.close();
    }
  });

  it("keeps the data of a restart and never copies the template over it", async () => {
    await database.close();
    database = await openEmbedded(dataDir, template);
    expect(database.created).toBeUndefined();
    expect(await scalar(database, sql`select count(*)::int from items`)).toBe(2);
  });

  it("fails queries after close instead of hanging", async () => {
    const closed = database;
    await closed.close();
    await expect(closed.db.execute(sql`select 1`)).rejects.toThrow();
    database = await openEmbedded(dataDir, template);
  });
});

describeEmbedded("opening the embedded database", () => {
  it("initialises an empty data directory when there is no template", async () => {
    const database = await openEmbedded(join(root, "fresh"), undefined);
    try {
      expect(database.created).toBe("initdb");
      expect(await scalar(database, sql`select 1 + 1`)).toBe(2);
    } finally {
      await database.close();
    }
  });

  it("says why when the data directory cannot be used", async () => {
    const file = join(root, "not-a-directory");
    writeFileSync(file, "x");
    await expect(openEmbedded(join(file, "pgdata"), undefined)).rejects.toThrow(/embedded database/);
  });
});
