/**
 * Where the database is, from the environment: a PostgreSQL server
 * (`DATABASE_URL`) or the embedded database in `DATA_DIR`. Kept apart from
 * src/config.ts so that the process entry (src/start.ts) can start the
 * embedded database before the rest of the service is loaded.
 */
import { join, resolve } from "node:path";

/** DATABASE_URL: unset (or empty) means the embedded database. */
export function databaseUrlFrom(env: NodeJS.ProcessEnv): string | undefined {
  return env.DATABASE_URL || undefined;
}

/** DATA_DIR, absolute: default `./data`. */
export function dataDirFrom(env: NodeJS.ProcessEnv): string {
  return resolve(env.DATA_DIR || "./data");
}

/** The PostgreSQL data directory of the embedded database, inside `DATA_DIR`. */
export function embeddedDataDir(dataDir: string): string {
  return join(dataDir, "pgdata");
}

/**
 * EMBEDDED_DATABASE_DURABLE: whether the embedded database's commits are on
 * disk before they are acknowledged. Default true; `false` (or `0`) trades
 * that for speed where the data does not matter (tests, demos). Throws on
 * anything else (config.ts reports it as a ConfigError).
 */
export function embeddedDurableFrom(env: NodeJS.ProcessEnv): boolean {
  const raw = env.EMBEDDED_DATABASE_DURABLE;
  if (raw === undefined || raw === "" || raw === "true" || raw === "1") return true;
  if (raw === "false" || raw === "0") return false;
  throw new Error(`EMBEDDED_DATABASE_DURABLE must be true or false, got ${JSON.stringify(raw)}`);
}
