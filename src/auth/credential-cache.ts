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
 *   same PostgreSQL when it commits (`followChanges`, src/db/listen.ts, wired
 *   in server.ts), which forget it too. While a replica's listening
 *   connection is down, its cache is not used at all (and is emptied), so a
 *   lost notification cannot leave a revoked key cached.
 * - A lookup that raced with an invalidation of a key or project is not
 *   stored, and entries expire after `ttlMs` (10 s, a backstop): the rules
 *   of InvalidatedCache (src/db/invalidated-cache.ts).
 *
 * Unknown keys are never cached (a new key works at once; random secrets
 * cannot fill the cache). The same goes for the operator's project checks:
 * only projects found to exist are remembered, and a project deletion
 * empties the cache.
 */
import { sql } from "drizzle-orm";
import { type Changes, changesPerDatabase } from "../db/changes.js";
import type { DbOrTx } from "../db/client.js";
import { type CacheOptions, Generation, InvalidatedCache } from "../db/invalidated-cache.js";
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

/** How long keys are served (10 s by default) and how many are kept (10,000); `live`: the listener is connected. */
export type CredentialCacheOptions = CacheOptions;

export class CachingCredentialStore implements CredentialStore {
  private readonly keys: InvalidatedCache<StoredKey | undefined>;
  /** Projects seen to exist; forgetting a key stops a racing project check from being stored too. */
  private readonly projects: InvalidatedCache<true>;

  constructor(
    private readonly inner: CredentialStore,
    options: CredentialCacheOptions = {},
  ) {
    const shared = {
      ...options,
      ttlMs: options.ttlMs ?? 10_000,
      maxEntries: options.maxEntries ?? 10_000,
      generation: new Generation(),
    };
    this.keys = new InvalidatedCache(shared);
    this.projects = new InvalidatedCache(shared);
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
    return this.keys.peek(keyId);
  }

  findApiKey(keyId: string): Promise<StoredKey | undefined> {
    return this.keys.get(keyId, () => this.inner.findApiKey(keyId));
  }

  async missingProjects(ids: string[]): Promise<string[]> {
    if (ids.every((id) => this.projects.peek(id) !== undefined)) return [];
    return this.projects.readThrough(
      () => this.inner.missingProjects(ids),
      (missing, store) => {
        for (const id of ids) if (!missing.includes(id)) store(id, true);
      },
    );
  }

  /** Forgets `keyId`, or every key and project. */
  invalidate(keyId: string | undefined): void {
    if (keyId === undefined) {
      this.keys.clear();
      this.projects.clear();
    } else {
      this.keys.delete(keyId);
    }
  }

  /** Whether `keyId` is cached now. */
  has(keyId: string): boolean {
    return this.keys.has(keyId);
  }

  /** Keys cached now. */
  get size(): number {
    return this.keys.size;
  }

  /** Lookups that reached the inner store (for tests and diagnostics). */
  get misses(): number {
    return this.keys.misses + this.projects.misses;
  }
}
