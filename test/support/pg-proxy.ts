/**
 * A TCP proxy on 127.0.0.1 in front of a PostgreSQL server, for faults a
 * real connection can have: a reply lost after the statement ran, or the
 * database unreachable. Everything else is forwarded unchanged.
 */
import { createServer, type Server, Socket } from "node:net";

/** ReadyForQuery: the server is done with everything sent before it (the statement committed). */
const READY_FOR_QUERY = Buffer.from([0x5a, 0, 0, 0, 5]);

export interface PgProxy {
  /** The target's URL with the proxy's host and port. */
  url: string;
  /**
   * Swallow the reply to the next statement whose bytes contain `marker`
   * (once it has run: up to its ReadyForQuery), then drop the connection.
   * `at`: instead, let that connection's replies through up to the first
   * CommandComplete whose tag starts with it ("COMMIT": the marked
   * statement's transaction committed), and lose that one and the rest;
   * `reset`: drop the connection with a TCP reset (the client's socket
   * errors, ECONNRESET) rather than a close; `before`: drop it before the
   * statement reaches the server (it never runs).
   */
  loseReplyTo(marker: string, options?: { at?: string; reset?: boolean; before?: boolean }): void;
  /**
   * Go silent on the next connection whose bytes contain `marker`: from
   * then on nothing the server sends on it reaches the client (after
   * `afterReady` ReadyForQuery messages, default 0: the replies to
   * statements pipelined ahead of the marked one), and the connection stays
   * open, as with a server or a network gone without a close.
   */
  stall(marker: string, options?: { afterReady?: number }): void;
  /** Replies swallowed so far. */
  lost(): number;
  /**
   * While on: every connection is dropped, the open ones at once and new
   * ones as they come (accepted, then closed cleanly: a proxy whose
   * database is down).
   */
  refuse(on: boolean): void;
  /** Connections accepted so far (refused ones too). */
  accepted(): number;
  close(): Promise<void>;
}

export async function startPgProxy(targetUrl: string): Promise<PgProxy> {
  const target = new URL(targetUrl);
  let marker: Buffer | undefined;
  let options: { at?: string; reset?: boolean; before?: boolean } = {};
  let lost = 0;
  let stallMarker: Buffer | undefined;
  let stallAfterReady = 0;
  let refusing = false;
  let accepted = 0;
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  };
  const server: Server = createServer((client) => {
    accepted++;
    track(client);
    if (refusing) {
      // Read what it sends, and close cleanly (a FIN, never a reset: unread bytes would make one).
      client.resume();
      client.end();
      return;
    }
    const upstream = new Socket();
    track(upstream);
    let swallowing = false;
    /** The marker was seen here: replies pass until the CommandComplete tagged `at` (parsed from `pending`). */
    let at: string | undefined;
    let pending = Buffer.alloc(0);
    let reset = false;
    /** Stalled: ReadyForQuery messages still to pass before nothing more does (-1: not stalled). */
    let readyToPass = -1;
    const end = () => {
      if (reset && !client.destroyed) client.resetAndDestroy();
      else client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    upstream.connect(Number(target.port || 5432), target.hostname, () => {
      client.on("data", (chunk: Buffer) => {
        if (stallMarker !== undefined && chunk.includes(stallMarker)) {
          stallMarker = undefined;
          readyToPass = stallAfterReady;
          pending = Buffer.alloc(0);
          if (readyToPass === 0) lost++;
        }
        if (marker !== undefined && chunk.includes(marker)) {
          marker = undefined;
          reset = options.reset === true;
          if (options.before === true) {
            lost++;
            end();
            return;
          }
          at = options.at;
          reset = options.reset === true;
          swallowing = at === undefined;
        }
        upstream.write(chunk);
      });
    });
    /**
     * Appends `chunk` and passes whole messages (type: 1 byte, length: 4,
     * itself included, body) to the client while `pass(type, start, size)`
     * says so; true once it said no (that message and the rest stay pending).
     */
    const forward = (
      chunk: Buffer,
      pass: (type: number, start: number, size: number) => boolean,
    ): boolean => {
      pending = Buffer.concat([pending, chunk]);
      let passed = 0;
      let stopped = false;
      while (pending.length - passed >= 5) {
        const size = 1 + pending.readUInt32BE(passed + 1);
        if (pending.length - passed < size) break;
        if (!pass(pending[passed]!, passed, size)) {
          stopped = true;
          break;
        }
        passed += size;
      }
      client.write(pending.subarray(0, passed));
      pending = pending.subarray(passed);
      return stopped;
    };
    upstream.on("data", (chunk: Buffer) => {
      if (readyToPass >= 0) {
        if (readyToPass === 0) return;
        forward(chunk, (type) => {
          if (readyToPass === 0) return false;
          if (type === 0x5a) readyToPass--;
          return true;
        });
        if (readyToPass === 0) lost++;
        return;
      }
      if (at !== undefined) {
        const tag = at;
        const tagged = forward(
          chunk,
          (type, start, size) =>
            !(type === 0x43 && pending.toString("utf8", start + 5, start + size - 1).startsWith(tag)),
        );
        if (tagged) {
          lost++;
          end();
        }
        return;
      }
      if (!swallowing) {
        client.write(chunk);
        return;
      }
      if (chunk.includes(READY_FOR_QUERY)) {
        lost++;
        end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(targetUrl);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.toString(),
    loseReplyTo(m, o = {}) {
      marker = Buffer.from(m, "utf8");
      options = o;
    },
    stall(m, o = {}) {
      stallMarker = Buffer.from(m, "utf8");
      stallAfterReady = o.afterReady ?? 0;
    },
    lost: () => lost,
    accepted: () => accepted,
    refuse(on) {
      refusing = on;
      if (on) for (const s of sockets) s.destroy();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
