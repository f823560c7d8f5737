/**
 * A real HTTP webhook receiver on 127.0.0.1 for tests: records every request
 * (method, URL, headers, raw body) and answers with a handler the test sets.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedRequest {
  method: string;
  /** Path and query as received. */
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
}

export type ReceiverHandler = (req: ReceivedRequest, res: ServerResponse) => void;

export interface Receiver {
  /** `http://127.0.0.1:{port}` */
  base: string;
  port: number;
  requests: ReceivedRequest[];
  /** TCP connections accepted so far. */
  connections(): number;
  /** Closes the connections idle between requests (as a server's keep-alive timeout does). */
  closeIdle(): void;
  /** Replaces the handler (default: 200 "ok"). */
  handle(handler: ReceiverHandler): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  let handler: ReceiverHandler = (_req, res) => res.end("ok");
  const requests: ReceivedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const received: ReceivedRequest = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      requests.push(received);
      handler(received, res);
    });
  });
  let connections = 0;
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    requests,
    connections: () => connections,
    closeIdle: () => server.closeIdleConnections(),
    handle(h) {
      handler = h;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
