/**
 * The SIP transport's capture tap (src/sip/transport.ts): every message in
 * and out, over UDP, TCP (accepted and opened connections) and TLS, with
 * the real addresses and ports of both ends and the injected time;
 * keep-alives are not messages; a tap that throws disturbs nothing. The
 * peers are raw node:dgram / node:net / node:tls sockets.
 */
import dgram from "node:dgram";
import net from "node:net";
import tls from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { SipTransport, type TransportHandler, type WireMessage } from "../../src/sip/transport.js";
import { makeTestPki } from "../support/tls-ca.js";

const AT = new Date("2026-11-28T05:00:00.123Z");
const PING = "OPTIONS sip:x SIP/2.0\r\nContent-Length: 0\r\n\r\n";
const PONG = "SIP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n";

/** Waits until `check` holds, polling (events from sockets arrive when they arrive). */
async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("the SIP transport's tap", () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** A transport that answers every message with PONG, tapping into `seen`. */
  async function start(
    options: Partial<Parameters<typeof SipTransport.listen>[0]> = {},
  ): Promise<{ transport: SipTransport; seen: WireMessage[] }> {
    const seen: WireMessage[] = [];
    let transport: SipTransport | undefined;
    const handler: TransportHandler = {
      message: (data, source) => {
        if (data.toString().startsWith("OPTIONS")) transport!.send(source, Buffer.from(PONG));
      },
      streamError: () => {},
    };
    transport = await SipTransport.listen(
      { address: "127.0.0.1", udpPort: 0, tcpPort: 0, tap: (m) => seen.push(m), now: () => AT, ...options },
      handler,
    );
    cleanups.push(() => transport!.close());
    return { transport, seen };
  }

  it("sees a UDP request and its answer with both ends' addresses and the injected time", async () => {
    const { transport, seen } = await start();
    const peer = dgram.createSocket("udp4");
    await new Promise<void>((r) => peer.bind(0, "127.0.0.1", () => r()));
    cleanups.push(() => peer.close());
    const answered = new Promise<void>((r) => peer.once("message", () => r()));
    peer.send(PING, transport.local("UDP")!.port, "127.0.0.1");
    await answered;
    const local = { address: "127.0.0.1", port: transport.local("UDP")!.port };
    const remote = { address: "127.0.0.1", port: peer.address().port };
    expect(seen.map((m) => ({ ...m, data: m.data.toString() }))).toEqual([
      {
        direction: "received",
        transport: "UDP",
        source: remote,
        destination: local,
        time: AT,
        data: PING,
      },
      {
        direction: "sent",
        transport: "UDP",
        source: local,
        destination: remote,
        time: AT,
        data: PONG,
      },
    ]);
  });

  it("sees framed TCP messages on an accepted connection, not keep-alive pings", async () => {
    const { transport, seen } = await start();
    const port = transport.local("TCP")!.port;
    const socket = net.connect(port, "127.0.0.1");
    cleanups.push(() => socket.destroy());
    await new Promise<void>((r) => socket.once("connect", () => r()));
    let got = "";
    socket.on("data", (d: Buffer) => {
      got += d.toString();
    });
    // A ping, then a message in two pieces.
    socket.write("\r\n\r\n");
    socket.write(PING.slice(0, 10));
    socket.write(PING.slice(10));
    await until(() => got.includes(PONG));
    const remote = { address: "127.0.0.1", port: socket.localPort! };
    const local = { address: "127.0.0.1", port };
    expect(seen.map((m) => [m.direction, m.transport, m.source, m.destination, m.data.toString()])).toEqual([
      ["received", "TCP", remote, local, PING],
      ["sent", "TCP", local, remote, PONG],
    ]);
  });

  it("sees a message sent on a new TCP connection once it is up, with its local port and the time it was sent", async () => {
    const { transport, seen } = await start();
    const server = net.createServer();
    const accepted: net.Socket[] = [];
    let received = "";
    server.on("connection", (s) => {
      accepted.push(s);
      s.on("data", (d: Buffer) => {
        received += d.toString();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    cleanups.push(() => {
      for (const s of accepted) s.destroy();
      return new Promise((r) => server.close(r));
    });
    const port = (server.address() as net.AddressInfo).port;
    transport.send({ transport: "TCP", address: "127.0.0.1", port }, Buffer.from(PONG));
    await until(() => received === PONG && seen.length === 1);
    const [m] = seen;
    expect([m!.direction, m!.transport, m!.destination, m!.time, m!.data.toString()]).toEqual([
      "sent",
      "TCP",
      { address: "127.0.0.1", port },
      AT,
      PONG,
    ]);
    expect(m!.source.address).toBe("127.0.0.1");
    expect(m!.source.port).toBeGreaterThan(0);
    expect(m!.source.port).not.toBe(transport.local("TCP")!.port);
  });

  it("sees TLS messages in clear with the connection's addresses", async () => {
    const pki = makeTestPki(["localhost"]);
    const { transport, seen } = await start({
      tcpPort: undefined,
      tls: { port: 0, cert: pki.cert, key: pki.key },
    });
    const port = transport.local("TLS")!.port;
    const socket = tls.connect({ host: "127.0.0.1", port, ca: pki.ca, servername: "localhost" });
    cleanups.push(() => socket.destroy());
    await new Promise<void>((r) => socket.once("secureConnect", () => r()));
    let got = "";
    socket.on("data", (d: Buffer) => {
      got += d.toString();
    });
    socket.write(PING);
    await until(() => got.includes(PONG));
    const remote = { address: "127.0.0.1", port: socket.localPort! };
    expect(seen.map((m) => [m.direction, m.transport, m.source, m.destination, m.data.toString()])).toEqual([
      ["received", "TLS", remote, { address: "127.0.0.1", port }, PING],
      ["sent", "TLS", { address: "127.0.0.1", port }, remote, PONG],
    ]);
  });

  it("carries on when the tap throws", async () => {
    const { transport } = await start({
      tap: () => {
        throw new Error("tap bug");
      },
    });
    const peer = dgram.createSocket("udp4");
    await new Promise<void>((r) => peer.bind(0, "127.0.0.1", () => r()));
    cleanups.push(() => peer.close());
    const answered = new Promise<string>((r) => peer.once("message", (d) => r(d.toString())));
    peer.send(PING, transport.local("UDP")!.port, "127.0.0.1");
    expect(await answered).toBe(PONG);
  });
});
