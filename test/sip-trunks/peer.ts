/**
 * Fake carrier trunks for the trunk tests: literal SIP responses to a
 * received request, and a trunk listening on TCP or TLS (messages framed by
 * Content-Length, answered on the connection they came on).
 */
import net from "node:net";
import tls from "node:tls";
import { Received } from "../sip/ua.js";

/** A response to `request` (a To tag added, except to 100 and when it has one). */
export function sipResponse(request: Received, status: string, extra: string[] = [], body = ""): string {
  const to = request.header("To")!;
  return [
    `SIP/2.0 ${status}`,
    ...request.headers("Via").map((v) => `Via: ${v}`),
    `From: ${request.header("From")}`,
    `To: ${to}${to.includes("tag=") || status.startsWith("100") ? "" : ";tag=trunk1"}`,
    `Call-ID: ${request.header("Call-ID")}`,
    `CSeq: ${request.header("CSeq")}`,
    ...extra,
    ...(body === "" ? [] : ["Content-Type: application/sdp"]),
    `Content-Length: ${Buffer.byteLength(body)}`,
    "",
    body,
  ].join("\r\n");
}

export interface StreamTrunk {
  port: number;
  /** Every message received, in order. */
  received: Received[];
  /** TLS handshakes that failed (the client refused our certificate, say). */
  handshakeErrors: Error[];
  /** The first message matching `match` (waiting up to `timeoutMs`). */
  next(match: (m: Received) => boolean, timeoutMs?: number): Promise<Received>;
  /** Writes on the last connection. */
  write(text: string): void;
  close(): void;
}

/** A trunk on 127.0.0.1: TCP, or TLS with `credentials`' certificate. */
export async function streamTrunk(credentials?: { cert: string; key: string }): Promise<StreamTrunk> {
  const received: Received[] = [];
  const handshakeErrors: Error[] = [];
  let connection: net.Socket | undefined;
  const onSocket = (socket: net.Socket) => {
    connection = socket;
    let buffer = "";
    socket.on("data", (chunk: Buffer) => {
      buffer += chunk.toString("utf8");
      for (;;) {
        const end = buffer.indexOf("\r\n\r\n");
        if (end < 0) break;
        const length = Number(/^content-length: *(\d+)/im.exec(buffer.slice(0, end))?.[1] ?? 0);
        if (buffer.length < end + 4 + length) break;
        received.push(new Received(buffer.slice(0, end + 4 + length)));
        buffer = buffer.slice(end + 4 + length);
      }
    });
    socket.on("error", () => {});
  };
  const server =
    credentials === undefined
      ? net.createServer(onSocket)
      : tls.createServer({ cert: credentials.cert, key: credentials.key }, onSocket);
  server.on("tlsClientError", (err: Error) => handshakeErrors.push(err));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    received,
    handshakeErrors,
    async next(match, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = received.find(match);
        if (found !== undefined) return found;
        if (Date.now() > deadline) throw new Error("no matching message reached the trunk");
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    write(text) {
      connection!.write(text);
    },
    close() {
      connection?.destroy();
      server.close();
    },
  };
}
