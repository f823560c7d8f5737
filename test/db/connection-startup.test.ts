/**
 * A connection lost while it starts up fails (or retries) the query that
 * opened it, and nothing else: no unhandled rejection.
 *
 * postgres.js 3.4.9 reads the database's array types as the first statement
 * of every new connection (`fetch_types`, on by default) and drops that
 * statement's promise (porsager/postgres#1192, #1205, #1223; open). When
 * the connection failed during it — the database restarting, a network
 * blip — the rejection was unhandled, and the service's process exits on
 * one (src/process-errors.ts): a short database outage killed the server.
 * `scripts/patches/postgres+3.4.9.patch` handles it; the connection then
 * closes and reconnects as for any other lost connection.
 *
 * Real parts: PostgreSQL behind a TCP proxy that swallows the reply to the
 * array-types statement and drops the connection (test/support/pg-proxy.ts).
 */
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reconnectDelaySeconds } from "../../src/db/client.js";
import { isTransientDatabaseError } from "../../src/db/transient.js";
import { createScratchDatabase } from "../support/db.js";
import { type PgProxy, startPgProxy } from "../support/pg-proxy.js";

describe.runIf(process.env.TEST_DATABASE_URL)("a connection lost while it starts up", () => {
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

  it("fails the query transiently or reconnects; no rejection goes unhandled", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    const sql = postgres(proxy.url, { max: 1, onnotice: () => {} });
    try {
      // The first connection's array-types statement: its reply lost, the connection reset.
      proxy.loseReplyTo("pg_catalog.pg_type", { reset: true });
      const first = await sql`select 1 as n`.then(
        (rows) => rows[0]?.n,
        (err: unknown) => err,
      );
      expect(proxy.lost()).toBe(1);
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
