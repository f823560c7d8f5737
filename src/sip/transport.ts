/**
 * SIP transports (RFC 3261 §18): a UDP socket, a TCP listener and, when a
 * certificate and key are given, a TLS listener on its own port. Datagrams
 * are handed up whole; streams are framed by Content-Length (./framing.ts),
 * keep-alive pings answered, and connections kept by peer address so that
 * responses and later requests reuse them (§18.2.2, §18.1.1). A port that
 * cannot be bound fails `listen` with a SipBindError naming the address.
 * An optional tap sees every message that crosses the wire, both ways, with
 * its real addresses and time (a capture: nothing may be changed through it).
 * The transport knows nothing of SIP beyond framing.
 */
import dgram from "node:dgram";
import net from "node:net";
import tls from "node:tls";
import { StreamFramer } from "./framing.js";

export type TransportName = "UDP" | "TCP" | "TLS";

/** The far end of a message: the transport and the address it came from or goes to. */
export interface Peer {
  transport: TransportName;
  address: string;
  port: number;
}

/** An address and port one side of a message used. */
export interface WireAddress {
  address: string;
  port: number;
}

/** One message as it crossed the wire, for the capture tap. */
export interface WireMessage {
  direction: "received" | "sent";
  transport: TransportName;
  /** The sender: the peer for a received message, this transport's socket for a sent one. */
  source: WireAddress;
  destination: WireAddress;
  /** When it was received, or handed to the socket. */
  time: Date;
  /** The whole message (a datagram, or one framed stream message); not to be modified. */
  data: Buffer;
}

export interface TransportHandler {
  /** A datagram or a framed stream message. */
  message(data: Buffer, source: Peer): void;
  /** A stream that cannot be framed: the handler may answer (send to `source`) before the connection closes. */
  streamError(status: 400 | 413, reason: string, head: Buffer, source: Peer): void;
}

export interface TransportOptions {
  /** The address to listen on (127.0.0.1, 0.0.0.0, ::). */
  address: string;
  /** UDP port (0: any); undefined: no UDP. */
  udpPort?: number | undefined;
  /** TCP port (0: any); undefined: no TCP. */
  tcpPort?: number | undefined;
  /** TLS port with its certificate and key (PEM); undefined: no TLS. */
  tls?: { port: number; cert: string | Buffer; key: string | Buffer } | undefined;
  /** Options for outgoing TLS connections (a CA for tests, for example). */
  tlsClient?: tls.ConnectionOptions | undefined;
  /** Idle stream connections are closed after this many milliseconds (default 10 minutes). */
  idleTimeoutMs?: number | undefined;
  /** Stream connections accepted at once per listener (default 10,000); more are refused. */
  maxConnections?: number | undefined;
  /**
   * Sees every message received and sent (not keep-alives), synchronously,
   * so it must be cheap; it may keep the message's buffer (the transport
   * never reuses one) but not change it. What it throws is ignored. A sent stream message on a new connection is
   * seen once the connection is up (before that its local port is unknown).
   */
  tap?: ((message: WireMessage) => void) | undefined;
  /** The time given to the tap (default the system clock). */
  now?: (() => Date) | undefined;
}

/** A listener could not be bound. */
export class SipBindError extends Error {
  override readonly name = "SipBindError";

  constructor(
    readonly transport: TransportName,
    readonly address: string,
    readonly port: number,
    cause: Error,
  ) {
    super(`cannot listen for SIP over ${transport} on ${address}:${port}: ${cause.message}`, { cause });
  }
}

function localOf(socket: net.Socket): WireAddress | undefined {
  const { localAddress: address, localPort: port } = socket;
  return address === undefined || port === undefined ? undefined : { address, port };
}

function key(peer: Peer): string {
  return `${peer.transport}|${peer.address}|${peer.port}`;
}

export class SipTransport {
  private udp: dgram.Socket | undefined;
  private udpLocal: WireAddress = { address: "", port: 0 };
  private readonly servers = new Map<TransportName, net.Server>();
  private readonly connections = new Map<string, net.Socket>();
  private closed = false;

  private constructor(
    private readonly options: TransportOptions,
    private readonly handler: TransportHandler,
  ) {}

  static async listen(options: TransportOptions, handler: TransportHandler): Promise<SipTransport> {
    const t = new SipTransport(options, handler);
    try {
      if (options.udpPort !== undefined) await t.listenUdp(options.udpPort);
      if (options.tcpPort !== undefined) await t.listenStream("TCP", options.tcpPort, net.createServer());
      if (options.tls !== undefined) {
        const server = tls.createServer({ cert: options.tls.cert, key: options.tls.key });
        await t.listenStream("TLS", options.tls.port, server);
      }
    } catch (e) {
      await t.close();
      throw e;
    }
    return t;
  }

  /** Hands a message to the tap, if any; the tap cannot disturb the transport. */
  private tap(
    direction: WireMessage["direction"],
    transport: TransportName,
    source: WireAddress,
    destination: WireAddress,
    data: Buffer,
    time?: Date,
  ): void {
    const tap = this.options.tap;
    if (tap === undefined) return;
    try {
      tap({
        direction,
        transport,
        source: { address: source.address, port: source.port },
        destination: { address: destination.address, port: destination.port },
        time: time ?? this.now(),
        data,
      });
    } catch {
      // A capture never breaks signalling.
    }
  }

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  /** Each listening transport's bound address, read once (every Via and Contact asks for it). */
  private readonly bound = new Map<TransportName, { address: string; port: number }>();

  /** The bound address and port of a transport, undefined when it is not listening. */
  local(transport: TransportName): { address: string; port: number } | undefined {
    const socket = transport === "UDP" ? this.udp : this.servers.get(transport);
    if (socket === undefined) return undefined;
    const known = this.bound.get(transport);
    if (known !== undefined) return { ...known };
    const a = socket.address();
    if (a === null || typeof a === "string") return undefined;
    this.bound.set(transport, { address: a.address, port: a.port });
    return { address: a.address, port: a.port };
  }

  private listenUdp(port: number): Promise<void> {
    const family = net.isIPv6(this.options.address) ? "udp6" : "udp4";
    const socket = dgram.createSocket({ type: family });
    return new Promise((resolve, reject) => {
      socket.once("error", (e) => reject(new SipBindError("UDP", this.options.address, port, e)));
      socket.bind(port, this.options.address, () => {
        socket.removeAllListeners("error");
        socket.on("error", () => {}); // ICMP errors and the like: nothing to do for a datagram socket.
        const { address, port: boundPort } = socket.address();
        this.udpLocal = { address, port: boundPort };
        socket.on("message", (data, rinfo) => {
          this.tap("received", "UDP", rinfo, this.udpLocal, data);
          this.handler.message(data, { transport: "UDP", address: rinfo.address, port: rinfo.port });
        });
        this.udp = socket;
        resolve();
      });
    });
  }

  private listenStream(transport: "TCP" | "TLS", port: number, server: net.Server): Promise<void> {
    server.maxConnections = this.options.maxConnections ?? 10_000;
    server.on(transport === "TLS" ? "secureConnection" : "connection", (socket: net.Socket) => {
      if (socket.remoteAddress === undefined || socket.remotePort === undefined) {
        socket.destroy();
        return;
      }
      this.adopt(socket, { transport, address: socket.remoteAddress, port: socket.remotePort });
    });
    server.on("tlsClientError", () => {});
    return new Promise((resolve, reject) => {
      server.once("error", (e) => reject(new SipBindError(transport, this.options.address, port, e)));
      server.listen(port, this.options.address, () => {
        server.removeAllListeners("error");
        server.on("error", () => {});
        this.servers.set(transport, server);
        resolve();
      });
    });
  }

  /** Reads framed messages from a stream connection and keeps it for reuse. */
  private adopt(socket: net.Socket, peer: Peer): void {
    const k = key(peer);
    this.connections.set(k, socket);
    const framer = new StreamFramer();
    socket.setTimeout(this.options.idleTimeoutMs ?? 600_000, () => socket.destroy());
    socket.on("data", (chunk: Buffer) => {
      for (const event of framer.push(chunk)) {
        if (event.type === "ping") socket.write("\r\n");
        else if (event.type === "message") {
          const local = localOf(socket);
          if (local !== undefined) this.tap("received", peer.transport, peer, local, event.data);
          this.handler.message(event.data, peer);
        } else {
          this.handler.streamError(event.status, event.reason, event.head, peer);
          socket.end();
        }
      }
    });
    socket.on("error", () => socket.destroy());
    socket.on("close", () => {
      if (this.connections.get(k) === socket) this.connections.delete(k);
    });
  }

  /**
   * Sends bytes to a peer: UDP as one datagram, streams on an existing
   * connection or a new one. Never throws: an address a peer gave that cannot
   * be sent to (port 0, a wrong family) just loses the message, as a network would.
   */
  send(peer: Peer, data: Buffer): void {
    if (this.closed) return;
    try {
      this.sendOrThrow(peer, data);
    } catch {
      // Unreachable destination: the transaction's timers deal with the silence.
    }
  }

  private sendOrThrow(peer: Peer, data: Buffer): void {
    if (peer.transport === "UDP") {
      if (this.udp === undefined) return;
      this.udp.send(data, peer.port, peer.address, () => {});
      this.tap("sent", "UDP", this.udpLocal, peer, data);
      return;
    }
    const existing = this.connections.get(key(peer));
    if (existing !== undefined && !existing.destroyed) {
      existing.write(data);
      const local = localOf(existing);
      if (local !== undefined) this.tap("sent", peer.transport, local, peer, data);
      return;
    }
    const socket =
      peer.transport === "TLS"
        ? tls.connect({ ...this.options.tlsClient, host: peer.address, port: peer.port })
        : net.connect({ host: peer.address, port: peer.port });
    this.adopt(socket, peer);
    socket.write(data);
    if (this.options.tap !== undefined) {
      const time = this.now();
      socket.once(peer.transport === "TLS" ? "secureConnect" : "connect", () => {
        const local = localOf(socket);
        if (local !== undefined) this.tap("sent", peer.transport, local, peer, data, time);
      });
    }
  }

  /** Whether a stream connection to (or from) this peer is open. */
  connected(peer: Peer): boolean {
    const socket = this.connections.get(key(peer));
    return socket !== undefined && !socket.destroyed;
  }

  /** Whether a peer can be reached on this transport. */
  has(transport: TransportName): boolean {
    return transport === "UDP" ? this.udp !== undefined : this.servers.has(transport);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const socket of this.connections.values()) socket.destroy();
    this.connections.clear();
    const udp = this.udp;
    this.udp = undefined;
    if (udp !== undefined) await new Promise<void>((resolve) => udp.close(() => resolve()));
    await Promise.all(
      [...this.servers.values()].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
    );
    this.servers.clear();
    this.bound.clear();
  }
}
