/**
 * Token buckets by key, in memory: each key's bucket holds up to `burst`
 * tokens and gains `perSecond` a second; a request takes one. Time comes
 * from a monotonic clock (injected by tests), never the wall clock, so a
 * clock step cannot refill or drain buckets.
 */
import type { RateLimit } from "../../config.js";

/** Milliseconds from some fixed origin, never going back. */
export interface MonotonicClock {
  nowMs(): number;
}

export const monotonicClock: MonotonicClock = { nowMs: () => performance.now() };

interface Bucket {
  tokens: number;
  atMs: number;
}

/** Above this many buckets, full (idle) ones are dropped. */
const PRUNE_AT = 10_000;

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    readonly limit: RateLimit,
    private readonly clock: MonotonicClock,
  ) {}

  get enabled(): boolean {
    return this.limit.perSecond > 0;
  }

  /**
   * Takes a token from `key`'s bucket: 0 when there was one, otherwise the
   * milliseconds until there will be (nothing taken).
   */
  take(key: string): number {
    if (!this.enabled) return 0;
    const now = this.clock.nowMs();
    const { perSecond, burst } = this.limit;
    let bucket = this.buckets.get(key);
    if (bucket === undefined) {
      if (this.buckets.size >= PRUNE_AT) this.prune(now);
      bucket = { tokens: burst, atMs: now };
      this.buckets.set(key, bucket);
    } else {
      bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.atMs) / 1000) * perSecond);
      bucket.atMs = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - bucket.tokens) / perSecond) * 1000);
  }

  /** Gives back a token taken by `take` (a later limit refused the request). */
  refund(key: string): void {
    const bucket = this.buckets.get(key);
    if (bucket !== undefined) bucket.tokens = Math.min(this.limit.burst, bucket.tokens + 1);
  }

  private prune(now: number): void {
    const { perSecond, burst } = this.limit;
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.atMs) / 1000) * perSecond >= burst) this.buckets.delete(key);
    }
  }
}
