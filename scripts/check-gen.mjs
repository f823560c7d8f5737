#!/usr/bin/env node
/**
 * Fails when gen/ is not what `buf generate` makes from proto/ (a stale or
 * hand-edited gen/). Works without git (CI, the Dockerfile's build stage):
 * it snapshots gen/, regenerates, and compares file by file. The
 * regenerated gen/ is left in place, as `npm run generate` would.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const gen = join(root, "gen");

function snapshot(dir) {
  const files = new Map();
  const walk = (d) => {
    for (const entry of readdirSync(d)) {
      const p = join(d, entry);
      if (statSync(p).isDirectory()) walk(p);
      else files.set(relative(gen, p), readFileSync(p));
    }
  };
  walk(dir);
  return files;
}

const before = snapshot(gen);
execFileSync("npx", ["buf", "generate"], { cwd: root, stdio: "inherit" });
const after = snapshot(gen);
const differ = [...new Set([...before.keys(), ...after.keys()])]
  .filter((f) => !before.get(f)?.equals(after.get(f) ?? Buffer.alloc(0)) || !after.has(f))
  .sort();
if (differ.length > 0) {
  console.error(`gen/ is stale (run 'npm run generate' and commit the result); differing files:`);
  for (const f of differ.slice(0, 50)) console.error(`  gen/${f}`);
  process.exit(1);
}
console.error(`gen/ is current (${after.size} files)`);
