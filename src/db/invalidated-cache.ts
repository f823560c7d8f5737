/**
 * A memory of database reads that a change must reach at once, the part
 * the caches of API keys (auth/credential-cache.ts), SIP users' credentials
 * (voice/sip-users/credentials-cache.ts) and webhook signing keys
 * (events/signing-keys.ts) share. Each is told of changes by this
 * process's news (changes.ts) and other replicas' NOTIFY (listen.ts), and
 * forgets what changed; this class makes sure a forgotten answer does not
 * come back:
 *
 * - While `live()` is false (the listening connection is down, so a
 *   change may go unheard) nothing is served or stored.
 * - A read that raced with an invalidation is not stored: a `Generation`,
 *   bumped by every removal from outside, must be unchanged between the
 *   read and the store, and live() true before and after. Caches whose
 *   invalidations cover each other (a domain's users and whether it has
 *   any) share one Generation, so forgetting one kind stops a racing read
 *   of the other.
 * - Undefined answers (unknown keys) are not stored: a new
 *   row works at once and random names cannot fill the memory.
 * - Entries expire after `ttlMs` by a monotonic clock (a backstop, not the
 *   mechanism); at most `maxEntries` are kept, the oldest stored first
 *   dropped first.
 */

export interface CacheOptions {
  /** How long an entry may be served, ms (a backstop to invalidation). */
  ttlMs?: number;
  /** At most this many entries are kept (the oldest go first). */
  maxEntries?: number;
  /** Monotonic milliseconds. */
  now?: () => number;
  /**
   * Whether invalidations are known to reach this cache now (the
   * PostgreSQL listener is connected). While false, nothing is served from
   * or stored in the cache. Default: always (one process owns the database).
   */
  live?: () => boolean;
}

export interface InvalidatedCacheOptions extends CacheOptions {
  ttlMs: number;
  maxEntries: number;
  /** Shared with the caches a read of this one must not outrace (default: its own). */
  generation?: Generation;
}

/** Counts invalidations: a read that saw the count change does not store its answer. */
export class Generation {
  private count = 0;

  get current(): number {
    return this.count;
  }

  bump(): void {
    this.count++;
  }
}

interface Entry<V> {
  value: V;
  expires: number;
}

export class InvalidatedCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly live: () => boolean;
  private readonly generation: Generation;
  private missCount = 0;

  constructor(options: InvalidatedCacheOptions) {
    this.ttlMs = options.ttlMs;
    this.maxEntries = options.maxEntries;
    this.now = options.now ?? (() => performance.now());
    this.live = options.live ?? (() => true);
    this.generation = options.generation ?? new Generation();
  }

  /** The value of `key` from memory when it may be served, else `load`'s answer (stored by the rules above). */
  get(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.live() ? this.fresh(key) : undefined;
    if (hit !== undefined) return Promise.resolve(hit.value);
    return this.readThrough(load, (value, store) => {
      if (value !== undefined) store(key, value);
    });
  }

  /** The value of `key` when it is in memory and may be served now (else undefined); no read. */
  peek(key: string): V | undefined {
    return this.live() ? this.fresh(key)?.value : undefined;
  }

  /**
   * Runs `read` (a miss) for answers that are not one key's, e.g. several
   * keys at once; `keep` stores from its answer with `store`, called only
   * when the answer may be kept.
   */
  async readThrough<R>(
    read: () => Promise<R>,
    keep: (answer: R, store: (key: string, value: V) => void) => void,
  ): Promise<R> {
    const live = this.live();
    const generation = this.generation.current;
    this.missCount++;
    const answer = await read();
    if (live && this.live() && generation === this.generation.current) keep(answer, this.store);
    return answer;
  }

  /** Forgets `key`; no read under way (of any key sharing the Generation) is stored. */
  delete(key: string): void {
    this.generation.bump();
    this.entries.delete(key);
  }

  /** Forgets every key `test` accepts; no read under way is stored. */
  deleteWhere(test: (key: string) => boolean): void {
    this.generation.bump();
    for (const key of this.entries.keys()) if (test(key)) this.entries.delete(key);
  }

  /** Forgets everything; no read under way is stored. */
  clear(): void {
    this.generation.bump();
    this.entries.clear();
  }

  /** Whether `key` is in memory now (expired or not). */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** Entries in memory now. */
  get size(): number {
    return this.entries.size;
  }

  /** Reads that reached the inner store (for tests and diagnostics). */
  get misses(): number {
    return this.missCount;
  }

  /** The entry of `key` unless it expired (then it is dropped). */
  private fresh(key: string): Entry<V> | undefined {
    const hit = this.entries.get(key);
    if (hit === undefined || hit.expires > this.now()) return hit;
    this.entries.delete(key);
    return undefined;
  }

  /** Sets `key`, dropping the oldest entry when full (a key stored again keeps its place). */
  private readonly store = (key: string, value: V): void => {
    if (!this.entries.has(key) && this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, expires: this.now() + this.ttlMs });
  };
}
