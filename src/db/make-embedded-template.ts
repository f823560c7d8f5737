/**
 * Writes the embedded database's template (see embedded-template.ts):
 * `node dist/make-embedded-template.js <file>`, run by scripts/build.mjs.
 */
import { writeFileSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { systemClock } from "../clock.js";
import { numberingDomains } from "../numbering/domains.js";
import { seedDemoInventory } from "../numbering/inventory/demo.js";
import { wrapPglite } from "./client.js";

const file = process.argv[2];
if (!file) {
  console.error("usage: make-embedded-template <file.tar.gz>");
  process.exit(2);
}
const pglite = await PGlite.create();
const database = wrapPglite(pglite);
await database.migrate();
await seedDemoInventory(numberingDomains(database.db, systemClock, { numberQuarantineSeconds: 0 }).inventory);
const dump = await pglite.dumpDataDir("gzip");
writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
await pglite.close();
