/**
 * Writes the embedded database's template (see embedded-template.ts):
 * `node dist/make-embedded-template.js <dir>`, run by scripts/build.mjs.
 * The directory is an ordinary PGlite data directory, closed cleanly.
 */
import { existsSync, rmSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { systemClock } from "../clock.js";
import { numberingDomains } from "../numbering/domains.js";
import { seedDemoInventory } from "../numbering/inventory/demo.js";
import { wrapPglite } from "./pglite-direct.js";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: make-embedded-template <dir>");
  process.exit(2);
}
if (existsSync(dir)) rmSync(dir, { recursive: true });
const pglite = await PGlite.create({ dataDir: dir });
const database = wrapPglite(pglite);
await database.migrate();
await seedDemoInventory(numberingDomains(database.db, systemClock, { numberQuarantineSeconds: 0 }).inventory);
// A checkpoint leaves nothing to replay when a copy is opened.
await pglite.exec("CHECKPOINT");
await pglite.close();
