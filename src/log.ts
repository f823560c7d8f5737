import { writeSync } from "node:fs";
import pino, { type Logger } from "pino";
import sonicBoom, { type SonicBoom, type SonicBoomOpts } from "sonic-boom";
import { logLinesDroppedTotal } from "./observability/metrics.js";

/** sonic-boom's constructor: its module.exports, which Node's ESM sees only as the default export. */
const SonicBoomWriter = sonicBoom as unknown as new (options: SonicBoomOpts) => SonicBoom;

/**
 * The service logger: JSON lines on stdout; secrets are redacted by path.
 *
 * Lines are gathered here (LineBatch) and handed to stdout's writer (pino's
 * sonic-boom) in batches of at least MIN_WRITE_BYTES, or at most
 * FLUSH_INTERVAL_MS after a line was gathered (no timer runs while there is
 * nothing to write), so the access log costs one write per batch rather than
 * a system call per request under load.
 *
 * The writer is asynchronous, and holds at most `bufferBytes` (LOG_BUFFER_BYTES)
 * that stdout has not taken yet: a reader that stops reading (a stalled log
 * collector, a paused pipe) must not stop the service, which a synchronous
 * write does as soon as the pipe is full (seen: every request, and the stop,
 * hung). Past that, lines are dropped and counted, and a warning says how
 * many once stdout takes lines again. At exit and after a fatal line what is
 * gathered is written synchronously, unless stdout has taken nothing for
 * STALLED_MS: then it is given up, so that the process can end.
 */
export function createLogger(level: string, options: { bufferBytes?: number } = {}): Logger {
  // Opening process.stdout makes a pipe's fd 1 non-blocking (libuv; a terminal or a file stays as
  // it is): a full pipe then answers our writes with EAGAIN, tried again later, instead of holding
  // them (the asynchronous ones in a thread of the pool, the synchronous ones at exit) for ever.
  void process.stdout.writable;
  const batch = new LineBatch(stdoutWriter(options.bufferBytes ?? DEFAULT_LOG_BUFFER_BYTES));
  flushOnExit(batch);
  const logger = pino(
    {
      level,
      redact: {
        paths: ["req.headers.authorization", "headers.authorization", "authorization", "secret", "*.secret"],
        censor: "[redacted]",
      },
    },
    batch,
  );
  batch.onDropped = (dropped) =>
    logger.warn({ dropped }, "log lines dropped: stdout was not read fast enough (LOG_BUFFER_BYTES)");
  return logger;
}

/** LOG_BUFFER_BYTES's default: what stdout may lag behind before lines are dropped. */
export const DEFAULT_LOG_BUFFER_BYTES = 16 * 1024 * 1024;

/**
 * sonic-boom on fd 1, asynchronous, dropping past `maxLength`. A full pipe
 * answers EAGAIN: tried again 100 ms later (a timer, not a wait), and by a
 * synchronous flush until its deadline. Made here rather than by
 * `pino.destination()`, which would also flush it at exit with no deadline:
 * for ever, when stdout is stalled (our exit hook does it: flushOnExit).
 */
function stdoutWriter(maxLength: number): SonicBoom {
  const writer: SonicBoom = new SonicBoomWriter({
    fd: 1,
    sync: false,
    maxLength,
    retryEAGAIN: () => syncDeadline(writer) > performance.now(),
  });
  return writer;
}

const SYNC_DEADLINE = Symbol("switchboard.log.syncDeadline");

/** Until when a synchronous flush of `writer` may wait for stdout (Infinity when none is under way). */
function syncDeadline(writer: SonicBoom): number {
  return (writer as unknown as { [SYNC_DEADLINE]?: number })[SYNC_DEADLINE] ?? Number.POSITIVE_INFINITY;
}

/**
 * Gathers log lines and hands them to `sink` joined, MIN_WRITE_BYTES at a
 * time. sonic-boom batches by itself when given a minimum length, but it
 * appends each line to a growing string and measures that string's byte
 * length on every write, which flattens it: under load each line copied
 * the whole pending batch again (8 KB of garbage per access-log line,
 * sampled). An array joined once per batch copies each byte once.
 *
 * It also keeps the account of what `sink` holds: bytes handed over and
 * not yet written, lines dropped (sonic-boom's `drop`), and when stdout last
 * took anything.
 */
export class LineBatch {
  private lines: string[] = [];
  private pending = 0;
  /** Bytes handed to the sink and not yet written by it. */
  private backlog = 0;
  /** When the sink last wrote anything (or, idle, when it was last handed something). */
  private lastProgress = performance.now();
  private dropped = 0;
  /** `flush(done)` callers waiting for the sink to have written what it was handed. */
  private waiting: Array<() => void> = [];
  /** Told, once stdout takes lines again, how many were dropped since the last time. */
  onDropped: ((dropped: number) => void) | undefined;
  /** The flush due FLUSH_INTERVAL_MS after a line was gathered; none while there is nothing to say. */
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly sink: SonicBoom) {
    sink.on("write", (n: number) => {
      this.backlog = Math.max(0, this.backlog - n);
      this.lastProgress = performance.now();
      this.settle();
    });
    sink.on("drop", (data: string | Buffer) => {
      this.backlog = Math.max(0, this.backlog - Buffer.byteLength(data));
      this.drop(countLines(data));
      this.settle();
    });
    // stdout closed (EPIPE) or failing: the lines are lost, the service goes on.
    sink.on("error", () => {
      this.backlog = 0;
      this.settle();
    });
  }

  /** Calls the `flush(done)` callbacks once the sink holds nothing of ours. */
  private settle(): void {
    if (this.backlog > 0 || this.waiting.length === 0) return;
    const waiting = this.waiting;
    this.waiting = [];
    for (const done of waiting) done();
  }

  get closed(): boolean {
    return (this.sink as unknown as { destroyed?: boolean }).destroyed === true;
  }

  /** Whether stdout has taken nothing for STALLED_MS while holding some of ours. */
  get stalled(): boolean {
    return this.backlog > 0 && performance.now() - this.lastProgress > STALLED_MS;
  }

  /** pino's stream interface: one serialized line, newline included. */
  write(line: string): boolean {
    if (this.closed) return true;
    this.lines.push(line);
    this.pending += line.length;
    if (this.pending >= MIN_WRITE_BYTES) this.flush();
    else this.arm();
    return true;
  }

  /**
   * Flushes FLUSH_INTERVAL_MS from now, unless a flush is already due: an
   * idle service runs no timer for its log (each wake-up of an idle process
   * costs CPU). Armed again while a dropped-lines warning waits for stdout.
   */
  private arm(): void {
    if (this.timer !== undefined || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
      if (this.dropped > 0) this.arm();
    }, FLUSH_INTERVAL_MS).unref();
  }

  /**
   * Hands what is gathered to the sink; `done` (pino's `logger.flush(cb)`
   * passes it) is called once the sink has written it, so that what the
   * caller writes to stdout next comes after.
   */
  flush(done?: (err?: Error) => void): void {
    if (this.dropped > 0 && this.backlog === 0 && this.onDropped !== undefined) {
      // stdout caught up: say what it missed (the warning joins this batch).
      const dropped = this.dropped;
      this.dropped = 0;
      this.onDropped(dropped);
    }
    const chunk = this.closed ? undefined : this.take();
    if (chunk !== undefined) {
      if (this.backlog === 0) this.lastProgress = performance.now();
      this.backlog += Buffer.byteLength(chunk);
      this.sink.write(chunk);
    }
    if (done !== undefined) {
      this.waiting.push(done);
      this.settle();
    }
  }

  /**
   * Writes what the sink holds and what is gathered, synchronously and in
   * that order (pino calls it after a fatal line; the exit hook too),
   * waiting up to SYNC_FLUSH_MS for a full stdout; nothing when stdout is
   * stalled. A write the sink has under way (asynchronous) is not waited
   * for: it has as good as always reached the pipe by then.
   */
  flushSync(): void {
    if (this.closed) return;
    const chunk = this.take();
    if (this.stalled) {
      if (chunk !== undefined) this.drop(countLines(chunk));
      return;
    }
    const deadline = performance.now() + SYNC_FLUSH_MS;
    const sink = this.sink as unknown as { [SYNC_DEADLINE]?: number; fd: number };
    sink[SYNC_DEADLINE] = deadline;
    try {
      if (this.backlog > 0) {
        this.sink.flushSync();
        this.backlog = 0;
        this.lastProgress = performance.now();
      }
      if (chunk !== undefined) writeAllSync(sink.fd, Buffer.from(chunk), deadline);
    } catch {
      // stdout full past the deadline, or gone: what is left is lost
    } finally {
      delete sink[SYNC_DEADLINE];
    }
    this.settle();
  }

  /** Counts `lines` dropped: for the warning, and live in switchboard_log_lines_dropped_total. */
  private drop(lines: number): void {
    this.dropped += lines;
    this.arm();
    logLinesDroppedTotal.inc(lines);
  }

  /** The gathered lines joined (undefined when there are none), and the batch emptied. */
  private take(): string | undefined {
    if (this.lines.length === 0) return undefined;
    const chunk = this.lines.length === 1 ? this.lines[0]! : this.lines.join("");
    this.lines = [];
    this.pending = 0;
    return chunk;
  }
}

/** Writes all of `buf` to `fd` synchronously; a full non-blocking pipe (EAGAIN) is waited for until `deadline`. */
function writeAllSync(fd: number, buf: Buffer, deadline: number): void {
  for (let off = 0; off < buf.length; ) {
    try {
      off += writeSync(fd, buf, off, buf.length - off);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EAGAIN" || performance.now() >= deadline) throw err;
      Atomics.wait(PAUSE, 0, 0, 10);
    }
  }
}

const PAUSE = new Int32Array(new SharedArrayBuffer(4));

function countLines(data: string | Buffer): number {
  let n = 0;
  if (typeof data === "string") {
    for (let i = data.indexOf("\n"); i !== -1; i = data.indexOf("\n", i + 1)) n++;
  } else {
    for (let i = data.indexOf(10); i !== -1; i = data.indexOf(10, i + 1)) n++;
  }
  return n;
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
 * access-log lines under load), or by a timer armed by the first line
 * gathered when less is: at most FLUSH_INTERVAL_MS late.
 */
const MIN_WRITE_BYTES = 4096;
const FLUSH_INTERVAL_MS = 100;
/** stdout taking nothing this long, with lines waiting, is stalled: exit does not wait for it. */
const STALLED_MS = 1000;
/** The longest a synchronous flush waits for a full stdout. */
const SYNC_FLUSH_MS = 2000;

export type { Logger };
