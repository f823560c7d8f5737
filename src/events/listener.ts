/**
 * On PostgreSQL, every replica running a webhook worker LISTENs on
 * WEBHOOKS_CHANNEL over a connection of its own, and every replica
 * announces its committed enqueues there (`webhookNotifier`, called where
 * the worker is kicked), so a worker in any replica is woken rather than
 * waiting for its next poll.
 *
 * The NOTIFY is a statement of its own after the commit, not part of the
 * enqueuing transaction: PostgreSQL serialises the commits of notifying
 * transactions (a lock on the notification queue, held through the commit's
 * WAL flush), which would serialise every call transition of every replica.
 * Kicks are coalesced: one NOTIFY at a time per process, and the kicks that
 * come while it is on its way are covered by one more.
 * Notifications are only a wake-up: the worker still polls every
 * WEBHOOKS_POLL_INTERVAL_MS (retries fall due with no notification, and
 * notifications sent while the connection is down are lost), and on every
 * (re)connection it looks for due events at once.
 */
import type { Db } from "../db/client.js";
import { directClientOf } from "../db/direct.js";
import { type ChannelListener, listenOnChannel } from "../db/listen.js";
import type { Logger } from "../log.js";
import { WEBHOOKS_CHANNEL } from "./outbox.js";

export type WebhookListener = ChannelListener;

/**
 * Calls `wake` on every notification of WEBHOOKS_CHANNEL on the PostgreSQL
 * server `db` talks to (a connection of its own, with the settings of
 * `db`'s pool); undefined when `db` is not a PostgreSQL server's pool.
 */
export function listenForWebhooks(db: Db, wake: () => void, log: Logger): WebhookListener | undefined {
  return listenOnChannel(
    db,
    WEBHOOKS_CHANNEL,
    {
      onNotify: () => wake(),
      // Events enqueued while nobody listened are due already.
      onListening: () => wake(),
      onLost(wasListening) {
        if (wasListening) log.warn("webhook listener disconnected: the worker polls until it is back");
      },
    },
    log,
    "webhook listener",
  );
}

/**
 * A coalescing announcer of committed enqueues: call it after the commit;
 * undefined when `db` is not a PostgreSQL server's pool (nobody else could
 * listen). A failed NOTIFY is logged at debug and forgotten: the workers
 * poll anyway.
 */
export function webhookNotifier(db: Db, log: Logger): (() => void) | undefined {
  const pool = directClientOf(db);
  if (pool === undefined) return undefined;
  let sending = false;
  let again = false;
  const send = () => {
    sending = true;
    again = false;
    pool.unsafe(`notify ${WEBHOOKS_CHANNEL}`).then(
      () => {
        sending = false;
        if (again) send();
      },
      (err: unknown) => {
        sending = false;
        log.debug({ err }, "webhook notification not sent");
      },
    );
  };
  return () => {
    if (sending) again = true;
    else send();
  };
}
