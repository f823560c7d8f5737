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
 * - A read that raced with a change is not stored (a generation counter).
 * - Unknown projects are never kept; entries expire after `ttlMs`
 *   (10 minutes, a backstop), at most `maxEntries` are kept.
 */
import { sql } from "drizzle-orm";
import { type Changes, changesPerDatabase } from "../db/changes.js";
import type { Db, DbOrTx } from "../db/client.js";
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

export interface SigningKeyCacheOptions {
  ttlMs?: number;
  maxEntries?: number;
  /** Monotonic milliseconds. */
  now?: () => number;
  /** Whether invalidations reach this cache now; while false nothing is served or stored. */
  live?: () => boolean;
}

export class SigningKeyCache {
  private readonly entries = new Map<string, { key: string; expires: number }>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly live: () => boolean;
  private generation = 0;
  /** Reads that reached the database (for tests and diagnostics). */
  misses = 0;

  constructor(
    private readonly read: SigningKeyRead,
    options: SigningKeyCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 600_000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? (() => performance.now());
    this.live = options.live ?? (() => true);
  }

  async get(projectId: string): Promise<string | undefined> {
    const live = this.live();
    if (live) {
      const hit = this.entries.get(projectId);
      if (hit !== undefined) {
        if (hit.expires > this.now()) return hit.key;
        this.entries.delete(projectId);
      }
    }
    const generation = this.generation;
    this.misses++;
    const key = await this.read(projectId);
    if (key !== undefined && live && this.live() && generation === this.generation) {
      if (!this.entries.has(projectId) && this.entries.size >= this.maxEntries) {
        const oldest = this.entries.keys().next();
        if (!oldest.done) this.entries.delete(oldest.value);
      }
      this.entries.set(projectId, { key, expires: this.now() + this.ttlMs });
    }
    return key;
  }

  /** Forgets a project's key, or every key. */
  invalidate(projectId: string | undefined): void {
    this.generation++;
    if (projectId === undefined) this.entries.clear();
    else this.entries.delete(projectId);
  }

  get size(): number {
    return this.entries.size;
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
