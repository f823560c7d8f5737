/**
 * The process entry of the compiled service (`dist/server.js`, what
 * `npm start` runs). On the embedded database it starts PGlite's thread
 * first, so that the database opens on one core while this one loads the
 * rest of the service; then it runs src/main.ts's main(), which adopts
 * that thread (src/db/pglite-thread.ts). SIGTERM and SIGINT are caught
 * before anything starts (src/early-signals.ts): main() acts on them.
 *
 * Stack traces point at the TypeScript sources through the source maps in
 * dist/, read when a stack is first formatted (src/stack-traces.ts), not at
 * load as `node --enable-source-maps` would.
 */
import { embeddedTemplateDir } from "./db/embedded-template.js";
import { databaseUrlFrom, dataDirFrom, embeddedDataDir, embeddedDurableFrom } from "./db/location.js";
import { startPgliteThread } from "./db/pglite-thread.js";
import { catchEarlySignals } from "./early-signals.js";
import { installSourceMappedStacks } from "./stack-traces.js";

installSourceMappedStacks();

const early = catchEarlySignals();
if (databaseUrlFrom(process.env) === undefined) {
  let durable: boolean | undefined;
  try {
    durable = embeddedDurableFrom(process.env);
  } catch {
    // An invalid EMBEDDED_DATABASE_DURABLE: main() reports it (config.ts), and nothing starts.
  }
  if (durable !== undefined) {
    startPgliteThread(embeddedDataDir(dataDirFrom(process.env)), embeddedTemplateDir(), { durable });
  }
}
const { runMain } = await import("./main.js");
runMain(early);
