/**
 * Statements prepared once per database handle, for the reads every Get and
 * List makes: building a drizzle query costs more CPU than running it, so
 * the hot ones are built once, with placeholders, and executed with values.
 * Not inside a transaction (a short-lived handle: the caller builds the
 * query as before, `preparedOn` answers undefined).
 */
import { is } from "drizzle-orm";
import { PgTransaction } from "drizzle-orm/pg-core";
import type { DbOrTx } from "./client.js";

/** The statements `build` makes for `db`, built on first use and kept with it; undefined in a transaction. */
export function preparedOn<T>(
  cache: WeakMap<object, T>,
  db: DbOrTx,
  build: (db: DbOrTx) => T,
): T | undefined {
  let statements = cache.get(db);
  if (statements === undefined) {
    if (is(db, PgTransaction)) return undefined;
    statements = build(db);
    cache.set(db, statements);
  }
  return statements;
}
