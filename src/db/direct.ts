/**
 * Statements run on the postgres.js client directly, for the hottest reads
 * and writes of the API: drizzle's per-statement layers (placeholder filling,
 * its cache and tracing hooks, generic row mapping) cost more CPU than the
 * statement's own round trip. The SQL is a constant text, prepared once per
 * connection by postgres.js (as drizzle's prepared statements are), and the
 * caller maps the rows (arrays in column order) itself; the statement is
 * timed like every drizzle one (metrics.ts).
 *
 * Only on a database handle opened with the postgres.js driver (PostgreSQL,
 * and the embedded database, which is driven through it too): inside a
 * transaction, or on a PGlite handle (tests), `directClientOf` is undefined
 * and the caller uses drizzle.
 *
 * drizzle configures the client to hand timestamps over as text both ways
 * (its parsers and serializers for timestamptz are the identity): a row's
 * timestamptz is a string (`new Date(value)`), a parameter an ISO string.
 */
import { is } from "drizzle-orm";
import { PgTransaction } from "drizzle-orm/pg-core";
import { PostgresJsDatabase } from "drizzle-orm/postgres-js";
import type { Sql } from "postgres";
import { timedStatement } from "../observability/metrics.js";
import type { DbOrTx } from "./client.js";

const clients = new WeakMap<object, Sql | null>();

/** The postgres.js client of `db`, or undefined for a transaction or another driver. */
export function directClientOf(db: DbOrTx): Sql | undefined {
  let client = clients.get(db);
  if (client === undefined) {
    client =
      !is(db, PgTransaction) && is(db, PostgresJsDatabase)
        ? ((db as unknown as { $client: Sql }).$client ?? null)
        : null;
    clients.set(db, client);
  }
  return client ?? undefined;
}

/** The rows of a prepared statement, each an array of its columns' values. */
export function directRows(client: Sql, text: string, params: readonly unknown[]): Promise<unknown[][]> {
  return timedStatement(
    text,
    () =>
      client.unsafe(text, params as never[], { prepare: true }).values() as unknown as Promise<unknown[][]>,
  );
}

/**
 * A fixed text's rows (arrays in column order) on a database handle that is
 * not a transaction: on postgres.js directly (directRows), on a PGlite
 * instance (tests) through its own client.
 */
export async function fixedRows(db: DbOrTx, text: string, params: readonly unknown[]): Promise<unknown[][]> {
  const client = directClientOf(db);
  if (client !== undefined) return directRows(client, text, params);
  const pglite = (
    db as unknown as {
      $client: { query(t: string, p: unknown[], o: { rowMode: "array" }): Promise<{ rows: unknown[][] }> };
    }
  ).$client;
  return (await pglite.query(text, [...params], { rowMode: "array" })).rows;
}
