/**
 * The embedded database's starting point, made by `npm run build`: a dump
 * of a PGlite data directory that is already initialised, migrated and
 * seeded with the demo inventory (`dist/pglite-template.tar.gz`). A first
 * start on an empty data directory loads it instead of running initdb (the
 * bulk of a first start: seconds of WebAssembly), then migrates and seeds
 * as always, so a template older than the code is still correct, only
 * slower. Without a build (tsx, tests) there is no template and the data
 * directory is initialised from scratch.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Beside the bundle (dist/server.js): dist/pglite-template.tar.gz. */
export const EMBEDDED_TEMPLATE_FILE = fileURLToPath(new URL("./pglite-template.tar.gz", import.meta.url));

/** The template to load into `dataDir`: only when the template exists and the directory is empty. */
export function embeddedTemplateFor(dataDir: string, file = EMBEDDED_TEMPLATE_FILE): Blob | undefined {
  if (!existsSync(file)) return undefined;
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0) return undefined;
  return new Blob([readFileSync(file)]);
}
