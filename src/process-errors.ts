import type { Logger } from "./log.js";

/**
 * What the process does with an error nothing caught: an exception thrown
 * from a callback, or a rejected promise nobody handles. Node's default is
 * to print the stack to stderr and exit 1; the service exits 1 too (its
 * state is unknown from there: a supervisor starts it again), but says so
 * first as a JSON `fatal` line on stdout, with the error and its stack, where
 * the operator reads the rest of its log.
 */
export function exitOnUncaught(log: Logger): void {
  const exit = (what: string) => (err: unknown) => {
    try {
      // A fatal line is written at once (src/log.ts), before the exit.
      log.fatal({ err }, `${what}; exiting`);
    } finally {
      process.exit(1);
    }
  };
  process.on("uncaughtException", exit("uncaught exception"));
  process.on("unhandledRejection", exit("unhandled promise rejection"));
}
