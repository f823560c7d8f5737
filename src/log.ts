import pino, { type Logger } from "pino";

type SonicBoom = ReturnType<typeof pino.destination>;

/**
 * The service logger: JSON lines on stdout; secrets are redacted by path.
 *
 * Written asynchronously (sonic-boom without `sync`), in batches of at
 * least MIN_WRITE_BYTES or every FLUSH_INTERVAL_MS, so the access log costs
 * one write per batch rather than a system call per request under load.
 * pino flushes what is left synchronously when the process exits.
 */
export function createLogger(level: string): Logger {
  const destination = pino.destination({ dest: 1, sync: false, minLength: MIN_WRITE_BYTES });
  // What is buffered below MIN_WRITE_BYTES goes out within FLUSH_INTERVAL_MS
  // (sonic-boom's own periodicFlush would write even when nothing is). A weak
  // reference: a logger nobody uses any more is not kept alive by its timer.
  const ref = new WeakRef(destination);
  const timer = setInterval(() => {
    const d = ref.deref() as unknown as ({ _len?: number; destroyed?: boolean } & SonicBoom) | undefined;
    if (d === undefined || d.destroyed === true) clearInterval(timer);
    else if (d._len !== 0) d.flush();
  }, FLUSH_INTERVAL_MS).unref();
  return pino(
    {
      level,
      redact: {
        paths: ["req.headers.authorization", "headers.authorization", "authorization", "secret", "*.secret"],
        censor: "[redacted]",
      },
    },
    destination,
  );
}

/**
 * Lines are written when this much is buffered (one system call per ~20
 * access-log lines under load instead of one per handful), or by the
 * interval below when less is: at most FLUSH_INTERVAL_MS late.
 */
const MIN_WRITE_BYTES = 4096;
const FLUSH_INTERVAL_MS = 100;

export type { Logger };
