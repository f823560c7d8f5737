/**
 * A scheduler tests drive: time moves only in `advance`, which moves the
 * TestClock to each due timer in turn (earliest first, ties in the order
 * they were set), fires it, and lets the promise chains it started settle
 * before the next one. Nothing sleeps, but time waits for speech: while the
 * process's speech engine is synthesizing (a `<Say>` being prepared), time
 * does not move. A call's clock is simulated, so a synthesis of a fraction
 * of a second of a busy machine's CPU would otherwise pass as seconds of
 * call time, and a callee's hang-up cut a Say that a real call would have
 * heard whole.
 */
import { CachedSpeech } from "../../src/media/speech/cache.js";
import { sharedSpeech } from "../../src/media/speech/index.js";
import type { Scheduler, Timer } from "../../src/telephony/scheduler.js";
import { TestClock } from "./clock.js";

interface Pending {
  dueMs: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** Until the process's speech engine has no synthesis in flight. */
async function speechSettled(): Promise<void> {
  const speech = sharedSpeech();
  if (speech instanceof CachedSpeech) await speech.settled();
}

/** Lets promise continuations (and their setImmediate follow-ups) run. */
export async function settle(rounds = 3): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
}

export class ManualScheduler implements Scheduler {
  private pending: Pending[] = [];
  private seq = 0;
  /** Timers run on the clock's own time. */
  readonly timeScale = 1;

  constructor(readonly clock: TestClock = new TestClock()) {}

  now(): Date {
    return this.clock.now();
  }

  after(seconds: number, fn: () => void): Timer {
    const p: Pending = {
      dueMs: this.clock.now().getTime() + Math.max(0, Math.round(seconds * 1000)),
      seq: this.seq++,
      fn,
      cancelled: false,
    };
    this.pending.push(p);
    return {
      cancel: () => {
        p.cancelled = true;
      },
    };
  }

  /** Timers set and not yet fired or cancelled. */
  get pendingCount(): number {
    return this.pending.filter((p) => !p.cancelled).length;
  }

  /** Seconds since `start` on the clock. */
  elapsed(start: Date): number {
    return (this.clock.now().getTime() - start.getTime()) / 1000;
  }

  /** Moves time forward by `seconds`, firing every timer that falls due on the way. */
  async advance(seconds: number): Promise<void> {
    const target = this.clock.now().getTime() + Math.round(seconds * 1000);
    await settle();
    await speechSettled();
    for (;;) {
      this.pending = this.pending.filter((p) => !p.cancelled);
      const next = this.pending
        .filter((p) => p.dueMs <= target)
        .sort((a, b) => a.dueMs - b.dueMs || a.seq - b.seq)[0];
      if (next === undefined) break;
      this.pending = this.pending.filter((p) => p !== next);
      this.clock.set(new Date(Math.max(next.dueMs, this.clock.now().getTime())));
      next.fn();
      await settle();
      await speechSettled();
    }
    this.clock.set(new Date(target));
  }
}
