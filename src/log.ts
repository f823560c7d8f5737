import pino, { type Logger } from "pino";

/** The service logger: JSON lines on stdout; secrets are redacted by path. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: ["req.headers.authorization", "headers.authorization", "authorization", "secret", "*.secret"],
      censor: "[redacted]",
    },
  });
}

export type { Logger };
