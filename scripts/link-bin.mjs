#!/usr/bin/env node
/**
 * Run by `npm ci` / `npm install` (package.json postinstall): links the
 * project's own `switchboard` command into node_modules/.bin, beside the
 * `node` (Node 24) and `buf` the dependencies put there. npm links the bins
 * of dependencies only, so without this the command is reachable through
 * `npx switchboard` alone, which costs npx's own start-up (about 0.6 s) on
 * every call. With `export PATH="$PWD/node_modules/.bin:$PATH"` (the
 * README's quick start) `switchboard` runs directly on Node 24.
 */
import { chmodSync, lstatSync, mkdirSync, rmSync, symlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(root, "node_modules", ".bin");
const link = join(bin, "switchboard");
mkdirSync(bin, { recursive: true });
if (lstatSync(link, { throwIfNoEntry: false })) rmSync(link);
symlinkSync("../../scripts/switchboard.js", link);
chmodSync(join(root, "scripts", "switchboard.js"), 0o755);
