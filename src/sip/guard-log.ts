/**
 * Once per source and reason in an interval: the edge's refusal log lines
 * (scanners, malformed requests, digest failures, domain refusals) go
 * through `first`, so a flood from one address is one line a minute, not a
 * line a packet (the counters in /metrics still count every refusal).
 * Bounded: at most `maxKeys` keys; keys older than the interval are swept.
 */
export class RefusalLogThrottle {
  private readonly last = new Map<string, number>();
  private nextSweep: number;

  constructor(
    private readonly options: {
      /** How long a key stays quiet after its line (60 s). */
      intervalMs?: number;
      maxKeys?: number;
      /** Monotonic milliseconds. */
      now?: () => number;
    } = {},
  ) {
    this.nextSweep = this.now() + this.interval;
  }

  private get interval(): number {
    return this.options.intervalMs ?? 60_000;
  }

  private now(): number {
    return this.options.now?.() ?? performance.now();
  }

  /** Whether a refusal of `reason` from `address` is the first in the interval (log it). */
  first(address: string, reason: string): boolean {
    const now = this.now();
    if (now >= this.nextSweep) {
      this.nextSweep = now + this.interval;
      for (const [key, at] of this.last) if (now - at >= this.interval) this.last.delete(key);
    }
    const key = `${address} ${reason}`;
    const at = this.last.get(key);
    if (at !== undefined && now - at < this.interval) return false;
    this.last.delete(key);
    if (this.last.size >= (this.options.maxKeys ?? 10_000)) {
      const oldest = this.last.keys().next();
      if (!oldest.done) this.last.delete(oldest.value);
    }
    this.last.set(key, now);
    return true;
  }

  /** Keys remembered now (for tests). */
  get size(): number {
    return this.last.size;
  }
}
