/**
 * On PostgreSQL, every replica LISTENs on CREDENTIALS_CHANNEL over a
 * connection of its own, so a key changed through another replica leaves
 * this replica's credential cache when the change commits
 * (credential-cache.ts). `live` is true only while that connection is
 * listening: when it closes, the cache is emptied and bypassed until
 * LISTEN succeeds again (notifications sent meanwhile are lost, so nothing
 * cached before may be trusted).
 */
import type { Db } from "../db/client.js";
import { type ChannelListener, listenOnChannel } from "../db/listen.js";
import type { Logger } from "../log.js";
import { ALL_KEYS, CREDENTIALS_CHANNEL } from "./credential-cache.js";

export type CredentialListener = ChannelListener;

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
  return listenOnChannel(
    db,
    CREDENTIALS_CHANNEL,
    {
      onNotify: (payload) => invalidate(payload === ALL_KEYS ? undefined : payload),
      // Anything cached before this LISTEN may have missed a notification.
      onListening: () => invalidate(undefined),
      onLost(wasListening) {
        if (wasListening) {
          log.warn("credential change listener disconnected: not caching credentials until it is back");
        }
        invalidate(undefined);
      },
    },
    log,
    "credential change listener",
  );
}
