/**
 * Seeds a benchmark database before the server under test starts (PGlite
 * has one owner at a time): applies the migrations, creates the projects of
 * the list-size scenarios and fills each with regulatory listings by one
 * `insert ... select from generate_series` through the drizzle schema's
 * table and column names. Run as a child process of bench/run.ts:
 *
 *   DATA_DIR=... | DATABASE_URL=...  tsx bench/seed.ts '{"rows-1k":1000,"rows-100k":100000}'
 *
 * Prints one JSON line: {"seeded":{"<project>":{"rows":n,"ms":t},...}}.
 */
import { getTableName, type SQL, sql } from "drizzle-orm";
import { ProjectsDomain } from "../src/admin/projects.js";
import { ProjectsRepository } from "../src/admin/projects-repository.js";
import { systemClock } from "../src/clock.js";
import { type Db, openDatabase } from "../src/db/client.js";
import { regulatoryListings as t } from "../src/db/schema/index.js";

const counts = JSON.parse(process.argv[2] ?? "{}") as Record<string, number>;

/**
 * `count` valid AU business listings in `projectId`, one millisecond apart
 * (newest first: row 1 is the newest), ids `idPrefix` + digits (16 characters).
 */
function seedSql(projectId: string, idPrefix: string, count: number, newest: Date): SQL {
  const col = (c: { name: string }) => sql.identifier(c.name);
  const columns = [
    t.id,
    t.projectId,
    t.displayName,
    t.addressLines,
    t.locality,
    t.administrativeArea,
    t.postalCode,
    t.regionCode,
    t.businessName,
    t.valid,
    t.verified,
    t.createTime,
    t.updateTime,
  ];
  const time = sql`${newest.toISOString()}::timestamptz - g * interval '1 millisecond'`;
  return sql`insert into ${sql.identifier(getTableName(t))} (${sql.join(columns.map(col), sql`, `)})
    select ${idPrefix} || lpad(g::text, ${16 - idPrefix.length}::int, '0'), ${projectId}, 'Seeded listing ' || g,
      array['1 Example St']::text[], 'Sydney', 'NSW', '2000', 'AU', 'Example Pty Ltd',
      true, false, ${time}, ${time}
    from generate_series(1, ${count}::int) as g`;
}

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL || undefined;
  const dataDir = process.env.DATA_DIR;
  // Never the default ./data: only the database the runner prepared.
  if (databaseUrl === undefined && !dataDir) throw new Error("set DATA_DIR or DATABASE_URL");
  const database = await openDatabase({ databaseUrl, dataDir: dataDir ?? "" });
  try {
    let started = performance.now();
    await database.migrate();
    const migrateMs = Math.round(performance.now() - started);
    const db: Db = database.db;
    const projects = new ProjectsDomain(new ProjectsRepository(db), systemClock);
    const seeded: Record<string, { rows: number; ms: number }> = {};
    for (const [i, [projectId, count]] of Object.entries(counts).entries()) {
      const t0 = performance.now();
      await projects.create(projectId, `bench: ${count} listings`);
      // A day old: the newest seeded row is well before anything created while measuring.
      await db.execute(seedSql(projectId, `s${i}`, count, new Date(Date.now() - 86_400_000)));
      seeded[projectId] = { rows: count, ms: Math.round(performance.now() - t0) };
    }
    await db.execute(sql`analyze ${sql.identifier(getTableName(t))}`);
    started = performance.now();
    await database.close();
    const closeMs = Math.round(performance.now() - started);
    process.stdout.write(`${JSON.stringify({ seeded, migrateMs, closeMs })}\n`);
  } catch (err) {
    await database.close().catch(() => {});
    throw err;
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(
      err instanceof Error ? (err.stack ?? err.message) : err,
      (err as { cause?: unknown }).cause ?? "",
    );
    process.exit(1);
  },
);
