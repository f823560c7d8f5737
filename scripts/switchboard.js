#!/usr/bin/env node
// The `switchboard` command (package.json "bin"): runs src/cli.ts through tsx.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli.ts");
process.exitCode = await main();
