/**
 * A first start of the service that stops at a chosen point of making its
 * embedded data directory, for test/startup/first-start.test.ts to kill or
 * stop it there. The same steps as the compiled entry (src/start.ts): signals
 * caught first, the embedded database's thread started, then main(); only
 * the thread is told to pause, and the template is the test's.
 *
 *   node --import tsx test/support/first-start.ts
 *
 * Environment: DATA_DIR (and the service's other settings), FIRST_START_TEMPLATE
 * (a data directory to copy), FIRST_START_PAUSE_AT (files copied, or
 * `complete`: the new directory complete, not yet renamed into place). Prints
 * `first-start: paused` on stdout once the thread has stopped there.
 */
import { databaseUrlFrom, dataDirFrom, embeddedDataDir } from "../../src/db/location.js";
import { startPgliteThread } from "../../src/db/pglite-thread.js";
import { catchEarlySignals } from "../../src/early-signals.js";

const early = catchEarlySignals();
if (databaseUrlFrom(process.env) !== undefined) throw new Error("first-start: the embedded database only");
const raw = process.env.FIRST_START_PAUSE_AT ?? "";
const pauseAt = raw === "complete" ? "complete" : Number(raw);
if (pauseAt !== "complete" && !(Number.isInteger(pauseAt) && pauseAt > 0)) {
  throw new Error("first-start: FIRST_START_PAUSE_AT must be a count of files or `complete`");
}
startPgliteThread(embeddedDataDir(dataDirFrom(process.env)), process.env.FIRST_START_TEMPLATE, {
  pauseAt,
  onPaused: () => process.stdout.write("first-start: paused\n"),
});
const { runMain } = await import("../../src/main.js");
runMain(early);
