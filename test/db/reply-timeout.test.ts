/**
 * A connection that stops answering without closing (a half-open TCP
 * connection: the database's host gone, a network partition, a proxy that
 * lost its upstream) fails its queries after the reply timeout instead of
 * leaving them waiting for ever (porsager/postgres#1089, open; the
 * `reply_timeout` option of `scripts/patches/postgres+3.4.9.patch`). The
 * connection is destroyed and the pool connects again; idle connections,
 * and a LISTEN connection waiting for notifications, are left alone.
 *
 * Real parts: PostgreSQL behind a TCP proxy that stops passing the server's
 * bytes at a chosen statement and keeps the connection open
 * (test/support/pg-proxy.ts).
 */
import postgres from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import { transientDatabaseError } from "../../src/db/transient.js";
import { createScratchDatabase, describePostgres } from "../support/db.js";
import { type PgProxy, startPgProxy } from "../support/pg-proxy.js";

/** The options postgres.js takes with the patch (its type definitions do not list it). */
type Options = postgres.Options<Record<string, postgres.PostgresType>> & { reply_timeout?: number };

const REPLY_TIMEOUT_S = 0.3;

describePostgres("a connection that stops answering (PostgreSQL)", () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let proxy: PgProxy;
  const clients: postgres.Sql[] = [];

  function connect(options: Options = {}): postgres.Sql {
    const sql = postgres(proxy.url, {
      max: 1,
      onnotice: () => {},
      reply_timeout: REPLY_TIMEOUT_S,
      ...options,
    } as Options);
    clients.push(sql);
    return sql;
  }

  /** The backend process serving `sql`'s (one) connection. */
  async function pidOf(sql: postgres.Sql): Promise<number> {
    const [row] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
    return row!.pid;
  }

  /** How `work` failed (its error's code) and after how many ms; "settled" if it did not fail within `ms`. */
  async function failure(
    work: Promise<unknown>,
    ms = 10_000,
  ): Promise<{ code: unknown; afterMs: number; err: unknown }> {
    const t0 = performance.now();
    const outcome = await Promise.race([
      work.then(
        () => ({ code: "settled", err: undefined }),
        (err: unknown) => ({ code: (err as { code?: unknown }).code, err }),
      ),
      new Promise<{ code: string; err: undefined }>((r) =>
        setTimeout(() => r({ code: "pending", err: undefined }), ms),
      ),
    ]);
    return { ...outcome, afterMs: performance.now() - t0 };
  }

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
    proxy = await startPgProxy(scratch.url);
  });
  afterAll(async () => {
    for (const sql of clients) await sql.end({ timeout: 1 }).catch(() => {});
    await proxy?.close();
    await scratch?.drop();
  });

  it("a statement whose reply never comes fails REPLY_TIMEOUT (unavailable), and the next one runs on a new connection", async () => {
    const sql = connect();
    const before = await pidOf(sql);
    proxy.stall("stalled-single");
    const { code, afterMs, err } = await failure(sql`select ${"stalled-single"}::text as mark`);
    expect(code).toBe("REPLY_TIMEOUT");
    expect(transientDatabaseError(err)).toBe("unavailable");
    // Not at the first tick, and long before TCP would notice (minutes).
    expect(afterMs).toBeGreaterThanOrEqual(REPLY_TIMEOUT_S * 1000 - 20);
    const after = await pidOf(sql);
    expect(after).not.toBe(before);
  });

  it("pipelined statements: the ones answered before the silence resolve, the rest fail", async () => {
    const sql = connect();
    const first = (mark: string) => sql`select ${mark}::text as mark`;
    const second = () => sql`select pg_sleep(0.05), 2 as n`;
    const third = () => sql`select 3 as n`;
    // Prepared on this connection first, so that the three below are written at once, in one
    // chunk (a new statement's Bind would be written only after its description came back).
    await Promise.all([first("warm-up"), second(), third()]);
    proxy.stall("stalled-pipelined", { afterReady: 1 });
    // The first is answered, then the server's bytes stop.
    const [a, b, c] = await Promise.all([
      failure(first("stalled-pipelined")),
      failure(second()),
      failure(third()),
    ]);
    expect(a.code).toBe("settled");
    expect(b.code).toBe("REPLY_TIMEOUT");
    expect(c.code).toBe("REPLY_TIMEOUT");
    expect(await sql`select 4 as n`).toEqual([{ n: 4 }]);
  });

  it("pipelined statements that keep being answered are not cut off, however long they take together", async () => {
    const sql = connect({ reply_timeout: 1 });
    await sql`select 1`;
    // Each answered 0.3 s after the one before, well within the timeout; together 1.5 timeouts.
    const each = 0.3;
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, (_, i) => failure(sql`select pg_sleep(${each}), ${i}::int as n`)),
    );
    expect(outcomes.map((o) => o.code)).toEqual(Array(5).fill("settled"));
  });

  it("a transaction whose statement is never answered fails, and the next transaction commits", async () => {
    const sql = connect();
    await sql`create table if not exists marks (mark text)`;
    proxy.stall("stalled-in-tx");
    const { code } = await failure(
      sql.begin(async (tx) => {
        await tx`insert into marks values (${"before-stall"})`;
        await tx`insert into marks values (${"stalled-in-tx"})`;
      }),
    );
    expect(code).toBe("REPLY_TIMEOUT");
    await sql.begin((tx) => tx`insert into marks values (${"after"})`);
    // The server rolled the stalled transaction back when its connection closed.
    const direct = postgres(scratch.url, { max: 1, onnotice: () => {} });
    clients.push(direct);
    let marks: string[] = [];
    for (let i = 0; i < 100; i++) {
      marks = (await direct`select mark from marks order by mark`).map((r) => r.mark as string);
      const [idle] = await direct<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
        where state like 'idle in transaction%' and datname = current_database()`;
      if (idle?.n === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(marks).toEqual(["after"]);
  });

  it("an idle connection, and a LISTEN connection waiting for notifications, are left open", async () => {
    let closes = 0;
    const sql = connect({ onclose: () => closes++ });
    const before = await pidOf(sql);
    const heard: string[] = [];
    await sql.listen("reply_timeout_test", (payload) => heard.push(payload));
    const direct = postgres(scratch.url, { max: 1, onnotice: () => {} });
    clients.push(direct);
    const listener = () =>
      direct`select pid from pg_stat_activity where datname = current_database() and query like 'listen%reply_timeout_test%'`;
    const [listening] = await listener();
    expect(listening).toBeDefined();
    await new Promise((r) => setTimeout(r, REPLY_TIMEOUT_S * 1000 * 3));
    const after = await pidOf(sql);
    expect(after).toBe(before);
    expect((await listener()).map((r) => r.pid)).toEqual([listening?.pid]);
    await sql.notify("reply_timeout_test", "still listening");
    for (let i = 0; i < 100 && heard.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(heard).toEqual(["still listening"]);
    expect(closes).toBe(0);
  });

  it("without reply_timeout a statement whose reply never comes keeps waiting (what the patch changes)", async () => {
    const sql = connect({ reply_timeout: 0 });
    await sql`select 1`;
    proxy.stall("stalled-no-timeout");
    const { code } = await failure(
      sql`select ${"stalled-no-timeout"}::text as mark`,
      REPLY_TIMEOUT_S * 1000 * 5,
    );
    expect(code).toBe("pending");
  });
});
