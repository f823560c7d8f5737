/**
 * On PostgreSQL, every replica LISTENs on CREDENTIALS_CHANNEL over a
 * connection of its own, so a key changed through another replica leaves
 * this replica's credential cache when the change commits
 * (credential-cache.ts). `live` is true only while that connection is
 * listening: when it closes, the cache is emptied and bypassed until
 * LISTEN succeeds again (notifications sent meanwhile are lost, so nothing
 * cached before may be trusted).
 */
import { is } from "drizzle-orm";
import { PostgresJsDatabase } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import type { Db } from "../db/client.js";
import type { Logger } from "../log.js";
import { ALL_KEYS, CREDENTIALS_CHANNEL } from "./credential-cache.js";

export interface CredentialListener {
  /** Whether notifications reach this replica now. */
  live(): boolean;
  close(): Promise<void>;
}

const RETRY_MS = 1_000;

/**
 * Listens on the PostgreSQL server `db` talks to (a connection of its own,
 * with the same settings as `db`'s pool); undefined when `db` is not on
 * PostgreSQL (PGlite: one process owns the database, so the in-process
 * `CredentialChanges` sees every change).
 */
export function listenForCredentialChanges(
  db: Db,
  invalidate: (keyId: string | undefined) => void,
  log: Logger,
): CredentialListener | undefined {
  if (!is(db, PostgresJsDatabase)) return undefined;
  const pool = (db as unknown as { $client: postgres.Sql }).$client;
  let listening = false;
  let closing = false;
  let retry: NodeJS.Timeout | undefined;
  const options = {
    // The pool's parsed options (postgres.js's own listen() does the same).
    ...(pool.options as unknown as postgres.Options<Record<string, postgres.PostgresType>>),
    max: 1,
    idle_timeout: 0,
    max_lifetime: null,
    fetch_types: false,
    onnotice: () => {},
    // Not in postgres.js's types, but its documented way to see notifications (listen() uses it).
    onnotify(channel: string, payload: string) {
      if (channel === CREDENTIALS_CHANNEL) invalidate(payload === ALL_KEYS ? undefined : payload);
    },
    onclose() {
      const was = listening;
      if (was) log.warn("credential change listener disconnected: not caching credentials until it is back");
      listening = false;
      invalidate(undefined);
      if (!closing) schedule(was ? 0 : RETRY_MS);
    },
  };
  const client = postgres(options as postgres.Options<Record<string, postgres.PostgresType>>);

  const start = async () => {
    retry = undefined;
    if (closing) return;
    try {
      await client.unsafe(`listen ${CREDENTIALS_CHANNEL}`);
      // Anything cached before this LISTEN may have missed a notification.
      invalidate(undefined);
      listening = true;
    } catch (err) {
      if (closing) return;
      log.warn({ err }, "credential change listener: LISTEN failed, retrying");
      schedule(RETRY_MS);
    }
  };
  const schedule = (ms: number) => {
    if (retry === undefined && !closing) retry = setTimeout(() => void start(), ms);
  };
  void start();

  return {
    live: () => listening,
    async close() {
      closing = true;
      listening = false;
      if (retry !== undefined) clearTimeout(retry);
      await client.end({ timeout: 5 });
    },
  };
}
