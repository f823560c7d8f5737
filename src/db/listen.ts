/**
 * LISTEN on a PostgreSQL channel over a connection of its own (with the
 * settings of `db`'s pool), kept up: when the connection closes it listens
 * again (at once when it was listening, else after RETRY_MS), and
 * notifications sent meanwhile are lost, which each caller makes up for in
 * `onListening` (called after every successful LISTEN) and `onLost`.
 * Undefined when `db` is not a PostgreSQL server's pool (PGlite: one
 * process owns the database, nobody else could notify).
 */
import postgres from "postgres";
import type { Logger } from "../log.js";
import type { Db } from "./client.js";
import { directClientOf } from "./direct.js";

export interface ChannelListener {
  /** Whether notifications reach this replica now. */
  live(): boolean;
  close(): Promise<void>;
}

export interface ChannelHandlers {
  onNotify(payload: string): void;
  /** After every successful LISTEN (the first and each one after a reconnection). */
  onListening(): void;
  /** The connection closed; `wasListening`: it had been listening (not a failed reconnection). */
  onLost(wasListening: boolean): void;
}

const RETRY_MS = 1_000;

/** `what` names the listener in its log lines. */
export function listenOnChannel(
  db: Db,
  channel: string,
  handlers: ChannelHandlers,
  log: Logger,
  what: string,
): ChannelListener | undefined {
  const pool = directClientOf(db);
  if (pool === undefined) return undefined;
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
    onnotify(name: string, payload: string) {
      if (name === channel) handlers.onNotify(payload);
    },
    onclose() {
      const was = listening;
      listening = false;
      handlers.onLost(was);
      if (!closing) schedule(was ? 0 : RETRY_MS);
    },
  };
  const client = postgres(options as postgres.Options<Record<string, postgres.PostgresType>>);

  const start = async () => {
    retry = undefined;
    if (closing) return;
    try {
      await client.unsafe(`listen ${channel}`);
      listening = true;
      handlers.onListening();
    } catch (err) {
      if (closing) return;
      log.warn({ err }, `${what}: LISTEN failed, retrying`);
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

/** What `followChanges` wires up: whether news reaches the cache now, and how to stop. */
export interface ChangeFeed {
  /** True without a listener (the embedded database) or while it listens. */
  live(): boolean;
  close(): Promise<void>;
}

/**
 * Keeps a cache told of changes: this process's (`changes`, after each
 * commit) and, when `listen`, every replica's over `channel` (a LISTEN
 * connection of its own). Payload `all` (or none) means everything. On
 * (re)listening and on a lost connection everything is forgotten, since
 * notifications may have been missed; `what` names it in the log.
 */
export function followChanges(
  db: Db,
  options: {
    changes: { subscribe(listener: (key: string | undefined) => void): () => void };
    channel: string;
    invalidate(key: string | undefined): void;
    log: Logger;
    what: string;
    /** Logged (warn) when a listening connection is lost. */
    lostMessage: string;
    /** The payload meaning "everything", if any. */
    all?: string;
    listen?: boolean;
  },
): ChangeFeed {
  const { invalidate } = options;
  const unsubscribe = options.changes.subscribe(invalidate);
  const listener =
    options.listen === false
      ? undefined
      : listenOnChannel(
          db,
          options.channel,
          {
            onNotify: (payload) => invalidate(payload === options.all ? undefined : payload),
            onListening: () => invalidate(undefined),
            onLost(wasListening) {
              if (wasListening) options.log.warn(options.lostMessage);
              invalidate(undefined);
            },
          },
          options.log,
          options.what,
        );
  return {
    live: () => listener?.live() ?? true,
    async close() {
      unsubscribe();
      await listener?.close();
    },
  };
}
