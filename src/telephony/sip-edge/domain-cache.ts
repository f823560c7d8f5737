/**
 * A moment's memory of SIP domain rows for the edge. A phone's REGISTER (and
 * an INVITE from a SIP user) comes twice within milliseconds: once to be
 * challenged, once with its answer; both need the domain, and without this
 * each read it from the database. Rows found are kept for `ttlMs` (2 s by
 * default), so a change to a domain (allow_register, the termination mode, a
 * deletion) reaches this replica's edge within that time; unknown domains
 * are never kept (a domain just created works at once, and random names
 * cannot fill the memory). At most `maxEntries` rows, the oldest dropped
 * first. Two reads of one domain at once share the database read. A change
 * this process makes is forgotten at once (`forget`, which the edge calls
 * on sipDomainChangesOf); a read that began before it is not stored.
 *
 * Call resolution (SipDomainsDomain.resolveSipCall: authorization rules 1-5)
 * reads through it too, so an INVITE reads its domain once, not twice.
 */
import type { SipDomainRow } from "../../db/schema/index.js";

export interface DomainLookup {
  findById(id: string): Promise<SipDomainRow | undefined>;
}

export interface DomainCacheOptions {
  ttlMs?: number;
  maxEntries?: number;
  /** Monotonic milliseconds. */
  now?: () => number;
}

export const DEFAULT_DOMAIN_TTL_MS = 2000;

export class DomainCache implements DomainLookup {
  private readonly entries = new Map<string, { row: SipDomainRow; expires: number }>();
  private readonly reading = new Map<string, Promise<SipDomainRow | undefined>>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  /** Reads that reached the database (for tests and diagnostics). */
  misses = 0;
  /** Bumped by `forget`: a read that began before is not stored. */
  private generation = 0;

  constructor(
    private readonly inner: DomainLookup,
    options: DomainCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? DEFAULT_DOMAIN_TTL_MS;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? (() => performance.now());
  }

  /** Forgets a domain (undefined: every one), e.g. when this process changed it; a read under way is not stored. */
  forget(id: string | undefined): void {
    this.generation++;
    if (id === undefined) this.entries.clear();
    else this.entries.delete(id);
  }

  findById(id: string): Promise<SipDomainRow | undefined> {
    const hit = this.entries.get(id);
    if (hit !== undefined) {
      if (hit.expires > this.now()) return Promise.resolve(hit.row);
      this.entries.delete(id);
    }
    const pending = this.reading.get(id);
    if (pending !== undefined) return pending;
    this.misses++;
    const generation = this.generation;
    const read = this.inner
      .findById(id)
      .then((row) => {
        if (row !== undefined && this.ttlMs > 0 && generation === this.generation) {
          if (this.entries.size >= this.maxEntries) {
            const oldest = this.entries.keys().next();
            if (!oldest.done) this.entries.delete(oldest.value);
          }
          this.entries.set(id, { row, expires: this.now() + this.ttlMs });
        }
        return row;
      })
      .finally(() => this.reading.delete(id));
    this.reading.set(id, read);
    return read;
  }
}
