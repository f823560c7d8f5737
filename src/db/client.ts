/**
 * The database: PGlite (embedded PostgreSQL, in `config.dataDir`) when no
 * `DATABASE_URL` is configured, otherwise a PostgreSQL server through the
 * `postgres` driver. Both are exposed as one drizzle type, `Db`, so
 * repositories never know which one they run on.
 *
 * Rules for code using a `Db`:
 * - Inside `db.transaction(async (tx) => ...)` use `tx` only: PGlite has a
 *   single connection and a query on the outer `db` deadlocks.
 * - Write SQL both PostgreSQL 15 and PGlite (PostgreSQL 18) accept.
 */
import { fileURLToPath } from "node:url";
import { is } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from "drizzle-orm/pg-core";
import type { PgliteDatabase } from "drizzle-orm/pglite";
import { drizzle as drizzlePostgres, PostgresJsDatabase } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import type { ExtractTablesWithRelations } from "drizzle-orm/relations";
import postgres from "postgres";
import type { Config } from "../config.js";
import { embeddedTemplateDir } from "./embedded-template.js";
import { LANES, useGroupCommit } from "./group-commit.js";
import { embeddedDataDir } from "./location.js";
import { adoptPgliteThread, startPgliteThread } from "./pglite-thread.js";
import { postgresArgs } from "./postgres-url.js";
import * as schema from "./schema/index.js";

export type Schema = typeof schema;

/** A drizzle database on either backend. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;

/** The `tx` of `db.transaction(async (tx) => ...)`. */
export type Tx = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;

/** Either a database or a transaction: what repositories are built on. */
export type DbOrTx = Db | Tx;

export type Driver = "pglite" | "postgres";

/** An open database and how to release it. */
export interface Database {
  db: Db;
  driver: Driver;
  /** Applies every pending migration (idempotent). */
  migrate(): Promise<void>;
  /** Closes the connection(s). */
  close(): Promise<void>;
  /** The embedded database's data directory, when this open created it: from the build's template, or by initdb. */
  created?: "template" | "initdb";
  /** The embedded database: what interrupted first starts had left, removed by this open. */
  removed?: string[];
}

/** Where drizzle-kit writes migrations (`npm run db:generate`); shipped with the sources. */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL("./migrations", import.meta.url));

/** Key of the advisory lock that serialises migrations of replicas starting together. */
const MIGRATION_LOCK_KEY = 0x5b0a4d;

/** Limits on a PostgreSQL server's work and on the wait for its replies, in ms; 0: none (config.ts). */
export interface DatabaseTimeouts {
  /** The session's `statement_timeout`. */
  statementMs: number;
  /** The session's `idle_in_transaction_session_timeout`. */
  idleInTransactionMs: number;
  /** The driver's `reply_timeout` (scripts/patches/postgres+3.4.9.patch, porsager/postgres#1089). */
  replyMs: number;
  /**
   * The driver's `connect_timeout`: a connection's startup, and the pool's
   * run of failed startups a query may wait through (the patch, #1193).
   */
  connectMs: number;
}

/** Opens the database `config` names. Does not migrate: call `migrate()`. */
export async function openDatabase(
  config: Pick<Config, "databaseUrl" | "dataDir"> &
    Partial<Pick<Config, "databaseTimeouts" | "embeddedDatabaseDurable">>,
): Promise<Database> {
  if (config.databaseUrl === undefined) {
    return openEmbedded(embeddedDataDir(config.dataDir), embeddedTemplateDir(), {
      durable: config.embeddedDatabaseDurable ?? true,
    });
  }
  return openPostgres(config.databaseUrl, config.databaseTimeouts);
}

/**
 * The embedded database: PGlite in a worker thread (src/db/pglite-thread.ts;
 * the one started ahead of the imports when there is one), driven through
 * the same `postgres` client as a server, over one connection (PGlite has a
 * single session). A first start copies the build's template into a new
 * data directory rather than running initdb (src/db/embedded-data-dir.ts).
 * `durable` (default true): commits are on disk before they are acknowledged.
 */
export async function openEmbedded(
  dataDir: string,
  template = embeddedTemplateDir(),
  embedded: { durable?: boolean } = {},
): Promise<Database> {
  // The thread src/start.ts started read EMBEDDED_DATABASE_DURABLE as config.ts does.
  const thread =
    adoptPgliteThread(dataDir) ?? startPgliteThread(dataDir, template, { durable: embedded.durable ?? true });
  let created: "template" | "initdb" | undefined;
  let removed: string[];
  try {
    ({ created, removed } = await thread.ready);
  } catch (err) {
    await thread.close();
    throw err;
  }
  const options = {
    // A documented option its type definitions leave out: the stream to use instead of a TCP socket.
    socket: () => thread.connect(),
    max: 1,
    // One long-lived connection: never closed for idleness or age.
    idle_timeout: 0,
    max_lifetime: 0,
    user: "postgres",
    database: "postgres",
    onnotice: () => {},
  };
  const client = postgres(options as postgres.Options<Record<string, postgres.PostgresType>>);
  const db = drizzlePostgres({ client, schema });
  const database: Database = {
    db: db as unknown as Db,
    driver: "pglite",
    migrate: () => migratePostgres(db, { migrationsFolder: MIGRATIONS_FOLDER }),
    close: async () => {
      await client.end({ timeout: 5 });
      await thread.close();
    },
  };
  if (created !== undefined) database.created = created;
  if (removed.length > 0) database.removed = removed;
  return database;
}

/**
 * Seconds a pool connection waits before connecting again after `retries`
 * failed connections in a row: 25-50 ms, doubling, up to 1-2 s (jittered).
 * postgres.js's default triples up to 10-20 s, so a pool that had seen a
 * few seconds' outage stayed away for up to 20 s after the database was
 * back. Ten connections trying every 2 s at most is no load on a database
 * that is down.
 */
export function reconnectDelaySeconds(retries: number): number {
  return (0.5 + Math.random() / 2) * Math.min(0.05 * 2 ** retries, 2);
}

/**
 * A Database over a PostgreSQL server; `timeouts` unset: the server's own
 * settings and no reply timeout (tests).
 */
export function openPostgres(url: string, timeouts?: DatabaseTimeouts): Database {
  const options = {
    onnotice: () => {},
    backoff: reconnectDelaySeconds,
    ...(timeouts && sessionLimits(url, timeouts)),
  } as postgres.Options<Record<string, postgres.PostgresType>>;
  const client = postgres(...postgresArgs(url, { ...options, max: 10 }));
  // The call engine's writes, committed in groups on connections of their own (group-commit.ts).
  const writer = postgres(...postgresArgs(url, { ...options, max: LANES }));
  const db = drizzlePostgres({ client, schema });
  useGroupCommit(db, writer);
  return {
    db: db as unknown as Db,
    driver: "postgres",
    migrate: () => migratePostgresLocked(url),
    close: async () => {
      await Promise.all([client.end({ timeout: 5 }), writer.end({ timeout: 5 })]);
    },
  };
}

/**
 * The driver options that carry `timeouts`: two session parameters sent at
 * connect (DATABASE_URL's query, applied after them, wins), the patch's
 * `reply_timeout` and `connect_timeout`, in seconds (a `connect_timeout` in
 * DATABASE_URL's query wins: the driver would take ours over it). The
 * migration's own connection has none: a migration may rightly take long,
 * or wait for another replica's.
 */
export function sessionLimits(url: string, timeouts: DatabaseTimeouts) {
  // Not `new URL`: a multi-host DATABASE_URL (postgres://a:5432,b:5432/db) is not a WHATWG URL.
  const urlConnectTimeout = /[?&]connect_timeout=/.test(url);
  return {
    connection: {
      statement_timeout: timeouts.statementMs,
      idle_in_transaction_session_timeout: timeouts.idleInTransactionMs,
    },
    reply_timeout: timeouts.replyMs / 1000,
    ...(urlConnectTimeout ? {} : { connect_timeout: timeouts.connectMs / 1000 }),
  };
}

/**
 * Applies the migrations of `db`, whichever driver it was opened with
 * (idempotent). Prefer `Database.migrate()`, which on PostgreSQL also
 * serialises replicas starting together.
 */
export async function migrateDb(db: Db): Promise<void> {
  // drizzle's PGlite driver (and PGlite with it) is loaded only for a
  // database opened in this thread (see pglite-direct.ts), never by the service.
  if (!is(db, PostgresJsDatabase)) {
    const [{ PgliteDatabase }, { migrate }] = await Promise.all([
      import("drizzle-orm/pglite"),
      import("drizzle-orm/pglite/migrator"),
    ]);
    if (is(db, PgliteDatabase)) {
      await migrate(db as unknown as PgliteDatabase<Schema>, { migrationsFolder: MIGRATIONS_FOLDER });
      return;
    }
  }
  await migratePostgres(db as unknown as PostgresJsDatabase<Schema>, { migrationsFolder: MIGRATIONS_FOLDER });
}

/**
 * drizzle's migrator is not safe against several replicas starting at once.
 * A session-level advisory lock on a one-connection client (so every query
 * of the migration runs in the session holding the lock) makes the others
 * wait and then find nothing left to apply.
 */
async function migratePostgresLocked(url: string): Promise<void> {
  const client = postgres(...postgresArgs(url, { max: 1, onnotice: () => {} }));
  try {
    await client`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`;
    await migratePostgres(drizzlePostgres({ client, schema }), { migrationsFolder: MIGRATIONS_FOLDER });
    await client`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`;
  } finally {
    // Ending the session also releases the lock if the migration failed.
    await client.end({ timeout: 5 });
  }
}

/**
 * Whether `err` (or its cause: drizzle wraps driver errors) is a unique
 * violation, optionally of the named constraint or index.
 */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === "object" && depth < 5; depth++) {
    const fields = e as { code?: unknown; constraint?: unknown; constraint_name?: unknown; cause?: unknown };
    if (fields.code === "23505") {
      if (constraint === undefined) return true;
      return fields.constraint === constraint || fields.constraint_name === constraint;
    }
    e = fields.cause;
  }
  return false;
}
