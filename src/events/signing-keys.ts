/**
 * The call engine's memory of projects' webhook signing keys (signing.ts). Every call
 * signs the requests to its handler with its project's key, and reading the
 * key was one statement per call (a fifth of them in the SIP call bench).
 * A rotation must still apply at once, so the memory is kept the way the
 * SIP edge keeps users' credentials (src/voice/sip-users/credentials-cache.ts):
 *
 * - A rotation (and a project's deletion) runs
 *   `pg_notify(SIGNING_KEYS_CHANNEL, projectId)` in its transaction
 *   (`notifySigningKeyChange`); every replica listening on the same
 *   PostgreSQL forgets the project's key when it commits, and this process's
 *   memories are told after the commit (`signingKeyChangesOf(db).changed`).
 * - While a replica's listening connection is down nothing is served from
 *   memory or stored in it (and it is emptied), so a lost notification
 *   cannot leave an old key in use. On the embedded database one process
 *   owns the data and the in-process news is enough.
 * - A read that raced with a change is not stored, unknown projects are
 *   never kept, entries expire after `ttlMs` (10 minutes, a backstop): the
 *   rules of InvalidatedCache (src/db/invalidated-cache.ts).
 */
import { sql } from "drizzle-orm";
import { type Changes, changesPerDatabase } from "../db/changes.js";
import type { Db, DbOrTx } from "../db/client.js";
import { type CacheOptions, InvalidatedCache } from "../db/invalidated-cache.js";
import { type ChangeFeed, followChanges } from "../db/listen.js";
import type { Logger } from "../log.js";

/** The PostgreSQL notification channel of signing-key changes; payload: the project id. */
export const SIGNING_KEYS_CHANNEL = "switchboard_signing_keys";

/** In the changing transaction: every replica listening forgets the project's key on commit. */
export async function notifySigningKeyChange(tx: DbOrTx, projectId: string): Promise<void> {
  await tx.execute(sql`select pg_notify(${SIGNING_KEYS_CHANNEL}, ${projectId})`);
}

/** The in-process changes of `db`'s signing keys by project id (reported after the commit). */
export const signingKeyChangesOf: (db: object) => Changes<string> = changesPerDatabase<string>();

/** Reads a project's current key; undefined when there is no such project. */
export type SigningKeyRead = (projectId: string) => Promise<string | undefined>;

/** How long keys are remembered (10 minutes by default) and how many are kept (10,000). */
export type SigningKeyCacheOptions = CacheOptions;

export class SigningKeyCache {
  private readonly keys: InvalidatedCache<string | undefined>;

  constructor(
    private readonly read: SigningKeyRead,
    options: SigningKeyCacheOptions = {},
  ) {
    this.keys = new InvalidatedCache({
      ...options,
      ttlMs: options.ttlMs ?? 600_000,
      maxEntries: options.maxEntries ?? 10_000,
    });
  }

  get(projectId: string): Promise<string | undefined> {
    return this.keys.get(projectId, () => this.read(projectId));
  }

  /** Forgets a project's key, or every key. */
  invalidate(projectId: string | undefined): void {
    if (projectId === undefined) this.keys.clear();
    else this.keys.delete(projectId);
  }

  get size(): number {
    return this.keys.size;
  }

  /** Reads that reached the database (for tests and diagnostics). */
  get misses(): number {
    return this.keys.misses;
  }
}

/**
 * A memory of `db`'s signing keys, told of this process's changes and, on
 * PostgreSQL, of every replica's (a LISTEN connection of its own; `listen`
 * false: none, for the embedded database). `close` stops both.
 */
export function cachedSigningKeys(
  db: Db,
  read: SigningKeyRead,
  log: Logger,
  /** false on the embedded database: one process owns it (and its one session cannot LISTEN). */
  listen = true,
): { cache: SigningKeyCache; close(): Promise<void> } {
  let feed: ChangeFeed | undefined;
  const cache = new SigningKeyCache(read, { live: () => feed?.live() ?? true });
  feed = followChanges(db, {
    changes: signingKeyChangesOf(db),
    channel: SIGNING_KEYS_CHANNEL,
    invalidate: (id) => cache.invalidate(id),
    log,
    what: "signing key change listener",
    lostMessage: "signing key change listener disconnected: reading keys each time until it is back",
    listen,
  });
  return { cache, close: feed.close };
}
