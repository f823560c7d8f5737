/**
 * Timers in seconds of call time. The telephony code never calls setTimeout
 * or reads the system time itself: it asks a Scheduler, so tests run a
 * 30-second call without waiting (test/support/scheduler.ts advances a
 * TestClock and fires due timers in order) and the carrier simulator can
 * run faster than real time (SIMULATOR_TIME_SCALE).
 */
import type { Clock } from "../clock.js";

/** A pending timer. */
export interface Timer {
  /** Stops the timer if it has not fired; does nothing otherwise. */
  cancel(): void;
}

export interface Scheduler {
  /** The current time (the injected clock). */
  now(): Date;
  /** Runs `fn` after `seconds` of call time (0 means as soon as possible, never synchronously). */
  after(seconds: number, fn: () => void): Timer;
  /**
   * Seconds of the clock (`now`) per second of call time: 1 when timers run
   * in the clock's time, SIMULATOR_TIME_SCALE on a scaled simulator.
   */
  readonly timeScale: number;
}

/**
 * Real timers: `seconds` of call time take `seconds * timeScale` seconds of
 * wall-clock time (timeScale 1 = real time, 0.001 = 1000 times faster).
 * Timers do not keep the process alive (`unref`).
 */
export class RealScheduler implements Scheduler {
  constructor(
    private readonly clock: Clock,
    readonly timeScale = 1,
  ) {
    if (!(timeScale > 0) || !Number.isFinite(timeScale)) {
      throw new RangeError(`timeScale must be a positive number, got ${timeScale}`);
    }
  }

  now(): Date {
    return this.clock.now();
  }

  after(seconds: number, fn: () => void): Timer {
    const handle = setTimeout(fn, Math.max(0, seconds * 1000 * this.timeScale));
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  }
}
