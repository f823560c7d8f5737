/**
 * The embedded database's starting point, made by `npm run build`: a PGlite
 * data directory that is already initialised, migrated and seeded with the
 * demo inventory (`dist/pglite-template/`). A first start on an empty data
 * directory copies it (a file copy, where loading a dump or running initdb
 * takes seconds of WebAssembly), then migrates and seeds as always, so a
 * template older than the code is still correct, only slower. Without a
 * build (tsx, tests) there is no template and the data directory is
 * initialised from scratch.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** Beside the bundle (dist/server.js): dist/pglite-template/. */
export const EMBEDDED_TEMPLATE_DIR = fileURLToPath(new URL("./pglite-template", import.meta.url));

/** The template directory, when the build made one. */
export function embeddedTemplateDir(dir = EMBEDDED_TEMPLATE_DIR): string | undefined {
  return existsSync(join(dir, "PG_VERSION")) ? dir : undefined;
}
