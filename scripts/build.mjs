#!/usr/bin/env node
/**
 * `npm run build`: compiles the server (src/start.ts) and the operator CLI
 * (src/cli.ts) to JavaScript in dist/, with esbuild, and the console (the
 * browser app of src/console/) into dist/console/ (scripts/build-console.mjs).
 *
 * Each entry becomes an ES module (with shared chunks beside it) holding the
 * project's code (src/ and gen/) and most of its npm dependencies; the few
 * listed as external stay imports of node_modules (see below). The SQL
 * migrations and the OpenAPI documents are copied beside the modules, which
 * find them relative to themselves (`./migrations`, `./openapi`), and the
 * embedded database's template is made (dist/pglite-template/: a data
 * directory initialised, migrated and seeded, which a first start copies
 * instead of running initdb; src/db/embedded-template.ts).
 *
 *   node scripts/build.mjs             build
 *   node scripts/build.mjs --if-stale  build only when a source is newer than dist/
 *
 * Type checking is `npm run typecheck` (tsc); esbuild only strips types.
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildConsole } from "./build-console.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist");
const stamp = join(out, ".built");
// The bundle holds the npm packages too: a changed lock file or patch (scripts/patches/, applied
// by `npm ci`) is a changed input.
const inputs = [
  "src",
  "gen",
  "package.json",
  "package-lock.json",
  "scripts/patches",
  "scripts/build.mjs",
  "scripts/build-console.mjs",
].map((p) => join(root, p));

/** The newest modification time under `path` (a file or a folder). */
function newest(path) {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  let max = s.mtimeMs;
  for (const entry of readdirSync(path)) max = Math.max(max, newest(join(path, entry)));
  return max;
}

function upToDate() {
  if (!existsSync(stamp)) return false;
  const built = statSync(stamp).mtimeMs;
  return inputs.every((p) => !existsSync(p) || newest(p) <= built);
}

if (process.argv.includes("--if-stale") && upToDate()) process.exit(0);

const started = performance.now();
let esbuild;
try {
  esbuild = await import("esbuild");
} catch {
  console.error("build: esbuild is not installed (a devDependency): run `npm ci` first");
  process.exit(1);
}
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await esbuild.build({
  absWorkingDir: root,
  entryPoints: {
    // src/start.ts starts the embedded database's thread, then runs src/main.ts.
    server: "src/start.ts",
    cli: "src/cli.ts",
    "make-embedded-template": "src/db/make-embedded-template.ts",
    // The embedded database's worker thread (src/db/pglite-thread.ts finds it beside itself).
    "pglite-worker": "src/db/pglite-worker.ts",
    // The speech engine's worker thread (src/media/speech/espeak.ts finds it beside itself).
    "espeak-worker": "src/media/speech/espeak-worker.ts",
  },
  outdir: out,
  bundle: true,
  // Dynamic imports stay separate chunks: the CLI loads a command group's
  // code (and connect-node) only when that group is named.
  splitting: true,
  // Chunks beside the entries: modules find migrations/, openapi/ and the
  // template relative to themselves (import.meta.url).
  chunkNames: "[name]-[hash]",
  // npm packages are bundled too (resolving and compiling hundreds of small
  // modules was most of a start's first second), except: those that find
  // files of their own beside their code at run time (PGlite's WebAssembly,
  // Swagger UI's assets, pino's worker transports), music-metadata (loads its
  // parsers on demand), lamejs, which stays a separate, replaceable
  // module as its LGPL licence asks, and eSpeak NG (GPL; its voice data is a
  // file beside its module) (docs/licenses.md).
  external: [
    "@electric-sql/pglite",
    "swagger-ui-dist",
    "pino",
    "pino-*",
    "thread-stream",
    "music-metadata",
    "@breezystack/lamejs",
    "@echogarden/espeak-ng-emscripten",
  ],
  // Bundled CommonJS packages call require() for Node's built-ins.
  banner: {
    js: 'import { createRequire as __sbCreateRequire } from "node:module"; const require = __sbCreateRequire(import.meta.url);',
  },
  platform: "node",
  format: "esm",
  target: "node24",
  sourcemap: true,
  sourcesContent: false,
  logLevel: "warning",
});
// The console (src/console/), served at /console/ (src/transport/console.ts).
await buildConsole({ outdir: join(out, "console") });
cpSync(join(root, "src/db/migrations"), join(out, "migrations"), { recursive: true });
// The OpenAPI documents buf generate made, served at /openapi.json (src/transport/openapi.ts).
cpSync(join(root, "gen/openapi"), join(out, "openapi"), { recursive: true });
// The embedded database's template: initialised, migrated and seeded once
// here, so a first start skips initdb (src/db/embedded-template.ts).
execFileSync(process.execPath, [join(out, "make-embedded-template.js"), join(out, "pglite-template")], {
  stdio: "inherit",
});
writeFileSync(stamp, `${new Date().toISOString()}\n`);
console.error(`build: dist/ in ${Math.round(performance.now() - started)} ms`);
