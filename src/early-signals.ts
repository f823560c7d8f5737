/**
 * SIGTERM and SIGINT from the very first moment of the process. src/start.ts
 * catches them before it starts the embedded database's thread (a first
 * start makes the data directory there while the rest of the service loads)
 * and src/main.ts takes over once it has its own handlers: a signal that came
 * in between is then acted on (the stop), instead of ending the process
 * mid-start by Node's default.
 */
export interface EarlySignals {
  /** Removes these handlers; returns the first signal they caught, if any. */
  release(): NodeJS.Signals | undefined;
}

export function catchEarlySignals(): EarlySignals {
  let caught: NodeJS.Signals | undefined;
  const note = (signal: NodeJS.Signals) => {
    caught ??= signal;
  };
  process.on("SIGINT", note);
  process.on("SIGTERM", note);
  return {
    release() {
      process.off("SIGINT", note);
      process.off("SIGTERM", note);
      return caught;
    },
  };
}
