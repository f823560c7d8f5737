/**
 * The databases every persistence test runs against: PGlite always, and
 * PostgreSQL when TEST_DATABASE_URL is set (an admin URL; each test file gets
 * its own freshly created database there, so parallel runs never collide).
 *
 *   describe.each(testDatabases())("Unsubscribers on $name", (backend) => {
 *     const database = useTestDatabase(backend);
 *     ...database.db...
 *   });
 *
 * PGlite: a fresh instance takes seconds (initdb), so each vitest worker
 * creates ONE migrated template, kept on globalThis (it survives from file
 * to file while the worker does, see vitest.config.ts), and every test file
 * gets a `clone()` of it.
 */
import { randomBytes } from "node:crypto";
import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import { afterAll, beforeAll, describe } from "vitest";
import { type Db, type Driver, openPostgres } from "../../src/db/client.js";
import { wrapPglite } from "../../src/db/pglite-direct.js";

export interface TestDatabase {
  db: Db;
  /** PostgreSQL: the database's URL, for a second process or pool on it (replicas). */
  url?: string;
  close(): Promise<void>;
}

export interface TestBackend {
  name: Driver;
  /** A migrated database of its own for the calling test file. */
  open(): Promise<TestDatabase>;
}

const TEMPLATE = Symbol.for("switchboard.test.pgliteTemplate");

function pgliteTemplate(): Promise<PGlite> {
  const g = globalThis as { [TEMPLATE]?: Promise<PGlite> };
  g[TEMPLATE] ??= (async () => {
    const template = await PGlite.create();
    await wrapPglite(template).migrate();
    return template;
  })();
  return g[TEMPLATE];
}

/**
 * PGlite alone: for tests about something other than storage (transports,
 * say) that still need a database, since build() always uses one.
 */
export const pglite: TestBackend = {
  name: "pglite",
  async open() {
    const clone = (await (await pgliteTemplate()).clone()) as PGlite;
    const database = wrapPglite(clone);
    return { db: database.db, close: database.close };
  },
};

/** A freshly created, empty PostgreSQL database next to the one `adminUrl` names. */
export async function createScratchDatabase(
  adminUrl: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = () => postgres(adminUrl, { max: 1, onnotice: () => {} });
  const name = `sb_test_${randomBytes(8).toString("hex")}`;
  const sql = admin();
  try {
    await sql.unsafe(`create database "${name}"`);
  } finally {
    await sql.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const sql = admin();
      try {
        await sql.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await sql.end();
      }
    },
  };
}

function postgresBackend(adminUrl: string): TestBackend {
  return {
    name: "postgres",
    async open() {
      const scratch = await createScratchDatabase(adminUrl);
      const database = openPostgres(scratch.url);
      try {
        await database.migrate();
      } catch (err) {
        await database.close();
        await scratch.drop();
        throw err;
      }
      return {
        db: database.db,
        url: scratch.url,
        async close() {
          await database.close();
          await scratch.drop();
        },
      };
    },
  };
}

/**
 * The backends to run against: PGlite, plus PostgreSQL when TEST_DATABASE_URL
 * is set. TEST_BACKENDS=postgres leaves PGlite out (CI's second run, after a
 * run on PGlite alone: .ci/run).
 */
export function testDatabases(): TestBackend[] {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) return [pglite];
  const postgres = postgresBackend(url);
  return process.env.TEST_BACKENDS === "postgres" ? [postgres] : [pglite, postgres];
}

/** The PostgreSQL backend (TEST_DATABASE_URL set), or undefined on a machine without one. */
export function postgresTestBackend(): TestBackend | undefined {
  return testDatabases().find((b) => b.name === "postgres");
}

/** Why a PostgreSQL-only suite did not run, in its name, so a run without PostgreSQL reports it. */
export const NEEDS_POSTGRES = "(skipped: needs PostgreSQL, set TEST_DATABASE_URL)";

/**
 * A describe block that needs a PostgreSQL server (a second pool, a proxy in
 * front of the server, a second process). With TEST_DATABASE_URL it runs;
 * without it, it is registered skipped with the reason in its name, so the
 * file still has a suite (vitest fails a file with none) and the README's
 * plain `npm test` says what it left out.
 */
export function describePostgres(name: string, fn: () => void): void {
  if (process.env.TEST_DATABASE_URL) describe(name, fn);
  else describe.skip(`${name} ${NEEDS_POSTGRES}`, fn);
}

/** Why a suite about the embedded database did not run in CI's PostgreSQL run. */
export const EMBEDDED_RAN_ALREADY =
  "(skipped: the embedded database's own suite, run without TEST_BACKENDS=postgres)";

/**
 * A describe block about the embedded database itself (its first start, its
 * thread, the README's session on it), which does not change with
 * TEST_DATABASE_URL: it runs, but under TEST_BACKENDS=postgres (CI's second
 * run, after a run on the embedded database alone: .ci/run), where it would
 * only run the same thing again, it is registered skipped with the reason.
 */
export function describeEmbedded(name: string, fn: () => void): void {
  if (process.env.TEST_BACKENDS === "postgres") describe.skip(`${name} ${EMBEDDED_RAN_ALREADY}`, fn);
  else describe(name, fn);
}

/** Opens a database of `backend` for the enclosing describe block and closes it after. */
export function useTestDatabase(backend: TestBackend): { readonly db: Db; readonly url: string | undefined } {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await backend.open();
  }, 120_000);
  afterAll(async () => {
    await database?.close();
  });
  return {
    get db() {
      if (database === undefined) throw new Error("the test database is not open yet (use it inside tests)");
      return database.db;
    },
    get url() {
      return database?.url;
    },
  };
}
