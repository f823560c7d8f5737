/**
 * The SIP edge's memory of users' digest credentials, so that a phone's
 * REGISTER (every minute or so, challenged each time) and a caller's INVITE
 * answer their challenge without a database read, while a changed password,
 * a disabled user or a deleted one is refused at once. It also remembers
 * whether a domain has users at all (`hasUsers`: authorization rules 1-3
 * ask it of every INVITE, twice), so that a user created on a domain that
 * had none is challenged at once too:
 *
 * - Every change of a user (SipUsersDomain create, update and delete) runs
 *   `pg_notify(SIP_USERS_CHANNEL, sipDomainId)` in its transaction
 *   (`notifySipUserChange`), delivered to every replica listening on the same
 *   PostgreSQL when it commits (`listenForSipUserChanges`), and tells this
 *   process's caches after it committed (`sipUserChangesOf(db).changed`):
 *   they forget the domain's users. While a replica's listening connection
 *   is down the cache is neither used nor filled (and is emptied), so a lost
 *   notification cannot leave an old password working.
 * - A lookup that raced with an invalidation is not stored, unknown users
 *   are never kept (a new user registers at once; random usernames cannot
 *   fill the memory), entries expire after `ttlMs` (10 minutes, a
 *   backstop): the rules of InvalidatedCache (src/db/invalidated-cache.ts).
 *   At most `maxEntries` are kept, users and domains' answers each.
 *   `hasUsers` is asked only of domains the edge found, so random names
 *   cannot fill that memory either.
 * A domain deleted takes its users with it (a cascade, no notification):
 * the edge checks the domain before it asks for credentials, so a deleted
 * domain's users are refused there.
 */
import { sql } from "drizzle-orm";
import { type Changes, changesPerDatabase } from "../../db/changes.js";
import type { Db, DbOrTx } from "../../db/client.js";
import { type CacheOptions, Generation, InvalidatedCache } from "../../db/invalidated-cache.js";
import { type ChangeFeed, followChanges } from "../../db/listen.js";
import type { Logger } from "../../log.js";
import type { SipUserCredentials } from "./domain.js";

/** The PostgreSQL notification channel of SIP user changes; payload: the domain id, or `*` for all. */
export const SIP_USERS_CHANNEL = "switchboard_sip_users";
const ALL = "*";

/** In the changing transaction: tells every replica listening to forget the domain's users on commit. */
export async function notifySipUserChange(tx: DbOrTx, sipDomainId: string): Promise<void> {
  await tx.execute(sql`select pg_notify(${SIP_USERS_CHANNEL}, ${sipDomainId})`);
}

/** The in-process changes of `db` by domain id (what SipUsersDomain reports to, what caches on `db` hear). */
export const sipUserChangesOf: (db: DbOrTx) => Changes<string> = changesPerDatabase<string>();

export interface CredentialsLookup {
  credentials(sipDomainId: string, username: string): Promise<SipUserCredentials | undefined>;
  /** Whether the domain has at least one user (disabled ones count). */
  hasUsers(domain: { projectId: string; id: string }): Promise<boolean>;
}

/** How long users are remembered (10 minutes by default) and how many are kept (50,000, and as many domains). */
export type SipCredentialsCacheOptions = CacheOptions;

export class SipCredentialsCache implements CredentialsLookup {
  /** Users' credentials by `${sipDomainId}\u0000${username}`. */
  private readonly users: InvalidatedCache<SipUserCredentials | undefined>;
  /** `hasUsers` answers by domain id; forgetting users stops a racing answer from being stored, and vice versa. */
  private readonly domains: InvalidatedCache<boolean>;

  constructor(
    private readonly inner: CredentialsLookup,
    options: SipCredentialsCacheOptions = {},
  ) {
    const shared = {
      ...options,
      ttlMs: options.ttlMs ?? 600_000,
      maxEntries: options.maxEntries ?? 50_000,
      generation: new Generation(),
    };
    this.users = new InvalidatedCache(shared);
    this.domains = new InvalidatedCache(shared);
  }

  credentials(sipDomainId: string, username: string): Promise<SipUserCredentials | undefined> {
    return this.users.get(`${sipDomainId}\u0000${username}`, () =>
      this.inner.credentials(sipDomainId, username),
    );
  }

  /** Whether the domain has users: remembered like credentials (either answer), forgotten with the domain's users. */
  hasUsers(domain: { projectId: string; id: string }): Promise<boolean> {
    return this.domains.get(domain.id, () => this.inner.hasUsers(domain));
  }

  /** Forgets the users of `sipDomainId`, or every user. */
  invalidate(sipDomainId: string | undefined): void {
    if (sipDomainId === undefined) {
      this.users.clear();
      this.domains.clear();
      return;
    }
    this.domains.delete(sipDomainId);
    const prefix = `${sipDomainId}\u0000`;
    this.users.deleteWhere((key) => key.startsWith(prefix));
  }

  /** Users remembered now. */
  get size(): number {
    return this.users.size;
  }

  /** Lookups that reached the database (for tests and diagnostics). */
  get misses(): number {
    return this.users.misses + this.domains.misses;
  }
}

/**
 * A cache of `db`'s SIP credentials for the edge, invalidated by this
 * process's changes and, on PostgreSQL, by every replica's (a LISTEN
 * connection of its own; `listen` false: none, for the embedded database,
 * which one process owns). `close` stops both.
 */
export function cachedSipCredentials(
  db: Db,
  inner: CredentialsLookup,
  log: Logger,
  listen = true,
): { cache: SipCredentialsCache; close(): Promise<void> } {
  let feed: ChangeFeed | undefined;
  const cache = new SipCredentialsCache(inner, { live: () => feed?.live() ?? true });
  feed = followChanges(db, {
    changes: sipUserChangesOf(db),
    channel: SIP_USERS_CHANNEL,
    invalidate: (id) => cache.invalidate(id),
    log,
    what: "SIP user change listener",
    lostMessage: "SIP user change listener disconnected: not caching credentials until it is back",
    all: ALL,
    listen,
  });
  return { cache, close: feed.close };
}
