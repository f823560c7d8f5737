/**
 * The service as a process: loads the configuration, builds the app
 * (src/server.ts), listens unless it is a worker, prints the operator token
 * on the start that generated it, and stops on SIGTERM/SIGINT. The
 * compiled entry, src/start.ts, runs it.
 */
import { pathToFileURL } from "node:url";
import { firstStartHint } from "./auth/operator-token.js";
import { loadConfig } from "./config.js";
import { createLogger } from "./log.js";
import { exitOnUncaught } from "./process-errors.js";
import { type App, build } from "./server.js";

/** How long a stop may take before the process exits anyway. */
const STOP_TIMEOUT_MS = 30_000;

async function main(): Promise<void> {
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
    void (app?.close() ?? Promise.resolve()).then(
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

  app = await build({ config, log });
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

/** Runs the service as a process (main()), exiting 1 with the reason when it cannot start. */
export function runMain(): void {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}

// `tsx src/main.ts`; the build's entry (and npm run start:dev's) is src/start.ts.
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) runMain();
