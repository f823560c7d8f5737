/**
 * Durable commits on the embedded database (issue #33): with
 * EMBEDDED_DATABASE_DURABLE (the default) every committed write flushes the
 * WAL to disk — fs.fsyncSync on the segment, counted where the worker makes
 * it (src/db/syncing-nodefs.ts) — before the client gets the answer; reads
 * and statements inside a transaction flush nothing; with the setting off
 * nothing is ever flushed. The counts are read on the main thread the moment
 * the answer's bytes arrive, so a flush made after answering would not count.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { type PgliteThread, startPgliteThread } from "../../src/db/pglite-thread.js";

const root = mkdtempSync(join(tmpdir(), "sb-durable-"));
const template = join(root, "template");

beforeAll(async () => {
  const pg = await PGlite.create({ dataDir: template });
  await pg.exec("create table items (id int primary key, note text)");
  await pg.close();
}, 300_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * A client of the thread (as src/db/client.ts makes one) that notes the
 * thread's WAL flush count each time answer bytes reach the main thread.
 */
function client(thread: PgliteThread): { sql: postgres.Sql; walAtAnswers: number[] } {
  const walAtAnswers: number[] = [];
  const sql = postgres({
    socket: () => {
      const socket = thread.connect();
      socket.on("data", () => walAtAnswers.push(thread.syncs().wal));
      return socket;
    },
    max: 1,
    onnotice: () => {},
  } as never);
  return { sql, walAtAnswers };
}

/**
 * Runs `query`; returns the WAL flush count before it and when its answer
 * (the last bytes before the query settles: CommandComplete, ReadyForQuery)
 * reached the main thread. A prepared statement's earlier answers (its
 * description) come before it executes.
 */
async function observe(
  c: { walAtAnswers: number[] },
  thread: PgliteThread,
  query: () => Promise<unknown>,
): Promise<{ before: number; atAnswer: number }> {
  const before = thread.syncs().wal;
  const seen = c.walAtAnswers.length;
  await query();
  expect(c.walAtAnswers.length).toBeGreaterThan(seen);
  return { before, atAnswer: c.walAtAnswers.at(-1)! };
}

describe("durable commits (EMBEDDED_DATABASE_DURABLE=true, the default)", () => {
  let thread: PgliteThread;
  let c: ReturnType<typeof client>;

  beforeAll(async () => {
    thread = startPgliteThread(join(root, "durable"), template);
    await thread.ready;
    c = client(thread);
  }, 300_000);

  afterAll(async () => {
    await c?.sql.end({ timeout: 1 });
    await thread?.close();
  });

  it("runs PostgreSQL with fsync on and the WAL flushed by fsync()", async () => {
    expect(thread.durable).toBe(true);
    expect(await c.sql`show fsync`).toEqual([{ fsync: "on" }]);
    expect(await c.sql`show wal_sync_method`).toEqual([{ wal_sync_method: "fsync" }]);
    expect(await c.sql`show synchronous_commit`).toEqual([{ synchronous_commit: "on" }]);
  });

  it("flushes the WAL of each committed write before the write is answered", async () => {
    for (let i = 1; i <= 5; i++) {
      const { before, atAnswer } = await observe(
        c,
        thread,
        () => c.sql`insert into items values (${i}, 'x')`,
      );
      expect(atAnswer).toBeGreaterThan(before);
    }
    const updated = await observe(c, thread, () => c.sql`update items set note = 'y' where id = 1`);
    expect(updated.atAnswer).toBeGreaterThan(updated.before);
  });

  it("flushes a transaction once, at its commit, and not before", async () => {
    const before = thread.syncs().wal;
    const seen = c.walAtAnswers.length;
    let inside = -1;
    await c.sql.begin(async (tx) => {
      await tx`insert into items values (100, 'a')`;
      await tx`insert into items values (101, 'b')`;
      inside = thread.syncs().wal;
    });
    // BEGIN and the inserts were answered with nothing flushed; COMMIT (the
    // last answer) after the flush.
    expect(inside).toBe(before);
    const answers = c.walAtAnswers.slice(seen);
    expect(answers.length).toBeGreaterThanOrEqual(2);
    expect(answers.slice(0, -1).every((n) => n === before)).toBe(true);
    expect(answers.at(-1)).toBeGreaterThan(before);
  });

  it("flushes nothing for a read, or a rolled-back transaction", async () => {
    const read = await observe(c, thread, () => c.sql`select count(*) from items`);
    expect(read.atAnswer).toBe(read.before);
    const before = thread.syncs().wal;
    await expect(
      c.sql.begin(async (tx) => {
        await tx`insert into items values (200, 'z')`;
        throw new Error("rolled back");
      }),
    ).rejects.toThrow("rolled back");
    expect(thread.syncs().wal).toBe(before);
  });

  it("flushes the data files and directories at a checkpoint", async () => {
    const before = thread.syncs().other;
    await c.sql`checkpoint`;
    expect(thread.syncs().other).toBeGreaterThan(before);
  });
});

describe("without durability (EMBEDDED_DATABASE_DURABLE=false)", () => {
  it("never flushes: commits, transactions and checkpoints alike", async () => {
    const thread = startPgliteThread(join(root, "fast"), template, { durable: false });
    const c = client(thread);
    try {
      await thread.ready;
      expect(thread.durable).toBe(false);
      expect(await c.sql`show fsync`).toEqual([{ fsync: "off" }]);
      for (let i = 1; i <= 5; i++) await c.sql`insert into items values (${i}, 'x')`;
      await c.sql.begin(async (tx) => {
        await tx`insert into items values (100, 'a')`;
      });
      await c.sql`checkpoint`;
      expect(await c.sql`select count(*)::int as n from items`).toEqual([{ n: 6 }]);
      expect(thread.syncs()).toEqual({ wal: 0, other: 0 });
    } finally {
      await c.sql.end({ timeout: 1 });
      await thread.close();
    }
  }, 300_000);
});

describe("EMBEDDED_DATABASE_DURABLE", () => {
  it("is true by default, false when set so, and anything else is refused", () => {
    expect(loadConfig({}).embeddedDatabaseDurable).toBe(true);
    expect(loadConfig({ EMBEDDED_DATABASE_DURABLE: "true" }).embeddedDatabaseDurable).toBe(true);
    expect(loadConfig({ EMBEDDED_DATABASE_DURABLE: "false" }).embeddedDatabaseDurable).toBe(false);
    expect(loadConfig({ EMBEDDED_DATABASE_DURABLE: "0" }).embeddedDatabaseDurable).toBe(false);
    expect(() => loadConfig({ EMBEDDED_DATABASE_DURABLE: "sometimes" })).toThrow(ConfigError);
    expect(() => loadConfig({ EMBEDDED_DATABASE_DURABLE: "sometimes" })).toThrow(/EMBEDDED_DATABASE_DURABLE/);
  });
});
