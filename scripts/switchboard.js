#!/usr/bin/env node
// The `switchboard` command (package.json "bin"): runs the compiled CLI
// (dist/cli.js, made by `npm run build` or `npm start`) with plain node;
// in a checkout that was never built, runs src/cli.ts through tsx instead.
//
// The project runs on Node 24 (package.json engines). Started by an older
// node (a machine whose own node is 20, say) in a checkout where `npm ci`
// installed the `node` package, it re-runs itself on that binary, as npm
// scripts do.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const MIN_MAJOR = 24;
const local = fileURLToPath(new URL("../node_modules/node/bin/node", import.meta.url));
if (Number(process.versions.node.split(".")[0]) < MIN_MAJOR && existsSync(local)) {
  const child = spawnSync(local, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
  });
  process.exit(child.status ?? 1);
}

const compiled = new URL("../dist/cli.js", import.meta.url);
let main;
if (existsSync(compiled)) {
  ({ main } = await import(compiled.href));
} else {
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import("../src/cli.ts"));
}
process.exitCode = await main();
