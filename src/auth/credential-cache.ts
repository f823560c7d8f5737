/**
 * A short cache of API keys in front of the credential store, so a request
 * does not cost a database round trip to authenticate, that still stops a
 * revoked, disabled, rebound or deleted key at once:
 *
 * - Every change of a key (and every project deletion, which drops bindings)
 *   calls `CredentialChanges.changed()` after its transaction commits: this
 *   replica's caches forget the key before the change's answer is sent.
 * - The same transaction runs `pg_notify(CREDENTIALS_CHANNEL, key id)`
 *   (`notifyCredentialChange`), delivered to every replica listening on the
 *   same PostgreSQL when it commits (credential-listener.ts), which forget it
 *   too. While a replica's listening connection is down, its cache is not
 *   used at all (and is emptied), so a lost notification cannot leave a
 *   revoked key cached.
 * - A lookup that raced with an invalidation is not stored: a generation
 *   counter, bumped by every invalidation, must be unchanged between the
 *   read and the store.
 * - Entries also expire after `ttlMs` (a backstop, not the mechanism).
 *
 * Unknown keys are never cached (a new key works at once; random secrets
 * cannot fill the cache). The same goes for the operator's project checks:
 * only projects found to exist are remembered, and a project deletion
 * empties the cache.
 */
import { sql } from "drizzle-orm";
import { type Changes, changesPerDatabase } from "../db/changes.js";
import type { DbOrTx } from "../db/client.js";
import type { StoredAccessToken } from "../oauth/access-tokens-repository.js";
import type { CredentialStore, StoredKey } from "./interceptor.js";

/** The PostgreSQL notification channel of credential changes; payload: the key id, or `*` for all. */
export const CREDENTIALS_CHANNEL = "switchboard_credentials";

/** The payload meaning "forget every key" (a project was deleted). */
export const ALL_KEYS = "*";

/** In the changing transaction: tells every replica listening to forget `keyId` (or every key) on commit. */
export async function notifyCredentialChange(tx: DbOrTx, keyId: string | undefined): Promise<void> {
  await tx.execute(sql`select pg_notify(${CREDENTIALS_CHANNEL}, ${keyId ?? ALL_KEYS})`);
}

/** This process's fan-out of credential changes (a key id, or undefined for every key). */
export type CredentialChanges = Changes<string>;

/**
 * The in-process changes of `db`: what the repositories report to and every
 * cache on that database object listens to (apps on separate connections to
 * one PostgreSQL are told by NOTIFY instead).
 */
export const credentialChangesOf: (db: DbOrTx) => CredentialChanges = changesPerDatabase<string>();

export interface CredentialCacheOptions {
  /** How long an entry may be served, ms (a backstop to invalidation). */
  ttlMs?: number;
  /** At most this many keys are kept (the oldest go first). */
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

interface Entry {
  key: StoredKey;
  expires: number;
}

export class CachingCredentialStore implements CredentialStore {
  private readonly entries = new Map<string, Entry>();
  /** Projects seen to exist, with when that expires. */
  private readonly projects = new Map<string, number>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly live: () => boolean;
  /** Bumped by every invalidation: a lookup that saw it change does not store its answer. */
  private generation = 0;
  /** Lookups that reached the inner store (for tests and diagnostics). */
  misses = 0;

  constructor(
    private readonly inner: CredentialStore,
    options: CredentialCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 10_000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? (() => performance.now());
    this.live = options.live ?? (() => true);
  }

  /**
   * Service accounts' access tokens are not cached: each request reads the
   * token with its account and key, so disabling either refuses it at once
   * on every replica without an invalidation message.
   */
  findAccessToken(tokenId: string): Promise<StoredAccessToken | undefined> {
    return this.inner.findAccessToken(tokenId);
  }

  /** The key when it is cached (and may be served) now; no lookup. */
  cachedApiKey(keyId: string): StoredKey | undefined {
    const hit = this.entries.get(keyId);
    if (hit === undefined || !this.live()) return undefined;
    if (hit.expires > this.now()) return hit.key;
    this.entries.delete(keyId);
    return undefined;
  }

  async findApiKey(keyId: string): Promise<StoredKey | undefined> {
    const live = this.live();
    if (live) {
      const hit = this.entries.get(keyId);
      if (hit !== undefined) {
        if (hit.expires > this.now()) return hit.key;
        this.entries.delete(keyId);
      }
    }
    const generation = this.generation;
    this.misses++;
    const key = await this.inner.findApiKey(keyId);
    if (key !== undefined && live && this.live() && generation === this.generation) {
      remember(this.entries, keyId, { key, expires: this.now() + this.ttlMs }, this.maxEntries);
    }
    return key;
  }

  async missingProjects(ids: string[]): Promise<string[]> {
    const live = this.live();
    const now = this.now();
    if (live && ids.every((id) => (this.projects.get(id) ?? 0) > now)) return [];
    const generation = this.generation;
    this.misses++;
    const missing = await this.inner.missingProjects(ids);
    if (live && this.live() && generation === this.generation) {
      const expires = this.now() + this.ttlMs;
      for (const id of ids) if (!missing.includes(id)) remember(this.projects, id, expires, this.maxEntries);
    }
    return missing;
  }

  /** Forgets `keyId`, or every key and project. */
  invalidate(keyId: string | undefined): void {
    this.generation++;
    if (keyId === undefined) {
      this.entries.clear();
      this.projects.clear();
    } else {
      this.entries.delete(keyId);
    }
  }

  /** Whether `keyId` is cached now. */
  has(keyId: string): boolean {
    return this.entries.has(keyId);
  }

  /** Keys cached now. */
  get size(): number {
    return this.entries.size;
  }
}

/** Sets `key` in `map`, dropping the oldest entry when full. */
function remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  if (!map.has(key) && map.size >= max) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}
