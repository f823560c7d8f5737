import pino, { type Logger } from "pino";

type SonicBoom = ReturnType<typeof pino.destination>;

/**
 * The service logger: JSON lines on stdout; secrets are redacted by path.
 *
 * Lines are gathered here (LineBatch) and written to stdout (pino's writer,
 * sonic-boom) in batches of at least MIN_WRITE_BYTES, or every
 * FLUSH_INTERVAL_MS, so the access log costs one write per batch rather than
 * a system call per request under load. Each batch is one synchronous
 * write (pino's default), so what is gathered can also be written when the
 * process exits, and at once after a fatal line.
 */
export function createLogger(level: string): Logger {
  const batch = new LineBatch(pino.destination({ dest: 1, sync: true }));
  // A weak reference: a logger nobody uses any more is not kept alive by its timer.
  const ref = new WeakRef(batch);
  const timer = setInterval(() => {
    const b = ref.deref();
    if (b === undefined || b.closed) clearInterval(timer);
    else b.flush();
  }, FLUSH_INTERVAL_MS).unref();
  flushOnExit(batch);
  return pino(
    {
      level,
      redact: {
        paths: ["req.headers.authorization", "headers.authorization", "authorization", "secret", "*.secret"],
        censor: "[redacted]",
      },
    },
    batch,
  );
}

/**
 * Gathers log lines and writes them to `sink` joined, MIN_WRITE_BYTES at a
 * time. sonic-boom batches by itself when given a minimum length (this
 * logger used `sync: false, minLength: 4096`), but it appends each line to a
 * growing string and measures that string's byte length on every write,
 * which flattens it: under load each line copied the whole pending batch
 * again (8 KB of garbage per access-log line, sampled). An array joined once
 * per batch copies each byte once.
 */
export class LineBatch {
  private lines: string[] = [];
  private pending = 0;

  constructor(private readonly sink: SonicBoom) {}

  get closed(): boolean {
    return (this.sink as unknown as { destroyed?: boolean }).destroyed === true;
  }

  /** pino's stream interface: one serialized line, newline included. */
  write(line: string): boolean {
    this.lines.push(line);
    this.pending += line.length;
    if (this.pending >= MIN_WRITE_BYTES) this.flush();
    return true;
  }

  /** Writes what is gathered, then calls `done` (pino's `logger.flush(cb)` passes it). */
  flush(done?: (err?: Error) => void): void {
    if (this.lines.length > 0 && !this.closed) {
      const chunk = this.lines.length === 1 ? this.lines[0]! : this.lines.join("");
      this.lines = [];
      this.pending = 0;
      this.sink.write(chunk);
    }
    done?.();
  }

  /** The same (pino calls it after a fatal line; the exit hook too). */
  flushSync(): void {
    this.flush();
  }
}

/** Live batches, written out synchronously when the process exits. */
const live = new Set<WeakRef<LineBatch>>();

/**
 * Tracks `batch` for the exit hook (one process listener for all of them,
 * weakly held: tests make many loggers).
 */
function flushOnExit(batch: LineBatch): void {
  for (const r of live) if (r.deref() === undefined) live.delete(r);
  if (live.size === 0) {
    process.removeListener("exit", flushAll);
    process.on("exit", flushAll);
  }
  live.add(new WeakRef(batch));
}

function flushAll(): void {
  for (const r of live) {
    try {
      r.deref()?.flushSync();
    } catch {
      // stdout gone (EPIPE): nothing left to write to
    }
  }
}

/**
 * Lines are handed on when this much is gathered (one system call per ~15
 * access-log lines under load), or by the interval below when less is: at
 * most FLUSH_INTERVAL_MS late.
 */
const MIN_WRITE_BYTES = 4096;
const FLUSH_INTERVAL_MS = 100;

export type { Logger };
