/**
 * The process entry of the compiled service (`dist/server.js`, what
 * `npm start` runs). On the embedded database it starts PGlite's thread
 * first, so that the database opens on one core while this one loads the
 * rest of the service; then it runs src/main.ts's main(), which adopts
 * that thread (src/db/pglite-thread.ts).
 *
 * Stack traces point at the TypeScript sources through the source maps in
 * dist/, read when a stack is first formatted (src/stack-traces.ts), not at
 * load as `node --enable-source-maps` would.
 */
import { embeddedTemplateDir } from "./db/embedded-template.js";
import { databaseUrlFrom, dataDirFrom, embeddedDataDir } from "./db/location.js";
import { startPgliteThread } from "./db/pglite-thread.js";
import { installSourceMappedStacks } from "./stack-traces.js";

installSourceMappedStacks();

if (databaseUrlFrom(process.env) === undefined) {
  startPgliteThread(embeddedDataDir(dataDirFrom(process.env)), embeddedTemplateDir());
}
const { runMain } = await import("./main.js");
runMain();
