/**
 * A Database over a PGlite instance opened in this thread (tests' clones of
 * a template, the build's template maker). Kept out of client.ts so that the
 * service, whose embedded database runs in its own thread
 * (pglite-thread.ts), never loads PGlite or drizzle's PGlite driver on its
 * main thread.
 */
import type { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { migrate } from "drizzle-orm/pglite/migrator";
import { type Database, type Db, MIGRATIONS_FOLDER } from "./client.js";
import * as schema from "./schema/index.js";

/** A Database over an open PGlite instance (for example a clone of a test template). */
export function wrapPglite(client: PGlite): Database {
  const db = drizzle({ client, schema });
  return {
    db: db as unknown as Db,
    driver: "pglite",
    migrate: () => migrate(db, { migrationsFolder: MIGRATIONS_FOLDER }),
    close: () => client.close(),
  };
}
