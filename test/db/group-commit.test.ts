/**
 * Group commit (src/db/group-commit.ts): the writes asked for in one turn
 * of the event loop are one transaction on the writer's own connections;
 * each still settles with its own outcome.
 *
 * Real parts: PostgreSQL (a scratch database), the Database openPostgres
 * gives the service, and for a lost connection a TCP proxy in front of it
 * that drops the connection at a chosen statement (test/support/pg-proxy.ts).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Database, openPostgres } from "../../src/db/client.js";
import { groupedBatches, groupedRows, LANES } from "../../src/db/group-commit.js";
import { isTransientDatabaseError } from "../../src/db/transient.js";
import { createScratchDatabase, describePostgres } from "../support/db.js";
import { type PgProxy, startPgProxy } from "../support/pg-proxy.js";

/** Inserts mark `n` and returns the transaction it was written in. */
const INSERT = "insert into marks (n) values ($1) returning txid_current()::text";

describePostgres("group commit (PostgreSQL)", () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let proxy: PgProxy;
  let database: Database;

  const write = (n: number, text = INSERT) => groupedRows(database.db, text, [n]);
  const marks = async () => {
    const rows = (await database.db.execute("select n from marks order by n")) as unknown as { n: number }[];
    return rows.map((r) => r.n);
  };
  const reset = () => database.db.execute("truncate marks");

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
    proxy = await startPgProxy(scratch.url);
    database = openPostgres(proxy.url);
    await database.db.execute("create table marks (n int primary key)");
  });
  afterAll(async () => {
    await database?.close();
    await proxy?.close();
    await scratch?.drop();
  });

  it("commits the writes of one turn as one transaction, each with its own rows", async () => {
    await reset();
    const before = groupedBatches(database.db);
    const results = await Promise.all([1, 2, 3, 4, 5].map((n) => write(n)));
    const transactions = new Set(results.map((rows) => rows[0]?.[0]));
    expect(transactions.size).toBe(1);
    expect(groupedBatches(database.db)).toBe(before + 1);
    expect(await marks()).toEqual([1, 2, 3, 4, 5]);
  });

  it("sends a write alone as its own statement", async () => {
    await reset();
    const before = groupedBatches(database.db);
    const [first] = await write(1);
    const [second] = await write(2);
    expect(first?.[0]).not.toBe(second?.[0]);
    expect(groupedBatches(database.db)).toBe(before);
    expect(await marks()).toEqual([1, 2]);
  });

  it("takes what comes while its connections are busy in the next transactions, and loses none", async () => {
    await reset();
    const n = 350;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => write(i)));
    const transactions = new Set(results.map((rows) => rows[0]?.[0]));
    // At most 100 a transaction, and never one each.
    expect(transactions.size).toBeGreaterThanOrEqual(4);
    expect(transactions.size).toBeLessThan(n / 10);
    expect(await marks()).toEqual(Array.from({ length: n }, (_, i) => i));
  });

  it("fails only the write the database refuses: the others of its transaction are written", async () => {
    await reset();
    await write(2);
    const outcomes = await Promise.allSettled([write(1), write(2), write(3)]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: "23505" });
    expect(await marks()).toEqual([1, 2, 3]);
  });

  it("fails each write of a transaction whose connection is lost, throws nothing, and goes on", async () => {
    await reset();
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on("uncaughtException", onUncaught);
    process.on("unhandledRejection", onUncaught);
    try {
      const lostBefore = proxy.lost();
      // The connection is dropped as the batch's statements reach the proxy: nothing committed.
      proxy.loseReplyTo("lost-mark", { before: true });
      const outcomes = await Promise.allSettled([write(1), write(2, `${INSERT} /* lost-mark */`), write(3)]);
      expect(proxy.lost()).toBe(lostBefore + 1);
      for (const o of outcomes) {
        expect(o.status).toBe("rejected");
        expect(isTransientDatabaseError((o as PromiseRejectedResult).reason)).toBe(true);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(uncaught).toEqual([]);
      expect(await marks()).toEqual([]);
      // Every lane works again (none kept by the lost transaction), alone and in groups.
      for (let round = 0; round < LANES * 3; round++) {
        await Promise.all([write(10 + 2 * round), write(11 + 2 * round)]);
      }
      await write(100);
      expect(await marks()).toHaveLength(LANES * 6 + 1);
    } finally {
      process.off("uncaughtException", onUncaught);
      process.off("unhandledRejection", onUncaught);
    }
  });
});
