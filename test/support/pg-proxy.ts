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
   * `from`: start swallowing at the first statement after that, on the
   * same connection, whose bytes contain it (a transaction's "commit");
   * `until`: swallow up to the ReadyForQuery that follows a reply
   * containing it ("COMMIT\0", the tag of COMMIT's CommandComplete);
   * `reset`: drop the connection with a TCP reset (the client's socket
   * errors, ECONNRESET) rather than a close.
   */
  loseReplyTo(marker: string, options?: { from?: string; until?: string; reset?: boolean }): void;
  /** Replies swallowed so far. */
  lost(): number;
  /** While on: every connection is dropped, the open ones at once and new ones as they come. */
  refuse(on: boolean): void;
  close(): Promise<void>;
}

export async function startPgProxy(targetUrl: string): Promise<PgProxy> {
  const target = new URL(targetUrl);
  let marker: Buffer | undefined;
  let options: { from?: Buffer | undefined; until?: Buffer | undefined; reset?: boolean } = {};
  let lost = 0;
  let refusing = false;
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  };
  const server: Server = createServer((client) => {
    track(client);
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = new Socket();
    track(upstream);
    let swallowing = false;
    /** The marker was seen here: swallowing starts at the statement holding `from`. */
    let from: Buffer | undefined;
    /** The reply to wait for before the next ReadyForQuery, and what came so far. */
    let waitFor: Buffer | undefined;
    let reset = false;
    let seen = Buffer.alloc(0);
    const end = () => {
      if (reset && !client.destroyed) client.resetAndDestroy();
      else client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    upstream.connect(Number(target.port || 5432), target.hostname, () => {
      client.on("data", (chunk: Buffer) => {
        if (marker !== undefined && chunk.includes(marker)) {
          marker = undefined;
          from = options.from;
          waitFor = options.until;
          reset = options.reset === true;
          swallowing = from === undefined;
        } else if (from !== undefined && chunk.includes(from)) {
          from = undefined;
          swallowing = true;
        }
        upstream.write(chunk);
      });
    });
    upstream.on("data", (chunk: Buffer) => {
      if (!swallowing) {
        client.write(chunk);
        return;
      }
      if (waitFor !== undefined) {
        seen = Buffer.concat([seen, chunk]);
        const at = seen.indexOf(waitFor);
        if (at < 0) return;
        chunk = seen.subarray(at);
        waitFor = undefined;
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
      const bytes = (x: string | undefined) => (x === undefined ? undefined : Buffer.from(x, "utf8"));
      options = { from: bytes(o.from), until: bytes(o.until), reset: o.reset === true };
    },
    lost: () => lost,
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
