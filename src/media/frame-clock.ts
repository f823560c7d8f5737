/**
 * The frame clock: paces anything that sends media a fixed frame at a time
 * (a media stream's 0.16 s chunks, RTP's 20 ms packets). Frame boundaries
 * are fixed from the start, boundary k (k = 1, 2, ...) falling at
 * `startMs + k * frameMs` on the clock, never "the last wake-up plus a
 * frame", so late timers cause no drift. Each wake-up hands out every
 * boundary reached by then, in order, one call each — a timer late by more
 * than a frame yields several boundaries at once, never a longer frame —
 * and sets the next wake-up at the next boundary (the first whole ms of
 * the clock at or after it). A wake-up that comes early hands out nothing
 * and waits again.
 *
 * Time: the clock is read in milliseconds (`nowMs`, the service clock) and
 * timers run in seconds of their own time, `timeScale` clock seconds each
 * (a Scheduler's: SIMULATOR_TIME_SCALE for the carrier simulator, 1 for real
 * media). A frame of `frameSeconds` of timer time is therefore
 * `frameSeconds * 1000 * timeScale` ms of the clock.
 *
 * One clock may drive many streams (its callback fanning out): that is the
 * one pacing clock of DESIGN.md's RTP media.
 */
import type { Scheduler, Timer } from "../telephony/scheduler.js";

/** What a frame clock runs on. */
export interface FrameTimers {
  /** The clock, in ms. */
  nowMs(): number;
  /** Runs `fn` once after `seconds` of timer time (never synchronously). */
  after(seconds: number, fn: () => void): Timer;
  /** Clock seconds per second of timer time (Scheduler.timeScale). */
  readonly timeScale: number;
}

/** A Scheduler as frame timers. */
export function schedulerTimers(scheduler: Scheduler): FrameTimers {
  return {
    nowMs: () => scheduler.now().getTime(),
    after: (seconds, fn) => scheduler.after(seconds, fn),
    timeScale: scheduler.timeScale,
  };
}

export class FrameClock {
  /** Where boundary 0 is, on the clock (ms). */
  readonly startMs: number;
  /** Length of a frame on the clock (ms). */
  readonly frameMs: number;
  /** Boundaries handed out: 1 to `passed`. */
  private passed = 0;
  private timer: Timer | undefined;
  private stopped = false;

  /**
   * Starts at `startMs` (default: now) and calls `onBoundary(k, atMs)` for
   * each boundary k as it is reached, until stop(). Nothing is called
   * synchronously.
   */
  constructor(
    private readonly timers: FrameTimers,
    frameSeconds: number,
    private readonly onBoundary: (k: number, atMs: number) => void,
    startMs = timers.nowMs(),
  ) {
    if (!(frameSeconds > 0) || !Number.isFinite(frameSeconds)) {
      throw new RangeError(`frameSeconds must be a positive number, got ${frameSeconds}`);
    }
    if (!(timers.timeScale > 0) || !Number.isFinite(timers.timeScale)) {
      throw new RangeError(`timeScale must be a positive number, got ${timers.timeScale}`);
    }
    this.startMs = startMs;
    this.frameMs = frameSeconds * 1000 * timers.timeScale;
    this.arm();
  }

  /** The time of boundary `k` on the clock (ms). */
  boundaryMs(k: number): number {
    return this.startMs + k * this.frameMs;
  }

  /** The last boundary reached at `nowMs` (0 before the first). */
  reached(nowMs: number): number {
    let k = Math.max(0, Math.floor((nowMs - this.startMs) / this.frameMs));
    // Division can land a hair either side of a boundary: settle on boundaryMs itself.
    while (k > 0 && this.boundaryMs(k) > nowMs) k--;
    while (this.boundaryMs(k + 1) <= nowMs) k++;
    return k;
  }

  /** Boundaries handed out so far. */
  get boundaries(): number {
    return this.passed;
  }

  /**
   * Hands out, in order, the boundaries reached by `nowMs` that were not yet
   * (the wake-ups do this; a media end calls it with the end's time to
   * deliver the frames that came due before it). Stops early when
   * `onBoundary` stops the clock.
   */
  catchUp(nowMs: number): void {
    const last = this.reached(nowMs);
    while (!this.stopped && this.passed < last) {
      this.passed++;
      this.onBoundary(this.passed, this.boundaryMs(this.passed));
    }
  }

  /** No boundary is handed out after this. Idempotent. */
  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
  }

  private arm(): void {
    if (this.stopped) return;
    // The clock reads whole ms: a boundary between two readings is reached at the later one.
    const waitMs = Math.max(0, Math.ceil(this.boundaryMs(this.passed + 1) - this.timers.nowMs() - 1e-9));
    this.timer = this.timers.after(waitMs / 1000 / this.timers.timeScale, () => this.wake());
  }

  private wake(): void {
    this.timer = undefined;
    if (this.stopped) return;
    this.catchUp(this.timers.nowMs());
    this.arm();
  }
}
