/**
 * A connection lost at the wrong moment fails the queries that were on it,
 * and nothing else: no unhandled rejection, no exception from a timer (the
 * service's process exits on either: src/process-errors.ts).
 *
 * While it starts up:
 * postgres.js 3.4.9 reads the database's array types as the first statement
 * of every new connection (`fetch_types`, on by default) and drops that
 * statement's promise (porsager/postgres#1192, #1205, #1223; open). When
 * the connection failed during it — the database restarting, a network
 * blip — the rejection was unhandled, and the service's process exits on
 * one (src/process-errors.ts): a short database outage killed the server.
 * `scripts/patches/postgres+3.4.9.patch` handles it; the connection then
 * closes and reconnects as for any other lost connection.
 *
 * In a transaction: when a statement of `sql.begin` fails because the
 * connection closed, postgres.js sends ROLLBACK on it from the transaction's
 * catch; that write was scheduled on a socket already gone and threw from a
 * timer (porsager/postgres#1208, #1154; open). A statement of the transaction
 * sent after the close could also run on the connection it reconnected as,
 * outside the transaction (#1216). The patch fails the write's queries with
 * CONNECTION_CLOSED, and a transaction's statements once its connection
 * closed. After a reset (the socket errors, then closes), the ROLLBACK
 * sent between the two was left waiting for a reply on the next socket,
 * and the connection answered nothing more (#1215): the patch fails it with
 * the close.
 *
 * Real parts: PostgreSQL behind a TCP proxy that drops the connection at a
 * chosen statement (test/support/pg-proxy.ts).
 */
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reconnectDelaySeconds } from "../../src/db/client.js";
import { isTransientDatabaseError } from "../../src/db/transient.js";
import { createScratchDatabase, describePostgres } from "../support/db.js";
import { type PgProxy, startPgProxy } from "../support/pg-proxy.js";

describePostgres("a connection lost (PostgreSQL)", () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let proxy: PgProxy;

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
    proxy = await startPgProxy(scratch.url);
  });
  afterAll(async () => {
    await proxy?.close();
    await scratch?.drop();
  });

  it("in a transaction: the transaction fails, and nothing throws from a timer", async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on("uncaughtException", onUncaught);
    const sql = postgres(proxy.url, { max: 1, onnotice: () => {} });
    try {
      await sql`create table if not exists marks (n int)`;
      const lostBefore = proxy.lost();
      // The transaction's insert never reaches the server: the connection is dropped first.
      proxy.loseReplyTo("dropped-mark", { before: true });
      const outcome = await sql
        .begin(async (t) => {
          await t`select 1`;
          await t.unsafe("insert into marks values (1) /* dropped-mark */");
          await t.unsafe("insert into marks values (2)");
        })
        .then(
          () => "committed",
          (err: unknown) => err,
        );
      expect(proxy.lost()).toBe(lostBefore + 1);
      expect(isTransientDatabaseError(outcome)).toBe(true);
      // The transaction's ROLLBACK is written (or not) in a later turn of the loop.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(uncaught).toEqual([]);
      // Nothing of it was written, and the pool works on.
      expect((await sql`select count(*)::int as n from marks`)[0]?.n).toBe(0);
    } finally {
      process.off("uncaughtException", onUncaught);
      await sql.end({ timeout: 5 });
    }
  });

  it("in a transaction, reset: the connection answers again afterwards, every time", async () => {
    const sql = postgres(proxy.url, { max: 1, onnotice: () => {} });
    try {
      await sql`create table if not exists marks (n int)`;
      // A reset (the socket errors before it closes) as the insert goes out.
      proxy.loseReplyTo("reset-mark", { before: true, reset: true });
      const outcome = await sql
        .begin(async (t) => {
          await t`select 1`;
          await t.unsafe("insert into marks values (1) /* reset-mark */");
        })
        .catch((err: unknown) => err);
      expect(isTransientDatabaseError(outcome)).toBe(true);
      // The ROLLBACK sent between the socket's error and its close must not be waited for.
      for (let i = 0; i < 4; i++) {
        const answer = sql`select ${i}::int as n`.then((rows) => rows[0]?.n);
        const hung = new Promise((resolve) => setTimeout(() => resolve("no answer in 5 s"), 5_000));
        expect(await Promise.race([answer, hung])).toBe(i);
      }
    } finally {
      await sql.end({ timeout: 5 });
    }
  });

  it("in a transaction: statements queued behind a full pipeline settle when the connection drops", async () => {
    const sql = postgres(proxy.url, { max: 1, onnotice: () => {} });
    try {
      let statements: Promise<unknown>[] = [];
      const transaction = sql
        .begin((t) => {
          // More than a connection's pipeline (100): the rest wait in the transaction's own queue.
          statements = Array.from({ length: 150 }, () =>
            t`select pg_sleep(0.02)`.execute().then(
              () => "ran",
              (err: unknown) => err,
            ),
          );
          return Promise.all(statements);
        })
        .catch((err: unknown) => err);
      await new Promise((resolve) => setTimeout(resolve, 100));
      proxy.refuse(true);
      const settledAll = Promise.all(statements).then(() => true);
      const timedOut = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5_000));
      expect(await Promise.race([settledAll, timedOut]), "every statement settles").toBe(true);
      const outcomes = await Promise.all(statements);
      expect(outcomes.filter((o) => o !== "ran").every((o) => isTransientDatabaseError(o))).toBe(true);
      expect(isTransientDatabaseError(await transaction)).toBe(true);
      // Back: the pool works on.
      proxy.refuse(false);
      expect((await sql`select 3 as n`)[0]?.n).toBe(3);
    } finally {
      proxy.refuse(false);
      await sql.end({ timeout: 5 });
    }
  });

  it("while it starts up: fails the query transiently or reconnects; no rejection goes unhandled", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    const sql = postgres(proxy.url, { max: 1, onnotice: () => {} });
    try {
      const lostBefore = proxy.lost();
      // The first connection's array-types statement: its reply lost, the connection reset.
      proxy.loseReplyTo("pg_catalog.pg_type", { reset: true });
      const first = await sql`select 1 as n`.then(
        (rows) => rows[0]?.n,
        (err: unknown) => err,
      );
      expect(proxy.lost()).toBe(lostBefore + 1);
      // Either the driver reconnected and answered, or it failed the query with an error to try again on.
      if (first !== 1) expect(isTransientDatabaseError(first)).toBe(true);
      // The pool works on.
      expect((await sql`select 2 as n`)[0]?.n).toBe(2);
      // A rejection nobody handled is reported after the microtasks of its turn.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
      await sql.end({ timeout: 5 });
    }
  });
});

describe("reconnecting after failed connections", () => {
  it("waits 25-50 ms at first, doubling, never more than 2 s", () => {
    for (let retries = 0; retries <= 40; retries++) {
      for (let i = 0; i < 20; i++) {
        const delay = reconnectDelaySeconds(retries);
        const ceiling = Math.min(0.05 * 2 ** retries, 2);
        expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
        expect(delay).toBeLessThanOrEqual(ceiling);
      }
    }
    expect(reconnectDelaySeconds(0)).toBeLessThanOrEqual(0.05);
    expect(reconnectDelaySeconds(1000)).toBeLessThanOrEqual(2);
  });
});
