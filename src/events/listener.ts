/**
 * On PostgreSQL, every replica running a webhook worker LISTENs on
 * WEBHOOKS_CHANNEL over a connection of its own, and a replica announces
 * its committed enqueues there (`webhookNotifier`) when its own worker
 * cannot take them now (`enqueueKicker`): it has none (ROLE=api), or it is
 * stopping, or it has as many events in flight as it may hold. Then a
 * worker in another replica is woken rather than waiting for its next poll.
 * A worker with room is kicked, and its claim takes the events at once: a
 * NOTIFY then would cost a transaction of its own, wake every listening
 * replica and send their workers claiming after events already taken.
 *
 * The NOTIFY is a statement of its own after the commit, not part of the
 * enqueuing transaction: PostgreSQL serialises the commits of notifying
 * transactions (a lock on the notification queue, held through the commit's
 * WAL flush), which would serialise every call transition of every replica.
 * Kicks are coalesced: one NOTIFY at a time per process, and the kicks that
 * come while it is on its way are covered by one more.
 * A NOTIFY carries its replica's id (`announcer`) as its payload, and a
 * listener given the same id ignores it: PostgreSQL delivers a notification
 * to its sender's listeners too, and the replica that notified has kicked its
 * own worker already (one claim fewer per NOTIFY). A notification with
 * another payload, or none (an older replica), wakes the worker.
 * Notifications are only a wake-up: the worker still polls every
 * WEBHOOKS_POLL_INTERVAL_MS (retries fall due with no notification, and
 * notifications sent while the connection is down are lost), and on every
 * (re)connection it looks for due events at once.
 */
import { randomBytes } from "node:crypto";
import type { Db } from "../db/client.js";
import { directClientOf } from "../db/direct.js";
import { type ChannelListener, listenOnChannel } from "../db/listen.js";
import type { Logger } from "../log.js";
import { WEBHOOKS_CHANNEL } from "./outbox.js";
import type { WebhookWorker } from "./worker.js";

export type WebhookListener = ChannelListener;

/**
 * Calls `wake` on every notification of WEBHOOKS_CHANNEL on the PostgreSQL
 * server `db` talks to (a connection of its own, with the settings of
 * `db`'s pool); undefined when `db` is not a PostgreSQL server's pool.
 */
export function listenForWebhooks(
  db: Db,
  wake: () => void,
  log: Logger,
  announcer?: string,
): WebhookListener | undefined {
  return listenOnChannel(
    db,
    WEBHOOKS_CHANNEL,
    {
      // This replica's own announcement: its worker was kicked when it was sent.
      onNotify: (payload) => {
        if (announcer === undefined || payload !== announcer) wake();
      },
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

/** A replica's id for its announcements: a payload no other replica's id equals. */
export function newAnnouncer(): string {
  return randomBytes(8).toString("hex");
}

/**
 * A coalescing announcer of committed enqueues: call it after the commit;
 * undefined when `db` is not a PostgreSQL server's pool (nobody else could
 * listen). `announcer` is the payload (this replica's listener ignores it).
 * A failed NOTIFY is logged at debug and forgotten: the workers poll anyway.
 */
export function webhookNotifier(db: Db, log: Logger, announcer = ""): (() => void) | undefined {
  const pool = directClientOf(db);
  if (pool === undefined) return undefined;
  if (!/^[0-9a-f]*$/.test(announcer)) throw new Error("an announcer id is hexadecimal");
  // A fixed text (hex needs no quoting beyond the literal's): one prepared statement.
  const text = announcer === "" ? `notify ${WEBHOOKS_CHANNEL}` : `notify ${WEBHOOKS_CHANNEL}, '${announcer}'`;
  let sending = false;
  let again = false;
  const send = () => {
    sending = true;
    again = false;
    pool.unsafe(text).then(
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

/**
 * What a replica calls once an enqueue committed: kicks its own `worker`,
 * and announces the enqueue to the other replicas (`notify`, from
 * webhookNotifier) only when there is no worker here or it has no room (see
 * the top of this file). Without a notifier (the embedded database) only
 * the worker is kicked.
 */
export function enqueueKicker(
  worker: Pick<WebhookWorker, "kick" | "hasRoom"> | undefined,
  notify: (() => void) | undefined,
): () => void {
  return () => {
    worker?.kick();
    if (notify !== undefined && (worker === undefined || !worker.hasRoom())) notify();
  };
}
