/**
 * The endpoint's handling of what arrives before any user code: responses
 * routed per Via (received, rport), parse errors answered 400/413 with the
 * problem named (or dropped), garbage never crashing, Max-Forwards,
 * OPTIONS, unknown methods, Require, scanners, and bind failures.
 */
import dgram from "node:dgram";
import net from "node:net";
import tls from "node:tls";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { type EndpointEvent, randomToken, type SipEndpoint } from "../../src/sip/endpoint.js";
import { SipBindError } from "../../src/sip/transport.js";
import { makeTestPki } from "../support/tls-ca.js";
import { startEndpoint, TcpUa, tcpPort, UdpUa, udpPort } from "./ua.js";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup() {
  const events: EndpointEvent[] = [];
  const endpoint = await startEndpoint({ onEvent: (e) => events.push(e) });
  const ua = await UdpUa.open();
  cleanups.push(
    () => endpoint.close(),
    () => ua.close(),
  );
  return { endpoint, ua, events };
}

let n = 0;
function options(endpoint: SipEndpoint, via: string, extra = "", method = "OPTIONS"): string {
  n++;
  return `${method} sip:service@127.0.0.1:${udpPort(endpoint)} SIP/2.0
Via: ${via};branch=z9hG4bKep${n}
Max-Forwards: 70
From: <sip:alice@example.com>;tag=e${n}
To: <sip:service@example.com>
Call-ID: ep-${n}@test
CSeq: 7 ${method}
${extra}Content-Length: 0

`;
}

describe("randomToken", () => {
  it("gives hex tokens of the asked length, all different across the pool's refills", () => {
    const seen = new Set<string>();
    // 3,000 tokens of 8 bytes: the 4 KiB pool is refilled five times.
    for (let i = 0; i < 3000; i++) {
      const token = randomToken();
      expect(token).toMatch(/^[0-9a-f]{16}$/);
      seen.add(token);
    }
    expect(seen.size).toBe(3000);
    expect(randomToken(3)).toMatch(/^[0-9a-f]{6}$/);
    expect(randomToken(5000)).toMatch(/^[0-9a-f]{10000}$/);
  });
});

describe("SipEndpoint", () => {
  it("answers OPTIONS 200 with Allow and Accept, stamping received on the Via", async () => {
    const { endpoint, ua } = await setup();
    endpoint.onRequest("INVITE", () => {});
    ua.send(options(endpoint, `SIP/2.0/UDP 127.0.0.1:${ua.port}`), udpPort(endpoint));
    const r = await ua.inbox.next();
    expect(r.status).toBe(200);
    expect(r.header("Allow")).toContain("INVITE");
    expect(r.header("Accept")).toBe("application/sdp");
    expect(r.header("CSeq")).toBe("7 OPTIONS");
    expect(r.header("To")).toMatch(/;tag=\w+$/);
  });

  it("sends the response to the source port when the Via has rport (RFC 3581)", async () => {
    const { endpoint, ua } = await setup();
    ua.send(options(endpoint, "SIP/2.0/UDP 192.0.2.99:5999;rport"), udpPort(endpoint));
    const r = await ua.inbox.next();
    expect(r.status).toBe(200);
    expect(r.header("Via")).toBe(
      `SIP/2.0/UDP 192.0.2.99:5999;rport=${ua.port};branch=z9hG4bKep${n};received=127.0.0.1`,
    );
  });

  it("sends the response to received and the Via's port without rport (RFC 3261 §18.2.2)", async () => {
    const { endpoint, ua } = await setup();
    const other = await UdpUa.open();
    cleanups.push(() => other.close());
    // Sent from `ua`, the Via names localhost and the port of `other`: the answer goes to `other`.
    ua.send(options(endpoint, `SIP/2.0/UDP localhost:${other.port}`), udpPort(endpoint));
    const r = await other.inbox.next();
    expect(r.status).toBe(200);
    expect(r.header("Via")).toContain(";received=127.0.0.1");
    expect(await ua.inbox.quiet(100)).toEqual([]);
  });

  it("answers 483 when Max-Forwards is 0, 501 for an unknown method, 405 with Allow for a known one without a handler", async () => {
    const { endpoint, ua } = await setup();
    const via = `SIP/2.0/UDP 127.0.0.1:${ua.port}`;
    ua.send(
      options(endpoint, via, "", "MESSAGE").replace("Max-Forwards: 70", "Max-Forwards: 0"),
      udpPort(endpoint),
    );
    expect((await ua.inbox.next()).status).toBe(483);
    ua.send(options(endpoint, via, "", "FROBNICATE"), udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(501);
    ua.send(options(endpoint, via, "", "SUBSCRIBE"), udpPort(endpoint));
    const r = await ua.inbox.next();
    expect(r.status).toBe(405);
    expect(r.header("Allow")).toBe("ACK, CANCEL, OPTIONS");
    ua.send(options(endpoint, via, "Require: 100rel\n"), udpPort(endpoint));
    const ext = await ua.inbox.next();
    expect([ext.status, ext.header("Unsupported")]).toEqual([420, "100rel"]);
  });

  it("answers an unparseable request 400 naming the problem, and drops an unparseable response", async () => {
    const { endpoint, ua, events } = await setup();
    const bad = options(endpoint, `SIP/2.0/UDP 127.0.0.1:${ua.port}`).replace(
      "CSeq: 7 OPTIONS",
      "CSeq: seven OPTIONS",
    );
    ua.send(bad, udpPort(endpoint));
    const r = await ua.inbox.next();
    expect([r.status, r.reason]).toEqual([400, "bad CSeq"]);
    ua.send("SIP/2.0 200 OK\nVia: nonsense\n\n", udpPort(endpoint));
    expect(await ua.inbox.quiet(200)).toEqual([]);
    expect(events.map((e) => e.type)).toEqual(["parse-error", "parse-error"]);
  });

  it("survives garbage and oversize datagrams and still answers", async () => {
    const { endpoint, ua } = await setup();
    const sock = dgram.createSocket("udp4");
    cleanups.push(() => sock.close());
    for (const junk of [
      Buffer.alloc(0),
      Buffer.from("\r\n\r\n"),
      Buffer.alloc(65_000, 0xff),
      Buffer.from("INVITE\r\n\r\n"),
    ]) {
      sock.send(junk, udpPort(endpoint), "127.0.0.1");
    }
    ua.send(options(endpoint, `SIP/2.0/UDP 127.0.0.1:${ua.port}`), udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(200);
  });

  it("meets mutated messages without an internal error (fuzzed over UDP)", async () => {
    const { endpoint, ua, events } = await setup();
    endpoint.onInvite((tx) => tx.respond(tx.reply(486)));
    const sock = dgram.createSocket("udp4");
    cleanups.push(() => sock.close());
    const base = options(
      endpoint,
      `SIP/2.0/UDP 127.0.0.1:${ua.port};rport`,
      "Contact: <sip:a@127.0.0.1>\n",
      "INVITE",
    ).replace(/\n/g, "\r\n");
    const alphabet = fc.constantFrom(...'\r\n \t:;,<>"\\@?=%/0aZ'.split(""));
    const samples = fc.sample(
      fc.tuple(fc.nat(base.length - 1), alphabet, fc.constantFrom("insert", "replace", "delete")),
      { numRuns: 300, seed: 4475 },
    );
    for (const [at, ch, op] of samples) {
      const mutated =
        op === "insert"
          ? base.slice(0, at) + ch + base.slice(at)
          : base.slice(0, at) + (op === "replace" ? ch : "") + base.slice(at + 1);
      sock.send(Buffer.from(mutated), udpPort(endpoint), "127.0.0.1");
    }
    await ua.inbox.quiet(500);
    ua.send(options(endpoint, `SIP/2.0/UDP 127.0.0.1:${ua.port}`), udpPort(endpoint));
    expect((await ua.inbox.next((m) => m.header("CSeq") === "7 OPTIONS")).status).toBe(200);
    expect(events.filter((e) => e.type === "internal-error")).toEqual([]);
  });

  it("answers 413 to a request over 64 KiB on TCP and closes the connection", async () => {
    const { endpoint } = await setup();
    const tcp = await TcpUa.connect(tcpPort(endpoint));
    cleanups.push(() => tcp.close());
    const huge = options(endpoint, `SIP/2.0/TCP 127.0.0.1:${tcp.port}`, `X-Padding: ${"a".repeat(70_000)}\n`);
    tcp.send(huge);
    const r = await tcp.inbox.next();
    expect(r.status).toBe(413);
    expect(r.header("CSeq")).toBe("7 OPTIONS");
  });

  it("answers on a new TCP connection to the Via's sent-by when the request's connection is gone", async () => {
    const { endpoint } = await setup();
    let pending: import("../../src/sip/transaction.js").ServerTransaction | undefined;
    endpoint.onRequest("MESSAGE", (tx) => {
      pending = tx;
    });
    const received: string[] = [];
    const sockets: net.Socket[] = [];
    const listener = net.createServer((socket) => {
      sockets.push(socket);
      socket.on("data", (d: Buffer) => received.push(d.toString()));
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", () => resolve()));
    cleanups.push(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => listener.close(() => resolve()));
    });
    const listenPort = (listener.address() as net.AddressInfo).port;
    const tcp = await TcpUa.connect(tcpPort(endpoint));
    const from = { transport: "TCP" as const, address: "127.0.0.1", port: tcp.port };
    tcp.send(options(endpoint, `SIP/2.0/TCP 127.0.0.1:${listenPort}`, "", "MESSAGE"));
    const until = async (done: () => boolean) => {
      for (let i = 0; i < 250 && !done(); i++) await new Promise((r) => setTimeout(r, 20));
    };
    await until(() => pending !== undefined);
    tcp.close();
    await until(() => !endpoint.transport.connected(from));
    pending!.respond(pending!.reply(202));
    await until(() => received.join("").includes("\r\n\r\n"));
    expect(received.join("")).toMatch(/^SIP\/2\.0 202 Accepted\r\n/);
  });

  it("answers 400 to a TCP message without Content-Length, and keep-alive pings get a pong", async () => {
    const { endpoint } = await setup();
    const tcp = await TcpUa.connect(tcpPort(endpoint));
    cleanups.push(() => tcp.close());
    const pong = new Promise<string>((resolve) =>
      tcp.socket.once("data", (d: Buffer) => resolve(d.toString())),
    );
    tcp.send(Buffer.from("\r\n\r\n"));
    expect(await pong).toBe("\r\n");
    tcp.send(options(endpoint, `SIP/2.0/TCP 127.0.0.1:${tcp.port}`).replace("Content-Length: 0\n", ""));
    const r = await tcp.inbox.next();
    expect([r.status, r.reason]).toEqual([400, "Missing Content-Length"]);
  });

  it("drops requests from scanners without an answer (and reports them)", async () => {
    const { endpoint, ua, events } = await setup();
    for (const agent of ["friendly-scanner", "sipvicious", "sipcli/v1.8", "VaxSIPUserAgent/3.1"]) {
      ua.send(
        options(endpoint, `SIP/2.0/UDP 127.0.0.1:${ua.port}`, `User-Agent: ${agent}\n`),
        udpPort(endpoint),
      );
    }
    expect(await ua.inbox.quiet(300)).toEqual([]);
    expect(events.filter((e) => e.type === "scanner")).toHaveLength(4);
  });

  it("offers the scanner check as a hook", async () => {
    const endpoint = await startEndpoint({ isScanner: (req) => req.headers.get("X-Scan") === "yes" });
    const ua = await UdpUa.open();
    cleanups.push(
      () => endpoint.close(),
      () => ua.close(),
    );
    ua.send(
      options(endpoint, `SIP/2.0/UDP 127.0.0.1:${ua.port}`, "User-Agent: friendly-scanner\n"),
      udpPort(endpoint),
    );
    expect((await ua.inbox.next()).status).toBe(200);
    ua.send(options(endpoint, `SIP/2.0/UDP 127.0.0.1:${ua.port}`, "X-Scan: yes\n"), udpPort(endpoint));
    expect(await ua.inbox.quiet(200)).toEqual([]);
  });

  it("answers 500 when a handler throws, and keeps serving", async () => {
    const { endpoint, ua, events } = await setup();
    endpoint.onRequest("MESSAGE", () => {
      throw new Error("handler bug");
    });
    ua.send(options(endpoint, `SIP/2.0/UDP 127.0.0.1:${ua.port}`, "", "MESSAGE"), udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(500);
    expect(events.find((e) => e.type === "internal-error")?.detail).toBe("handler bug");
    ua.send(options(endpoint, `SIP/2.0/UDP 127.0.0.1:${ua.port}`), udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(200);
  });

  it("serves SIP over TLS on its own port", async () => {
    const pki = makeTestPki(["localhost"]);
    const endpoint = await startEndpoint({
      transport: { address: "127.0.0.1", udpPort: 0, tls: { port: 0, cert: pki.cert, key: pki.key } },
    });
    cleanups.push(() => endpoint.close());
    const port = endpoint.transport.local("TLS")!.port;
    const socket = tls.connect({ host: "127.0.0.1", port, ca: pki.ca, servername: "localhost" });
    cleanups.push(() => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      socket.once("secureConnect", resolve);
      socket.once("error", reject);
    });
    const reply = new Promise<string>((resolve) => {
      let text = "";
      socket.on("data", (d: Buffer) => {
        text += d.toString();
        if (text.includes("\r\n\r\n")) resolve(text);
      });
    });
    socket.write(options(endpoint, `SIP/2.0/TLS 127.0.0.1:${socket.localPort}`).replace(/\n/g, "\r\n"));
    expect(await reply).toMatch(/^SIP\/2\.0 200 OK\r\n/);
  });

  it("fails to start with an error naming the address and port that cannot be bound", async () => {
    const { endpoint } = await setup();
    const port = udpPort(endpoint);
    const error = await startEndpoint({ transport: { address: "127.0.0.1", udpPort: port } }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SipBindError);
    expect((error as SipBindError).message).toContain(`UDP on 127.0.0.1:${port}`);
    expect((error as SipBindError).port).toBe(port);
  });
});
