/**
 * Non-INVITE server transactions in their Completed state on an unreliable
 * transport (RFC 3261 §17.2.2): until timer J (64*T1) a retransmission of
 * the request gets the final response again, and nothing else happens.
 *
 * They are kept here as just that: the response's bytes and where it goes,
 * under the transaction's key. The transaction itself — its parsed request,
 * its user's closures, its timers — ends as soon as it has answered. Every
 * REGISTER and its digest challenge spend 32 s in this state: held whole
 * that long, they were promoted to V8's old generation by the thousand, and
 * collecting them was a quarter of a registrar's CPU (bench:sip, 2,000 users:
 * 1.24-1.29 ms per challenged REGISTER with them, 0.97 without).
 *
 * All entries live equally long, so they expire in the order they came:
 * one queue, one timer. The timer only frees memory, and not for each
 * entry: a registrar's entries expire ~30 ms apart, and a timer per entry
 * was a wake-up of the process per REGISTER (a third of them). It sweeps
 * at most every SWEEP_SECONDS; an entry past timer J is never answered
 * from, nor counted, in between (`absorb` and `size` sweep first).
 */
import type { Scheduler, Timer } from "../telephony/scheduler.js";
import type { Channel } from "./transaction.js";

/** The least time between two sweeps (seconds of call time). */
const SWEEP_SECONDS = 1;

interface Entry {
  key: string;
  /**
   * The response's bytes as a latin1 string (the same bytes back when sent
   * again): a small Buffer is a slice of an 8 KiB slab shared with others,
   * and keeping thousands of them for 32 s kept their slabs too.
   */
  last: string;
  channel: Channel;
  /** The scheduler's clock, ms. */
  expiresMs: number;
}

export class CompletedTransactions {
  private readonly byKey = new Map<string, Entry>();
  private queue: Entry[] = [];
  private head = 0;
  private timer: Timer | undefined;

  constructor(
    private readonly scheduler: Scheduler,
    /** Timer J, in seconds of call time. */
    private readonly seconds: number,
  ) {}

  /** Keeps `last` for retransmissions of the request whose transaction key is `key`. */
  add(key: string, last: Buffer, channel: Channel): void {
    const entry = {
      key,
      last: last.toString("latin1"),
      channel,
      expiresMs: this.clockMs() + this.seconds * this.scheduler.timeScale * 1000,
    };
    this.byKey.set(key, entry);
    this.queue.push(entry);
    if (this.timer === undefined) this.arm(this.seconds);
  }

  /** Sends the final response again for a retransmitted request; false when no transaction of `key` completed. */
  absorb(key: string): boolean {
    const entry = this.byKey.get(key);
    if (entry === undefined) return false;
    if (entry.expiresMs <= this.clockMs()) {
      this.sweep(); // past timer J: a new request
      return false;
    }
    entry.channel.send(Buffer.from(entry.last, "latin1"));
    return true;
  }

  get size(): number {
    this.sweep();
    return this.byKey.size;
  }

  clear(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.byKey.clear();
    this.queue = [];
    this.head = 0;
  }

  private clockMs(): number {
    return this.scheduler.now().getTime();
  }

  private arm(seconds: number): void {
    this.timer = this.scheduler.after(seconds, () => {
      this.timer = undefined;
      this.expire();
    });
  }

  private expire(): void {
    const now = this.sweep();
    const next = this.queue[this.head];
    if (next !== undefined) {
      this.arm(Math.max(SWEEP_SECONDS, (next.expiresMs - now) / 1000 / this.scheduler.timeScale));
    }
  }

  /** Drops the entries past timer J; returns the clock it read. */
  private sweep(): number {
    const now = this.clockMs();
    while (this.head < this.queue.length && this.queue[this.head]!.expiresMs <= now) {
      const entry = this.queue[this.head++]!;
      if (this.byKey.get(entry.key) === entry) this.byKey.delete(entry.key);
    }
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    return now;
  }
}
