/**
 * An interrupted first start on the embedded database (issue #33): the
 * process killed (SIGKILL) or stopped (SIGTERM) at many points of making
 * its data directory — driven deterministically, the copy paused after N
 * files by test/support/first-start.ts — and each time the next start opens
 * a working database holding the template and nothing else. Also: the
 * leftovers of interrupted creations are removed (only those whose process
 * is gone), and a data directory that cannot be opened is reported in the
 * log's JSON format, with what was found and what to do, and left as it is.
 */
import { spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, expect, it, onTestFinished } from "vitest";
import { type Database, openEmbedded } from "../../src/db/client.js";
import { resultRows } from "../../src/numbering/rows.js";
import { ensureBuilt } from "../support/build.js";
import { describeEmbedded } from "../support/db.js";
import { launch, type Proc } from "../support/process.js";

const root = mkdtempSync(join(tmpdir(), "sb-first-start-"));
const template = join(root, "template");
/** The number of files in the template: the copy's last step. */
let templateFiles = 0;

function countFiles(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    n += e.isDirectory() ? countFiles(join(dir, e.name)) : 1;
  }
  return n;
}

/** The rows of a query on the embedded database. */
async function rows(database: Database, query: ReturnType<typeof sql>): Promise<Record<string, unknown>[]> {
  return resultRows(await database.db.execute(query)) as Record<string, unknown>[];
}

/** The user tables of the database (schema public). */
async function tables(database: Database): Promise<string[]> {
  const found = await rows(
    database,
    sql`select tablename from pg_catalog.pg_tables where schemaname = 'public' order by tablename`,
  );
  return found.map((r) => String(r.tablename));
}

/** The service's first start under the fixture, with the embedded database in `dataDir`. */
function firstStart(dataDir: string, pauseAt: number | "complete"): Proc {
  return launch(process.execPath, ["--import", "tsx", "test/support/first-start.ts"], {
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    PORT: "0",
    LOG_LEVEL: "info",
    FIRST_START_TEMPLATE: template,
    FIRST_START_PAUSE_AT: String(pauseAt),
    EMBEDDED_DATABASE_DURABLE: "true",
  });
}

async function untilPaused(p: Proc): Promise<void> {
  for (let i = 0; i < 2400; i++) {
    if (p.output().includes("first-start: paused")) return;
    if (p.child.exitCode !== null)
      throw new Error(`the first start exited (${p.child.exitCode}):\n${p.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the first start never paused:\n${p.output()}`);
}

/** The next start (what the service's openDatabase does): a working database with the template's data only. */
async function expectNextStartWorks(dataDir: string): Promise<Database> {
  const database = await openEmbedded(join(dataDir, "pgdata"), template);
  try {
    expect(await tables(database)).toEqual(["marker"]);
    expect(await rows(database, sql`select note from marker`)).toEqual([{ note: "from the template" }]);
    // It takes writes, and keeps them.
    await database.db.execute(sql`create table after_restart (id int primary key)`);
    await database.db.execute(sql`insert into after_restart values (1)`);
    expect(await rows(database, sql`select count(*)::int as n from after_restart`)).toEqual([{ n: 1 }]);
    // Nothing of an interrupted creation is left beside it.
    expect(readdirSync(dataDir).filter((e) => e.startsWith("pgdata."))).toEqual([]);
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}

/** JSON log lines of a process's output. */
function logLines(output: string): { level: number; msg: string; [k: string]: unknown }[] {
  return output
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { level: number; msg: string });
}

beforeAll(async () => {
  // A template as the build makes one: a closed PGlite data directory.
  const pg = await PGlite.create({ dataDir: template });
  await pg.exec(
    "create table marker (note text primary key); insert into marker values ('from the template')",
  );
  await pg.close();
  templateFiles = countFiles(template);
}, 300_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describeEmbedded("a first start interrupted while it makes the embedded data directory", () => {
  // Points of the copy: its first files, the middle, the last file, and the
  // complete (flushed) directory before its rename.
  const points = (): (number | "complete")[] => [
    1,
    10,
    Math.floor(templateFiles / 2),
    templateFiles,
    "complete",
  ];

  it("killed (SIGKILL) at each point: the next start opens a working database with the template's data only", async () => {
    expect(templateFiles).toBeGreaterThan(100);
    for (const point of points()) {
      const dataDir = join(root, `killed-${point}`);
      const p = firstStart(dataDir, point);
      await untilPaused(p);
      // The data directory is not there yet: only the new one beside it.
      expect(existsSync(join(dataDir, "pgdata"))).toBe(false);
      expect(readdirSync(dataDir).filter((e) => e.startsWith("pgdata.creating-"))).toHaveLength(1);
      p.child.kill("SIGKILL");
      expect(await p.exited).toBeNull();
      const database = await expectNextStartWorks(dataDir);
      expect(database.created).toBe("template");
      expect(database.removed).toHaveLength(1);
      await database.close();
    }
  }, 900_000);

  it("stopped (SIGTERM) at points of the copy: it exits 0 and the next start opens a working database", async () => {
    for (const point of [1, Math.floor(templateFiles / 3), "complete" as const]) {
      const dataDir = join(root, `stopped-${point}`);
      const p = firstStart(dataDir, point);
      await untilPaused(p);
      p.child.kill("SIGTERM");
      expect(await p.exited).toBe(0);
      expect(p.output()).not.toContain('"switchboard listening"');
      const database = await expectNextStartWorks(dataDir);
      await database.close();
    }
  }, 600_000);

  it("killed once its data directory is in place: the next start opens it as it is", async () => {
    const dataDir = join(root, "in-place");
    // A first start that completes and is killed as soon as the database is open.
    const p = firstStart(dataDir, templateFiles + 1);
    for (let i = 0; i < 2400 && !p.output().includes('"database opened"'); i++) {
      if (p.child.exitCode !== null) throw new Error(`exited:\n${p.output()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    p.child.kill("SIGKILL");
    await p.exited;
    expect(existsSync(join(dataDir, "pgdata", "PG_VERSION"))).toBe(true);
    const database = await openEmbedded(join(dataDir, "pgdata"), template);
    try {
      expect(database.created).toBeUndefined();
      expect(await rows(database, sql`select note from marker`)).toEqual([{ note: "from the template" }]);
    } finally {
      await database.close();
    }
  }, 300_000);
});

describeEmbedded("the compiled service (dist/server.js) stopped at once on its first start", () => {
  beforeAll(ensureBuilt, 600_000);

  it("exits 0 on a SIGTERM as it makes its data directory, and the next start opens a working database", async () => {
    const dataDir = join(root, "compiled");
    const env = { DATA_DIR: dataDir, HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "info" };
    const p = launch(process.execPath, ["dist/server.js"], env);
    // As soon as its thread has begun to make the data directory (the signal
    // handlers are installed before it starts; a signal before any of the
    // service's code runs ends the process by Node's default, with nothing made).
    const begun = () =>
      existsSync(dataDir) &&
      readdirSync(dataDir).some((e) => e.startsWith("pgdata.creating-") || e === "pgdata");
    for (let i = 0; i < 6000 && !begun(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(begun()).toBe(true);
    p.child.kill("SIGTERM");
    expect(await p.exited, p.output()).toBe(0);
    const next = launch(process.execPath, ["dist/server.js"], env);
    try {
      for (let i = 0; i < 2400 && !next.output().includes('"switchboard listening"'); i++) {
        if (next.child.exitCode !== null) throw new Error(`the next start exited:\n${next.output()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(next.output()).toContain('"switchboard listening"');
      expect(readdirSync(dataDir).filter((e) => e.startsWith("pgdata."))).toEqual([]);
      // Up for a moment, no change listener complains: no LISTEN is tried on the embedded
      // database's one session. (Other warnings may come: the removal of what the stop left.)
      await new Promise((r) => setTimeout(r, 1500));
      const warnings = logLines(next.output()).filter((l) => l.level >= 40 && /listener/i.test(l.msg));
      expect(warnings.map((l) => l.msg)).toEqual([]);
    } finally {
      next.child.kill("SIGTERM");
      await next.exited;
    }
  }, 300_000);
});

describeEmbedded("leftovers of interrupted creations", () => {
  it("are removed at the next start when their process is gone, and left alone while it runs", async () => {
    const dataDir = join(root, "leftovers");
    mkdirSync(dataDir);
    // A pid that was a process and is no more.
    const gone = spawn(process.execPath, ["-e", ""]);
    await new Promise((r) => gone.once("exit", r));
    const dead = join(dataDir, `pgdata.creating-${gone.pid}-0badf00d`);
    cpSync(template, dead, { recursive: true });
    rmSync(join(dead, "global"), { recursive: true });
    // A process that is alive: its creation is another start at work.
    const other = spawn(process.execPath, ["-e", "setTimeout(() => {}, 600000)"]);
    onTestFinished(() => {
      other.kill("SIGKILL");
    });
    const running = join(dataDir, `pgdata.creating-${other.pid}-0000cafe`);
    mkdirSync(running);
    writeFileSync(join(running, "PG_VERSION"), "18\n");
    // Not a leftover: another name.
    const backup = join(dataDir, "pgdata.backup");
    mkdirSync(backup);

    const database = await openEmbedded(join(dataDir, "pgdata"), template);
    try {
      expect(database.created).toBe("template");
      expect(database.removed).toEqual([dead]);
      expect(await tables(database)).toEqual(["marker"]);
    } finally {
      await database.close();
    }
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(running)).toBe(true);
    expect(existsSync(backup)).toBe(true);
    // Once that process is gone, its creation is a leftover too.
    const otherExited = new Promise((r) => other.once("exit", r));
    other.kill("SIGKILL");
    await otherExited;
    const again = await openEmbedded(join(dataDir, "pgdata"), template);
    try {
      expect(again.created).toBeUndefined();
      expect(again.removed).toEqual([running]);
      expect(await tables(again)).toEqual(["marker"]);
    } finally {
      await again.close();
    }
    expect(existsSync(running)).toBe(false);
    expect(existsSync(backup)).toBe(true);
  }, 300_000);
});

describeEmbedded("a data directory that cannot be opened", () => {
  /** The service started on `dataDir` (not the fixture: no pause, no template). */
  function start(dataDir: string): Proc {
    return launch(process.execPath, ["--import", "tsx", "src/start.ts"], {
      DATA_DIR: dataDir,
      HOST: "127.0.0.1",
      PORT: "0",
      LOG_LEVEL: "info",
    });
  }

  async function expectReported(dataDir: string, found: RegExp): Promise<void> {
    const pgdata = join(dataDir, "pgdata");
    // PostgreSQL's own lock file aside (it writes one as it starts).
    const entries = () =>
      readdirSync(pgdata)
        .filter((e) => e !== "postmaster.pid")
        .sort();
    const before = entries();
    const p = start(dataDir);
    expect(await p.exited).toBe(1);
    const lines = logLines(p.output());
    const line = lines.find((l) => l.msg === "the embedded database's data directory cannot be opened");
    expect(line, p.output()).toBeDefined();
    expect(line?.level).toBe(60);
    expect(line?.dataDir).toBe(pgdata);
    expect(String(line?.found)).toMatch(found);
    expect(String(line?.remedy)).toContain(`mv ${pgdata} ${pgdata}.broken`);
    // Every line of the output is JSON (the log's format), and nothing was deleted.
    for (const l of p.output().split("\n").filter(Boolean)) expect(() => JSON.parse(l), l).not.toThrow();
    expect(entries()).toEqual(before);
  }

  it("half-copied, as an older version's interrupted first start left it: says what is missing and what to do, exits 1", async () => {
    const dataDir = join(root, "half-copied");
    const pgdata = join(dataDir, "pgdata");
    mkdirSync(pgdata, { recursive: true });
    for (const entry of ["PG_VERSION", "base", "postgresql.conf"]) {
      cpSync(join(template, entry), join(pgdata, entry), { recursive: true });
    }
    await expectReported(
      dataDir,
      /incomplete PostgreSQL data directory \(global\/pg_control, pg_wal, pg_xact missing\)/,
    );
  }, 300_000);

  it("something else than a data directory: says what it holds, exits 1", async () => {
    const dataDir = join(root, "not-a-database");
    mkdirSync(join(dataDir, "pgdata"), { recursive: true });
    writeFileSync(join(dataDir, "pgdata", "notes.txt"), "mine\n");
    await expectReported(dataDir, /holds no PostgreSQL data directory.*holds: notes\.txt/);
    expect(readFileSync(join(dataDir, "pgdata", "notes.txt"), "utf8")).toBe("mine\n");
  }, 300_000);

  it("complete but damaged (pg_control emptied): says PostgreSQL could not open it, exits 1", async () => {
    const dataDir = join(root, "damaged");
    const pgdata = join(dataDir, "pgdata");
    mkdirSync(dataDir);
    cpSync(template, pgdata, { recursive: true });
    truncateSync(join(pgdata, "global", "pg_control"), 0);
    await expectReported(dataDir, /PostgreSQL \(the directory is of PostgreSQL \d+\) could not open it/);
  }, 300_000);
});
