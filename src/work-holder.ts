/**
 * The process that holds unfinished work: the audio of a PENDING recording,
 * a PENDING transcription being made. There is one per call engine, with
 * the engine's id.
 *
 * - The rows it creates carry its id (`engine_id`), and it keeps the ids it
 *   is still working on (`hold` before the row's insert, `release` once the
 *   row's end is written, or the work gave up).
 * - A PENDING row that no process works on ends FAILED at the next sweep
 *   (src/voice/calls/liveness.ts): its holder is gone (stopped, or silent
 *   for 3 heartbeats), or lives but released it unfinished (its insert
 *   failed although it may have committed; its processing threw).
 * - While the holder runs, writing a row's end is tried again for as long
 *   as the database fails; once it has stopped, for BACKGROUND_RETRY_MS
 *   from the first try (a shutdown does not wait longer).
 */
import {
  BACKGROUND_RETRY_MS,
  type RetryOptions,
  retryTransientFor,
  retryWhileTransient,
} from "./db/transient.js";

export class WorkHolder {
  private readonly held = new Set<string>();
  private stopped = false;

  /** `retryMs`: how long an end is tried again once the holder has stopped (tests shorten it). */
  constructor(
    readonly id: string,
    private readonly retryMs = BACKGROUND_RETRY_MS,
  ) {}

  hold(id: string): void {
    this.held.add(id);
  }

  release(id: string): void {
    this.held.delete(id);
  }

  holds(id: string): boolean {
    return this.held.has(id);
  }

  /** The engine is stopping: ends are tried again for a bounded time only. */
  stop(): void {
    this.stopped = true;
  }

  /** A retry's `keepGoing`, from now: while the holder runs, or for `retryMs`. */
  keepGoing(): () => boolean {
    const deadline = Date.now() + this.retryMs;
    return () => !this.stopped || Date.now() < deadline;
  }
}

/**
 * `attempt`, made again while the database fails on the way: for as long as
 * `holder` runs (see above), or, without a holder, for BACKGROUND_RETRY_MS.
 */
export function retryHeld<T>(
  holder: WorkHolder | undefined,
  attempt: (n: number) => Promise<T>,
  onRetry: RetryOptions["onRetry"],
): Promise<T> {
  return holder === undefined
    ? retryTransientFor(attempt, onRetry)
    : retryWhileTransient(attempt, { keepGoing: holder.keepGoing(), onRetry });
}
