/**
 * The console's build (src/console/, a single-page app): esbuild bundles it
 * for browsers into `outdir` as content-hashed files under `assets/` and an
 * `index.html` naming them, which the server serves at `/console/`
 * (src/transport/console.ts). Pages are separate chunks loaded on first
 * visit; the initial JavaScript (the entry and the chunks it imports
 * statically) must stay within BUDGET_BYTES gzipped, and the build prints it.
 *
 * Used by scripts/build.mjs (into dist/console/) and by the console tests
 * (into a temporary folder). Also runnable: `node scripts/build-console.mjs [outdir]`.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The initial JavaScript's budget, gzipped. */
export const BUDGET_BYTES = 200 * 1024;

/**
 * Builds the console into `outdir` (emptied first). Returns the initial
 * JavaScript's gzipped size; throws when it is over budget.
 *
 * @param {{ outdir: string, quiet?: boolean }} options
 * @returns {Promise<{ initialGzipBytes: number, files: string[] }>}
 */
export async function buildConsole({ outdir, quiet = false }) {
  const esbuild = await import("esbuild");
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(join(outdir, "assets"), { recursive: true });
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: { console: "src/console/main.tsx" },
    outdir: join(outdir, "assets"),
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "browser",
    target: ["es2022", "chrome110", "firefox110", "safari16"],
    jsx: "automatic",
    minify: true,
    sourcemap: false,
    metafile: true,
    entryNames: "[name]-[hash]",
    chunkNames: "[name]-[hash]",
    assetNames: "[name]-[hash]",
    define: { "process.env.NODE_ENV": '"production"' },
    // Bundled packages' licence comments stay with their code (docs/licenses.md).
    legalComments: "eof",
    logLevel: "warning",
  });
  const outputs = result.metafile.outputs;
  const entry = Object.keys(outputs).find((o) => outputs[o].entryPoint === "src/console/main.tsx");
  if (entry === undefined) throw new Error("console build: no entry output");
  const css = outputs[entry].cssBundle;
  // The initial JavaScript: the entry and, transitively, what it imports statically.
  const initial = new Set();
  const walk = (path) => {
    if (initial.has(path)) return;
    initial.add(path);
    for (const i of outputs[path]?.imports ?? []) if (i.kind === "import-statement") walk(i.path);
  };
  walk(entry);
  let initialGzipBytes = 0;
  for (const path of initial) initialGzipBytes += gzipSync(readFileSync(join(root, path))).length;
  const href = (path) => `assets/${basename(path)}`;
  // Relative URLs, so the console also works behind a path prefix.
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Switchboard console</title>
${css === undefined ? "" : `<link rel="stylesheet" href="${href(css)}">\n`}<script type="module" src="${href(entry)}"></script>
</head>
<body>
<div id="root"></div>
<noscript>The Switchboard console needs JavaScript.</noscript>
</body>
</html>
`;
  writeFileSync(join(outdir, "index.html"), html);
  const kb = (initialGzipBytes / 1024).toFixed(1);
  if (!quiet) {
    console.error(`build: console: initial JavaScript ${kb} KB gzipped (budget ${BUDGET_BYTES / 1024} KB)`);
  }
  if (initialGzipBytes > BUDGET_BYTES) {
    throw new Error(
      `console build: initial JavaScript is ${kb} KB gzipped, over the ${BUDGET_BYTES / 1024} KB budget`,
    );
  }
  return { initialGzipBytes, files: Object.keys(outputs).map((o) => relative(outdir, join(root, o))) };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildConsole({ outdir: process.argv[2] ?? join(root, "dist", "console") });
}
