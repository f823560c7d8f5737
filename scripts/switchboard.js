#!/usr/bin/env node
// The `switchboard` command (package.json "bin"): runs the compiled CLI
// (dist/cli.js, made by `npm run build` or `npm start`) with plain node;
// in a checkout that was never built, runs src/cli.ts through tsx instead.
import { existsSync } from "node:fs";

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
