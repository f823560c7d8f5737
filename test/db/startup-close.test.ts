/**
 * A server that accepts connections and closes them cleanly before they
 * are ready (a proxy or load balancer in front of a database that is down:
 * the Cloud SQL proxy, a Kubernetes port-forward, HAProxy without a
 * backend). postgres.js tried again at once, for ever, and the query
 * waited all along (porsager/postgres#1193, open). With the patch
 * (`scripts/patches/postgres+3.4.9.patch`) the attempts back off, the query
 * fails CONNECTION_CLOSED (UNAVAILABLE to callers) once the pool's have
 * taken connect_timeout, later queries (on any connection of the pool) fail
 * after one attempt each until the database is back, and once a connection
 * got through the budget is whole again.
 *
 * Real parts: PostgreSQL behind a TCP proxy that accepts and closes every
 * connection while the test says so (test/support/pg-proxy.ts).
 */
import postgres from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import { transientDatabaseError } from "../../src/db/transient.js";
import { describePostgres } from "../support/db.js";
import { type PgProxy, startPgProxy } from "../support/pg-proxy.js";

const CONNECT_TIMEOUT_S = 1;

describePostgres("a server that closes connections before they are ready", () => {
  let proxy: PgProxy;
  let sql: postgres.Sql;
  beforeAll(async () => {
    proxy = await startPgProxy(process.env.TEST_DATABASE_URL!);
    sql = postgres(proxy.url, {
      max: 3,
      onnotice: () => {},
      connect_timeout: CONNECT_TIMEOUT_S,
      // The service's backoff (src/db/client.ts): 25 ms doubling, up to 2 s.
      backoff: (n: number) => Math.min(0.025 * 2 ** n, 2),
    });
  });
  afterAll(async () => {
    proxy?.refuse(false);
    await sql?.end({ timeout: 1 });
    await proxy?.close();
  });

  /** How `work` ended, and after how many ms (up to `ms`: "pending"). */
  async function outcome(work: Promise<unknown>, ms = 10_000): Promise<{ code: unknown; afterMs: number }> {
    const t0 = performance.now();
    const code = await Promise.race([
      work.then(
        () => "settled",
        (err: unknown) => (err as { code?: unknown }).code,
      ),
      new Promise((r) => setTimeout(() => r("pending"), ms)),
    ]);
    return { code, afterMs: performance.now() - t0 };
  }

  it("fails the query CONNECTION_CLOSED after connect_timeout, backing off meanwhile, then one attempt per query", async () => {
    await sql`select 1`;
    proxy.refuse(true);
    const before = proxy.accepted();
    // The open connection is dropped: its next query starts a run of attempts.
    await sql`select 1`.catch(() => {});
    const first = await outcome(sql`select 1`);
    expect(first.code).toBe("CONNECTION_CLOSED");
    expect(first.afterMs).toBeLessThan(5_000);
    // Backed off: a handful of attempts, not thousands.
    expect(proxy.accepted() - before).toBeLessThan(40);
    expect(transientDatabaseError(Object.assign(new Error("x"), { code: first.code }))).toBe("unavailable");

    // Until one attempt gets through, each query has one, whichever connection it goes to.
    const attempts = proxy.accepted();
    const more = await Promise.all([outcome(sql`select 1`), outcome(sql`select 2`), outcome(sql`select 3`)]);
    expect(more.map((m) => m.code)).toEqual(["CONNECTION_CLOSED", "CONNECTION_CLOSED", "CONNECTION_CLOSED"]);
    expect(proxy.accepted() - attempts).toBe(3);
  });

  it("answers once the database is back, and a new outage shorter than connect_timeout is waited out", async () => {
    proxy.refuse(false);
    expect((await outcome(sql`select 2 as n`)).code).toBe("settled");
    proxy.refuse(true);
    await sql`select 1`.catch(() => {});
    const before = proxy.accepted();
    const waited = outcome(sql`select 3 as n`);
    // Its first attempt is closed (a new run: the last one ended when a connection got through).
    for (let i = 0; i < 200 && proxy.accepted() === before; i++) await new Promise((r) => setTimeout(r, 10));
    expect(proxy.accepted()).toBeGreaterThan(before);
    proxy.refuse(false);
    expect((await waited).code).toBe("settled");
  });
});
