/** A clock tests control: it stands still until told to move. */
import type { Clock } from "../../src/clock.js";

export class TestClock implements Clock {
  private ms: number;

  constructor(start: Date | string = "2026-01-01T00:00:00.000Z") {
    this.ms = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.ms);
  }

  /** Moves the clock forward by `ms` milliseconds. */
  advance(ms: number): void {
    this.ms += ms;
  }

  set(time: Date | string): void {
    this.ms = new Date(time).getTime();
  }
}
