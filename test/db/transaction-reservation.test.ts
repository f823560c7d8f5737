/**
 * A transaction owns its connection, even when the pool is saturated.
 *
 * postgres.js 3.4.9 (the `postgres` client both databases are driven
 * through) reserves a connection for `sql.begin` in a hook that ran only
 * while the connection could take more pipelined queries: a BEGIN that
 * filled a connection's pipeline (100 queries, the default) was sent without
 * reserving it (porsager/postgres#1189, #823; fixes proposed in #1207,
 * #1218, not released). Then:
 * - with a pool (the server's, max 10), the BEGIN failed with
 *   UNSAFE_TRANSACTION, an INTERNAL error for the request, and the backend
 *   stayed "idle in transaction" while the connection went back to the pool;
 * - with one connection (the embedded database's), other requests'
 *   statements ran inside the transaction, so its rollback took their
 *   acknowledged writes with it.
 * `scripts/patches/postgres+3.4.9.patch` (applied by `npm ci`, patch-package) runs
 * the hook whenever BEGIN is written, and keeps a socket's drain from handing
 * a reserved connection back to the pool. These tests build exactly that
 * saturated pipeline on real databases: PostgreSQL, and the embedded one
 * through its worker thread.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPgliteThread } from "../../src/db/pglite-thread.js";
import { createScratchDatabase, describePostgres } from "../support/db.js";

/** postgres.js's default max_pipeline: queries a connection takes before it counts as full. */
const PIPELINE = 100;

type Sql = postgres.Sql;

/**
 * Every connection of `sql` busy (a sleep each) with PIPELINE - 1 more
 * queries queued behind it: the next query sent fills a pipeline.
 */
async function saturate(sql: Sql, connections: number): Promise<Promise<unknown>[]> {
  // Every connection open and idle first (a connecting one queues in the pool instead).
  await Promise.all(Array.from({ length: connections }, () => sql`select pg_sleep(0.05)`));
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < connections; i++) pending.push(sql`select pg_sleep(0.3)`.execute());
  // Without parameters: a statement whose parameter types are not known yet is
  // described first, and a connection takes nothing behind that.
  for (let i = 0; i < connections * (PIPELINE - 1); i++) pending.push(sql`select 1 as n`.execute());
  return pending;
}

describePostgres("transactions on a saturated pool (PostgreSQL)", () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let sql: Sql;

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
    sql = postgres(scratch.url, { max: 2, onnotice: () => {} });
    await sql`create table marks (id int primary key)`;
  });

  afterAll(async () => {
    await sql?.end({ timeout: 5 });
    await scratch?.drop();
  });

  it("a BEGIN that fills a connection's pipeline still runs its transaction, and leaves none open", async () => {
    const pending = await saturate(sql, 2);
    const committed = sql.begin(async (tx) => {
      await tx`insert into marks values (1)`;
      return "committed";
    });
    await expect(committed).resolves.toBe("committed");
    await Promise.all(pending);
    // Another session sees the row: it was committed, not left in an open transaction.
    const other = postgres(scratch.url, { max: 1, onnotice: () => {} });
    try {
      expect(await other`select id from marks`).toEqual([{ id: 1 }]);
      const open = await other`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and state like 'idle in transaction%'`;
      expect(open[0]!.n).toBe(0);
    } finally {
      await other.end({ timeout: 5 });
    }
  });

  it("one connection: a rolled-back transaction takes no other request's write with it", async () => {
    const single = postgres(scratch.url, { max: 1, onnotice: () => {} });
    try {
      await expectIsolated(single);
    } finally {
      await single.end({ timeout: 5 });
    }
  });
});

describe("transactions on a saturated connection (the embedded database's thread)", () => {
  const root = mkdtempSync(join(tmpdir(), "sb-reservation-"));
  const thread = startPgliteThread(join(root, "data"));
  let sql: Sql;

  beforeAll(async () => {
    await thread.ready;
    // As src/db/client.ts's openEmbedded drives it: one connection over the thread's stream.
    const options = { socket: () => thread.connect(), max: 1, user: "postgres", database: "postgres" };
    sql = postgres(options as postgres.Options<Record<string, postgres.PostgresType>>);
    await sql`create table marks (id int primary key)`;
  }, 120_000);

  afterAll(async () => {
    await sql?.end({ timeout: 5 });
    await thread.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("a rolled-back transaction takes no other request's write with it", async () => {
    await expectIsolated(sql);
  });
});

/**
 * On a one-connection client with a full pipeline: a transaction that
 * rolls back, and a plain insert sent while it runs. The insert is its own
 * statement, acknowledged to its caller: it must survive the rollback.
 */
async function expectIsolated(sql: Sql): Promise<void> {
  await sql`truncate marks`;
  const pending = await saturate(sql, 1);
  let other: Promise<unknown> | undefined;
  const rolledBack = sql.begin(async (tx) => {
    await tx`insert into marks values (10)`;
    // Another request's write, while the transaction is open.
    other = sql`insert into marks values (20)`.execute();
    await tx`select 1`;
    throw new Error("roll back");
  });
  await expect(rolledBack).rejects.toThrow("roll back");
  await other;
  await Promise.all(pending);
  expect(await sql`select id from marks order by id`).toEqual([{ id: 20 }]);
}
