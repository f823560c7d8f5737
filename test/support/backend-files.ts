/**
 * Which test files reach a database that TEST_DATABASE_URL chooses, read off
 * their source: CI's PostgreSQL run (.ci/run: TEST_BACKENDS=postgres, after
 * the plain run on the embedded database) runs only those again. A file that
 * opens no database, or only PGlite (`pglite`, build()'s default), would run
 * the very same code twice.
 *
 * A file is backend-dependent when it, or a test helper it imports (relative
 * imports inside test/, followed through), names one of the choosers of
 * test/support/db.ts (`testDatabases(`, `postgresTestBackend(`,
 * `describePostgres(`, `describeEmbedded(`) or the variables themselves.
 * db.ts, which defines them, is not followed: importing it for `pglite` alone
 * chooses nothing. A name in a comment counts too; when in doubt, a file runs
 * again.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const CHOOSERS =
  /\b(?:testDatabases|postgresTestBackend|describePostgres|describeEmbedded)\(|\bTEST_DATABASE_URL\b|\bTEST_BACKENDS\b/;
const RELATIVE_IMPORT = /\bfrom\s+["'](\.{1,2}\/[^"']+)["']|\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;
const DEFINITIONS = join("test", "support", "db.ts");

/** Whether `file` (absolute), or a test helper it imports, chooses a backend. */
function choosesBackend(file: string, root: string, seen: Map<string, boolean>): boolean {
  const known = seen.get(file);
  if (known !== undefined) return known;
  seen.set(file, false); // an import cycle adds nothing
  if (relative(root, file) === DEFINITIONS) return false;
  const source = readFileSync(file, "utf8");
  let chooses = CHOOSERS.test(source);
  for (const m of chooses ? [] : source.matchAll(RELATIVE_IMPORT)) {
    const target = resolve(dirname(file), m[1] ?? m[2] ?? "").replace(/\.js$/, ".ts");
    if (!relative(root, target).startsWith("test/") || !existsSync(target)) continue;
    if (choosesBackend(target, root, seen)) {
      chooses = true;
      break;
    }
  }
  seen.set(file, chooses);
  return chooses;
}

/** The `*.test.ts` files under `root`/test that reach no database TEST_DATABASE_URL chooses, relative to `root`, sorted. */
export function backendIndependentTestFiles(root: string): string[] {
  const seen = new Map<string, boolean>();
  return readdirSync(join(root, "test"), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => join("test", f))
    .filter((f) => !choosesBackend(join(root, f), root, seen))
    .sort();
}
