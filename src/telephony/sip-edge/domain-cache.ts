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
import { InvalidatedCache } from "../../db/invalidated-cache.js";
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

/** The rules of InvalidatedCache (src/db/invalidated-cache.ts), with concurrent reads of one domain shared. */
export class DomainCache implements DomainLookup {
  private readonly rows: InvalidatedCache<SipDomainRow>;
  private readonly reading = new Map<string, Promise<SipDomainRow | undefined>>();

  constructor(
    private readonly inner: DomainLookup,
    options: DomainCacheOptions = {},
  ) {
    this.rows = new InvalidatedCache({
      ttlMs: options.ttlMs ?? DEFAULT_DOMAIN_TTL_MS,
      maxEntries: options.maxEntries ?? 10_000,
      ...(options.now === undefined ? {} : { now: options.now }),
    });
  }

  /** Reads that reached the database (for tests and diagnostics). */
  get misses(): number {
    return this.rows.misses;
  }

  /** Forgets a domain (undefined: every one), e.g. when this process changed it; a read under way is not stored. */
  forget(id: string | undefined): void {
    if (id === undefined) this.rows.clear();
    else this.rows.delete(id);
  }

  findById(id: string): Promise<SipDomainRow | undefined> {
    const hit = this.rows.peek(id);
    if (hit !== undefined) return Promise.resolve(hit);
    const pending = this.reading.get(id);
    if (pending !== undefined) return pending;
    const read = this.rows
      .readThrough(
        () => this.inner.findById(id),
        (row, store) => {
          if (row !== undefined) store(id, row);
        },
      )
      .finally(() => this.reading.delete(id));
    this.reading.set(id, read);
    return read;
  }
}
