/**
 * One port for every protocol. Without TLS, a `net` server reads the first
 * bytes of each connection: the HTTP/2 connection preface goes to an h2c
 * server (gRPC clients with prior knowledge), anything else to an HTTP/1.1
 * server (Connect, gRPC-Web, REST, curl). Plain-text
 * `http2.createServer({ allowHTTP1: true })` cannot do this: it only falls
 * back to HTTP/1 after ALPN, which needs TLS. With TLS, one
 * `http2.createSecureServer({ allowHTTP1: true })` negotiates h2 or
 * http/1.1 by ALPN. Every flavour runs the same request handler; nothing here
 * adds work per request.
 */
import { readFile } from "node:fs/promises";
import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import type { NodeHandlerFn } from "./types.js";

/** The client connection preface of HTTP/2 (RFC 9113, section 3.4). */
export const HTTP2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export interface OnePortOptions {
  /** The request handler of every protocol. */
  handler: NodeHandlerFn;
  /** PEM files; when set the port speaks TLS only (h2 and http/1.1 by ALPN). */
  tls?: { certFile: string; keyFile: string } | undefined;
  /** A connection that sends nothing decisive for this long is dropped. Default 10 s. */
  peekTimeoutMs?: number;
  /** How long close() lets in-flight requests finish before cutting them. Default 5 s. */
  shutdownGraceMs?: number;
  /**
   * Errors of the listening socket after it is bound (failed accepts, such
   * as EMFILE); without this they would be thrown. Errors of single
   * connections only ever drop that connection.
   */
  onError?: (err: Error) => void;
}

export interface OnePortServer {
  /** Binds the port; resolves with the bound address. */
  listen(port: number, host: string): Promise<net.AddressInfo>;
  /**
   * Stops accepting connections, closes idle keep-alive connections and
   * HTTP/2 sessions at once (GOAWAY), lets in-flight requests finish for up
   * to the grace period, then destroys whatever is left.
   */
  close(): Promise<void>;
}

/** How the first bytes of a connection classify it. */
export type Classification = "http2" | "http1" | "undecided";

/**
 * `http2` once the whole preface has arrived, `http1` as soon as a byte
 * differs from it, `undecided` while what arrived is a proper prefix of it
 * (the preface may come in pieces).
 */
export function classify(head: Buffer): Classification {
  const n = Math.min(head.length, HTTP2_PREFACE.length);
  if (head.compare(HTTP2_PREFACE, 0, n, 0, n) !== 0) return "http1";
  return n === HTTP2_PREFACE.length ? "http2" : "undecided";
}

export function createOnePortServer(options: OnePortOptions): OnePortServer {
  const peekTimeoutMs = options.peekTimeoutMs ?? 10_000;
  const shutdownGraceMs = options.shutdownGraceMs ?? 5_000;
  const handler = options.handler as (req: http.IncomingMessage, res: http.ServerResponse) => void;
  const handler2 = options.handler as (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void;

  const sockets = new Set<net.Socket>();
  /** Plain-text connections whose protocol is not known yet. */
  const pending = new Set<net.Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  const trackSession = (session: http2.ServerHttp2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  };
  const trackSocket = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };

  let outer: net.Server | undefined;
  let h1: http.Server | undefined;
  let h2: http2.Http2Server | undefined;
  let secure: http2.Http2SecureServer | undefined;

  function plainServer(): net.Server {
    const h1s = http.createServer(handler);
    // http.Server tracks its connections (idle keep-alive, headers and request
    // timeouts) from its own 'listening' event; it never listens here, the
    // outer net server does, so start that tracking by hand.
    h1s.emit("listening");
    const h2s = http2.createServer(handler2);
    h2s.on("session", trackSession);
    h1 = h1s;
    h2 = h2s;
    return net.createServer((socket) => {
      trackSocket(socket);
      pending.add(socket);
      peek(socket, h1s, h2s, peekTimeoutMs, () => pending.delete(socket));
    });
  }

  async function secureServer(tls: { certFile: string; keyFile: string }): Promise<net.Server> {
    const [cert, key] = await Promise.all([readFile(tls.certFile), readFile(tls.keyFile)]);
    const s = http2.createSecureServer(
      { cert, key, allowHTTP1: true, ALPNProtocols: ["h2", "http/1.1"] },
      handler2,
    );
    s.on("session", trackSession);
    s.on("connection", trackSocket);
    // A failed handshake (plain text, garbage, wrong SNI) only drops that socket.
    s.on("tlsClientError", (_err, socket) => socket.destroy());
    secure = s;
    return s;
  }

  return {
    async listen(port, host) {
      if (outer) throw new Error("already listening");
      const server = options.tls ? await secureServer(options.tls) : plainServer();
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          resolve();
        });
      });
      server.on("error", (err) => options.onError?.(err));
      outer = server;
      return server.address() as net.AddressInfo;
    },

    async close() {
      const server = outer;
      if (!server) return;
      outer = undefined;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const closeIdle = () => {
        // HTTP/1.1: idle keep-alive sockets now; busy ones as soon as idle.
        h1?.closeIdleConnections();
        // The TLS server serves HTTP/1.1 with http.Server's machinery and the
        // same connection tracking, but does not expose the method.
        if (secure) http.Server.prototype.closeIdleConnections.call(secure as unknown as http.Server);
        // Connections still being classified carry no request yet.
        for (const socket of pending) socket.destroy();
        // HTTP/2: GOAWAY; the session ends when its open streams have.
        for (const session of sessions) if (!session.closed) session.close();
      };
      closeIdle();
      const poll = setInterval(closeIdle, 50);
      const hammer = setTimeout(() => {
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
      }, shutdownGraceMs);
      try {
        await closed;
      } finally {
        clearInterval(poll);
        clearTimeout(hammer);
        h1?.close();
        h2?.close();
        h1 = undefined;
        h2 = undefined;
        secure = undefined;
      }
    },
  };
}

/**
 * Reads from a fresh connection until its protocol is known, puts the bytes
 * back and hands the socket to the server of that protocol.
 */
function peek(
  socket: net.Socket,
  h1: http.Server,
  h2: http2.Http2Server,
  timeoutMs: number,
  settled: () => void,
): void {
  let head: Buffer | undefined;
  const timer = setTimeout(() => socket.destroy(), timeoutMs);
  const done = () => {
    settled();
    clearTimeout(timer);
    socket.off("data", onData);
    socket.off("end", onEnd);
    socket.off("error", onError);
    socket.off("close", done);
  };
  const onData = (chunk: Buffer) => {
    head = head === undefined ? chunk : Buffer.concat([head, chunk]);
    const kind = classify(head);
    if (kind === "undecided") return;
    done();
    socket.pause();
    socket.unshift(head);
    if (kind === "http2") {
      // The session consumes the socket's handle and reads what is already
      // buffered on the next tick; resuming here would race it.
      h2.emit("connection", socket);
    } else {
      h1.emit("connection", socket);
      // http.Server's own 'data' listener delivers the unshifted bytes once
      // the socket flows again; it does not resume a paused socket by itself.
      socket.resume();
    }
  };
  // Closed, half-closed or broken before a decision: nothing to serve.
  const onEnd = () => {
    done();
    socket.destroy();
  };
  const onError = () => {
    done();
    socket.destroy();
  };
  socket.on("data", onData);
  socket.once("end", onEnd);
  socket.once("error", onError);
  socket.once("close", done);
}
