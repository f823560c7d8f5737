import pino, { type Logger } from "pino";

/**
 * The service logger: JSON lines on stdout; secrets are redacted by path.
 *
 * Written asynchronously (sonic-boom without `sync`): a line goes out at
 * once when stdout is idle, and lines logged while a write is in flight go
 * out together in the next one, so the access log costs one write per
 * batch rather than a system call per request under load. pino flushes
 * what is left synchronously when the process exits.
 */
export function createLogger(level: string): Logger {
  return pino(
    {
      level,
      redact: {
        paths: ["req.headers.authorization", "headers.authorization", "authorization", "secret", "*.secret"],
        censor: "[redacted]",
      },
    },
    pino.destination({ dest: 1, sync: false }),
  );
}

export type { Logger };
