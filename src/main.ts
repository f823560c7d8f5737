/**
 * The service as a process: loads the configuration, builds the app
 * (src/server.ts), listens unless it is a worker, prints the operator token
 * on the start that generated it, and stops on SIGTERM/SIGINT. The
 * compiled entry, src/start.ts, runs it.
 */
import { pathToFileURL } from "node:url";
import { firstStartHint } from "./auth/operator-token.js";
import { loadConfig } from "./config.js";
import { EmbeddedDatabaseError, startedPgliteThread } from "./db/pglite-thread.js";
import type { EarlySignals } from "./early-signals.js";
import { createLogger, type Logger } from "./log.js";
import { exitOnUncaught } from "./process-errors.js";
import { type App, build } from "./server.js";

/** How long a stop may take before the process exits anyway. */
const STOP_TIMEOUT_MS = 30_000;

async function main(early?: EarlySignals): Promise<void> {
  const config = loadConfig();
  const log = createLogger(config.logLevel, { bufferBytes: config.logBufferBytes });
  exitOnUncaught(log);
  log.info({ node: process.version, role: config.role }, "switchboard starting");
  // Signals are handled from the first moment, start-up included: the first
  // SIGTERM/SIGINT stops the app (in-flight calls end, the database closes)
  // and exits 0; later ones (a terminal's Ctrl-C reaches npm and node alike,
  // and npm forwards it once more) are noted, and a stop that hangs ends the
  // process after STOP_TIMEOUT_MS.
  let app: App | undefined;
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.debug({ signal }, "already stopping");
      return;
    }
    stopping = true;
    log.info({ signal }, "switchboard stopping");
    setTimeout(() => {
      log.error({ timeoutMs: STOP_TIMEOUT_MS }, "stop timed out; exiting");
      process.exit(1);
    }, STOP_TIMEOUT_MS).unref();
    // Before the app is built, the embedded database's thread src/start.ts
    // started (a first start perhaps still making its data directory).
    void (app?.close() ?? startedPgliteThread()?.close() ?? Promise.resolve()).then(
      () => {
        log.info("switchboard stopped");
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, "stop failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  // A signal caught before these handlers were installed (src/start.ts).
  const earlySignal = early?.release();
  if (earlySignal !== undefined) stop(earlySignal);
  if (stopping) return;

  try {
    app = await build({ config, log });
  } catch (err) {
    // A stop closed the database under a start in progress: the stop exits.
    if (stopping) return;
    startFailed(log, err);
  }
  if (stopping) {
    // A signal arrived while starting: close what build() opened.
    await app.close();
    return;
  }
  if (app.config.role === "worker") {
    // Background work only: nothing listens.
    log.info("switchboard worker started");
    return;
  }
  const address = await app.listen();
  const baseUrl = `${app.config.tls ? "https" : "http"}://${address.address}:${address.port}`;
  log.info({ url: baseUrl, docs: `${baseUrl}/docs` }, "switchboard listening");
  if (app.config.sip.enabled) await app.listenSip();
  // The token itself is shown once, on the start that generated it, and never logged.
  if (app.operatorToken.generated) {
    await new Promise<void>((resolve) => log.flush(() => resolve()));
    process.stdout.write(`${firstStartHint(app.operatorToken, baseUrl)}\n`);
    log.info({ file: app.operatorToken.file }, "operator token generated (printed above, once)");
  } else if (app.operatorToken.file) {
    log.info(
      { file: app.operatorToken.file },
      "operator token: export SWITCHBOARD_OPERATOR_TOKEN=$(cat <file>)",
    );
  }
}

/**
 * A start that failed once the log exists: the reason as a JSON line (with
 * what was found and what to do, when it is the embedded database's data
 * directory), then exit 1.
 */
function startFailed(log: Logger, err: unknown): never {
  if (err instanceof EmbeddedDatabaseError && err.problem !== undefined) {
    const { dataDir, found, remedy } = err.problem;
    log.fatal({ dataDir, found, remedy }, "the embedded database's data directory cannot be opened");
  } else {
    log.fatal({ err }, "switchboard did not start");
  }
  process.exit(1);
}

/** Runs the service as a process (main()), exiting 1 with the reason when it cannot start. */
export function runMain(early?: EarlySignals): void {
  main(early).catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}

// `tsx src/main.ts`; the build's entry (and npm run start:dev's) is src/start.ts.
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) runMain();
