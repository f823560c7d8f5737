/**
 * Test user agents on raw sockets: they send literal SIP text and read what
 * comes back with a few regular expressions of their own (never the core's
 * parser or serializer), so the tests check the SIP core against the wire.
 */
import dgram from "node:dgram";
import net from "node:net";
import { systemClock } from "../../src/clock.js";
import { type EndpointOptions, SipEndpoint } from "../../src/sip/endpoint.js";
import { RealScheduler, type Scheduler } from "../../src/telephony/scheduler.js";

/** Converts LF-separated text to CRLF and appends nothing else. */
export function sip(text: string): Buffer {
  return Buffer.from(text.replace(/\r?\n/g, "\r\n"));
}

/** What the test UA reads from a message it received. */
export class Received {
  constructor(readonly text: string) {}
  get status(): number | undefined {
    const m = /^SIP\/2\.0 (\d{3}) /.exec(this.text);
    return m === null ? undefined : Number(m[1]);
  }
  get reason(): string {
    return /^SIP\/2\.0 \d{3} (.*)\r\n/.exec(this.text)?.[1] ?? "";
  }
  get method(): string | undefined {
    return /^([A-Z]+) sip:/.exec(this.text)?.[1];
  }
  header(name: string): string | undefined {
    return new RegExp(`^${name}: (.*)$`, "im").exec(this.text)?.[1]?.replace(/\r$/, "");
  }
  headers(name: string): string[] {
    return [...this.text.matchAll(new RegExp(`^${name}: (.*)\\r$`, "gim"))].map((m) => m[1]!);
  }
  get body(): string {
    return this.text.slice(this.text.indexOf("\r\n\r\n") + 4);
  }
}

const WAIT_MS = 10_000;

/** Collects messages; `next` waits for the first one matching that was not yet taken. */
class Inbox {
  private readonly queue: Received[] = [];
  private waiters: Array<() => void> = [];

  push(text: string): void {
    this.queue.push(new Received(text));
    for (const w of this.waiters.splice(0)) w();
  }

  get pending(): Received[] {
    return [...this.queue];
  }

  async next(match: (m: Received) => boolean = () => true, timeoutMs = WAIT_MS): Promise<Received> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.queue.findIndex(match);
      if (i >= 0) return this.queue.splice(i, 1)[0]!;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error("no matching SIP message arrived");
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Waits `ms` and returns whatever arrived meanwhile (to check that nothing did). */
  async quiet(ms = 300): Promise<Received[]> {
    await new Promise((r) => setTimeout(r, ms));
    return this.queue.splice(0);
  }
}

export class UdpUa {
  readonly inbox = new Inbox();
  private constructor(readonly socket: dgram.Socket) {
    socket.on("message", (data) => this.inbox.push(data.toString("utf8")));
  }

  /** `address`: a loopback address of its own (127.0.0.2, ...) to be another source for the edge. */
  static async open(address = "127.0.0.1"): Promise<UdpUa> {
    const socket = dgram.createSocket("udp4");
    await new Promise<void>((resolve) => socket.bind(0, address, () => resolve()));
    return new UdpUa(socket);
  }

  get port(): number {
    return this.socket.address().port;
  }

  send(data: Buffer | string, port: number): void {
    this.socket.send(typeof data === "string" ? sip(data) : data, port, "127.0.0.1");
  }

  close(): void {
    this.socket.close();
  }
}

export class TcpUa {
  readonly inbox = new Inbox();
  private buffer = "";
  closed = false;

  private constructor(readonly socket: net.Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.buffer += chunk.toString("utf8");
      for (;;) {
        while (this.buffer.startsWith("\r\n")) this.buffer = this.buffer.slice(2);
        const end = this.buffer.indexOf("\r\n\r\n");
        if (end < 0) break;
        const cl = Number(/^content-length: *(\d+)/im.exec(this.buffer.slice(0, end))?.[1] ?? 0);
        if (this.buffer.length < end + 4 + cl) break;
        this.inbox.push(this.buffer.slice(0, end + 4 + cl));
        this.buffer = this.buffer.slice(end + 4 + cl);
      }
    });
    socket.on("close", () => {
      this.closed = true;
    });
    socket.on("error", () => {});
  }

  static async connect(port: number, localAddress?: string): Promise<TcpUa> {
    const socket = net.connect({
      port,
      host: "127.0.0.1",
      ...(localAddress === undefined ? {} : { localAddress }),
    });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    return new TcpUa(socket);
  }

  get port(): number {
    return this.socket.localPort ?? 0;
  }

  send(data: Buffer | string): void {
    this.socket.write(typeof data === "string" ? sip(data) : data);
  }

  close(): void {
    this.socket.destroy();
  }
}

/** An endpoint on loopback UDP+TCP (any ports) with real timers unless a scheduler is given. */
export function startEndpoint(
  options: Partial<EndpointOptions> & { scheduler?: Scheduler } = {},
): Promise<SipEndpoint> {
  return SipEndpoint.start({
    transport: { address: "127.0.0.1", udpPort: 0, tcpPort: 0 },
    scheduler: new RealScheduler(systemClock),
    ...options,
  });
}

export function udpPort(endpoint: SipEndpoint): number {
  return endpoint.transport.local("UDP")!.port;
}

export function tcpPort(endpoint: SipEndpoint): number {
  return endpoint.transport.local("TCP")!.port;
}
