/**
 * RFC 3261 §17 transactions through a real endpoint and raw UDP/TCP test
 * UAs: every timer path with the deterministic scheduler (time moves only
 * when the test advances it), plus one retransmission on real timers.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import type { SipEndpoint } from "../../src/sip/endpoint.js";
import { SipHeaders, type SipRequest, type SipResponse } from "../../src/sip/message.js";
import { parseUri } from "../../src/sip/uri.js";
import { RealScheduler } from "../../src/telephony/scheduler.js";
import { ManualScheduler } from "../support/scheduler.js";
import { type Received, startEndpoint, TcpUa, tcpPort, UdpUa, udpPort } from "./ua.js";

/** Sets a user on `tx` whose callback alone reaches a call; a weak reference to that call. */
function giveUser(tx: import("../../src/sip/transaction.js").ServerTransaction): WeakRef<object> {
  const call = { media: new Uint8Array(1024) };
  tx.user = { cancelled: () => void call.media };
  return new WeakRef(call);
}

/** A full collection (V8's gc, exposed for the call), after the microtasks that held references ran. */
async function collectGarbage(): Promise<void> {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setImmediate(r));
    gc();
  }
}

let n = 0;
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(transportTimers = {}) {
  const scheduler = new ManualScheduler();
  const endpoint = await startEndpoint({ scheduler, timers: transportTimers });
  const ua = await UdpUa.open();
  cleanups.push(
    () => endpoint.close(),
    () => ua.close(),
  );
  return { scheduler, endpoint, ua };
}

function request(
  method: string,
  ua: { port: number },
  endpoint: SipEndpoint,
  opts: { branch?: string; cseq?: number; callId?: string; transport?: string } = {},
) {
  const branch = opts.branch ?? `z9hG4bKtest${++n}`;
  return {
    branch,
    text: `${method} sip:service@127.0.0.1:${udpPort(endpoint)} SIP/2.0
Via: SIP/2.0/${opts.transport ?? "UDP"} 127.0.0.1:${ua.port};branch=${branch};rport
Max-Forwards: 70
From: <sip:alice@example.com>;tag=a${n}
To: <sip:service@example.com>
Call-ID: ${opts.callId ?? `call-${n}`}@test
CSeq: ${opts.cseq ?? 1} ${method}
Contact: <sip:alice@127.0.0.1:${ua.port}>
Content-Length: 0

`,
  };
}

const final = (m: Received) => (m.status ?? 0) >= 200;

describe("server transactions", () => {
  it("non-INVITE: a retransmitted request gets the response again until timer J (64*T1) ends it", async () => {
    const { scheduler, endpoint, ua } = await setup();
    endpoint.onRequest("MESSAGE", (tx) => tx.respond(tx.reply(202)));
    const { text } = request("MESSAGE", ua, endpoint);
    ua.send(text, udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(202);
    ua.send(text, udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(202);
    expect(endpoint.transactionCount).toBe(1);
    await scheduler.advance(31.9);
    expect(endpoint.transactionCount).toBe(1);
    await scheduler.advance(0.1);
    expect(endpoint.transactionCount).toBe(0);
  });

  it("non-INVITE: a stateless final response (RFC 3261 §8.2.7) keeps nothing; a retransmission is answered anew", async () => {
    const { endpoint, ua } = await setup();
    let answered = 0;
    endpoint.onRequest("REGISTER", (tx) => {
      answered++;
      tx.respondStateless(
        tx.reply(401, "Unauthorized", [["WWW-Authenticate", `Digest nonce="n${answered}"`]]),
      );
    });
    const { text } = request("REGISTER", ua, endpoint);
    ua.send(text, udpPort(endpoint));
    const first = await ua.inbox.next();
    expect(first.status).toBe(401);
    expect(endpoint.transactionCount).toBe(0);
    ua.send(text, udpPort(endpoint));
    const again = await ua.inbox.next();
    expect(again.status).toBe(401);
    // Not the first response resent: the handler answered the retransmission itself.
    expect(answered).toBe(2);
    expect(again.text).toContain('nonce="n2"');
    expect(endpoint.transactionCount).toBe(0);
  });

  it("non-INVITE: completed transactions answer their own retransmissions, each for 64*T1 from its answer", async () => {
    const { scheduler, endpoint, ua } = await setup();
    endpoint.onRequest("MESSAGE", (tx) => tx.respond(tx.reply(202)));
    endpoint.onRequest("REGISTER", (tx) => tx.respond(tx.reply(401)));
    const first = request("MESSAGE", ua, endpoint);
    ua.send(first.text, udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(202);
    await scheduler.advance(10);
    const second = request("REGISTER", ua, endpoint);
    ua.send(second.text, udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(401);
    expect(endpoint.transactionCount).toBe(2);
    // Each retransmission gets its own transaction's response, not the other's.
    ua.send(second.text, udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(401);
    ua.send(first.text, udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(202);
    await scheduler.advance(22);
    expect(endpoint.transactionCount).toBe(1);
    // The first is gone: its retransmission is a new request, answered by the handler again.
    ua.send(first.text, udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(202);
    await scheduler.advance(10);
    expect(endpoint.transactionCount).toBe(1);
    await scheduler.advance(22);
    expect(endpoint.transactionCount).toBe(0);
  });

  it("non-INVITE over TCP: no timer J, the transaction ends with its response", async () => {
    const { endpoint } = await setup();
    endpoint.onRequest("MESSAGE", (tx) => tx.respond(tx.reply(202)));
    const tcp = await TcpUa.connect(tcpPort(endpoint));
    cleanups.push(() => tcp.close());
    tcp.send(request("MESSAGE", tcp, endpoint, { transport: "TCP" }).text);
    expect((await tcp.inbox.next()).status).toBe(202);
    expect(endpoint.transactionCount).toBe(0);
  });

  it("INVITE: 100 Trying at once and again for a retransmission; a non-2xx final response is retransmitted (G) until the ACK, then I ends it", async () => {
    const { scheduler, endpoint, ua } = await setup();
    const txs: Array<import("../../src/sip/transaction.js").ServerTransaction> = [];
    endpoint.onRequest("INVITE", (tx) => txs.push(tx));
    const { text, branch } = request("INVITE", ua, endpoint);
    ua.send(text, udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(100);
    ua.send(text, udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(100);
    expect(txs).toHaveLength(1);
    txs[0]!.respond(txs[0]!.reply(486));
    const busy = await ua.inbox.next();
    expect(busy.status).toBe(486);
    await scheduler.advance(0.5);
    expect((await ua.inbox.next()).status).toBe(486);
    await scheduler.advance(1);
    expect((await ua.inbox.next()).status).toBe(486);
    expect(txs[0]!.runningTimers).toEqual(["G", "H"]);
    ua.send(
      `ACK sip:service@127.0.0.1:${udpPort(endpoint)} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${ua.port};branch=${branch};rport
Max-Forwards: 70
From: <sip:alice@example.com>;tag=a${n}
To: ${busy.header("To")}
Call-ID: call-${n}@test
CSeq: 1 ACK
Content-Length: 0

`,
      udpPort(endpoint),
    );
    await ua.inbox.quiet(200);
    expect(txs[0]!.state).toBe("confirmed");
    expect(txs[0]!.runningTimers).toEqual(["I"]);
    await scheduler.advance(10);
    expect(await ua.inbox.quiet(100)).toEqual([]);
    expect(endpoint.transactionCount).toBe(0);
  });

  it("INVITE: once accepted (2xx), the transaction keeps nothing of its user for timer L", async () => {
    const { scheduler, endpoint, ua } = await setup();
    const txs: Array<import("../../src/sip/transaction.js").ServerTransaction> = [];
    endpoint.onRequest("INVITE", (tx) => txs.push(tx));
    const { text } = request("INVITE", ua, endpoint);
    ua.send(text, udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(100);
    // What a call's CANCEL handler reaches (the call, its media): only the user's callback holds it.
    const reached = giveUser(txs[0]!);
    txs[0]!.respond(txs[0]!.reply(200));
    expect((await ua.inbox.next()).status).toBe(200);
    expect(txs[0]!.state).toBe("accepted");
    await collectGarbage();
    expect(reached.deref(), "the accepted transaction still reaches its user's call").toBeUndefined();
    // A retransmitted INVITE is still absorbed, until timer L ends the transaction.
    ua.send(text, udpPort(endpoint));
    expect(await ua.inbox.quiet(100)).toEqual([]);
    expect(endpoint.transactionCount).toBe(1);
    await scheduler.advance(32);
    expect(endpoint.transactionCount).toBe(0);
  });

  it("INVITE: without an ACK, G retransmits at T1, 2T1, 4T1, T2... and H ends it after 64*T1", async () => {
    const { scheduler, endpoint, ua } = await setup();
    let noAck = false;
    endpoint.onRequest("INVITE", (tx) => {
      tx.user = { noAck: () => (noAck = true) };
      tx.respond(tx.reply(603));
    });
    ua.send(request("INVITE", ua, endpoint).text, udpPort(endpoint));
    await ua.inbox.next(final);
    // Retransmissions at 0.5, 1.5, 3.5, 7.5, 11.5, ... 31.5: 10 within 32 s.
    await scheduler.advance(31.9);
    await ua.inbox.quiet(200);
    await scheduler.advance(0.2);
    expect(noAck).toBe(true);
    expect(endpoint.transactionCount).toBe(0);
  });

  it("INVITE: counts exactly the timer G retransmissions", async () => {
    const { scheduler, endpoint, ua } = await setup();
    endpoint.onRequest("INVITE", (tx) => tx.respond(tx.reply(603)));
    ua.send(request("INVITE", ua, endpoint).text, udpPort(endpoint));
    await ua.inbox.next(final);
    let count = 0;
    for (const step of [0.5, 1, 2, 4, 4, 4, 4, 4, 4, 4]) {
      await scheduler.advance(step);
      await ua.inbox.next(final);
      count++;
    }
    expect(count).toBe(10);
    await scheduler.advance(0.6);
    expect((await ua.inbox.quiet(200)).filter(final)).toEqual([]);
    expect(endpoint.transactionCount).toBe(0);
  });

  it("an INVITE its user never answers gets 408 after maxPending; a MESSAGE just ends", async () => {
    const { scheduler, endpoint, ua } = await setup({ maxPending: 60 });
    endpoint.onRequest("INVITE", () => {});
    endpoint.onRequest("MESSAGE", () => {});
    ua.send(request("INVITE", ua, endpoint).text, udpPort(endpoint));
    ua.send(request("MESSAGE", ua, endpoint).text, udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(100);
    await scheduler.advance(60);
    expect((await ua.inbox.next(final)).status).toBe(408);
    await scheduler.advance(40);
    expect(endpoint.transactionCount).toBe(0);
  });

  it("CANCEL: 200 to the CANCEL, 487 to the INVITE, and the user is told", async () => {
    const { endpoint, ua } = await setup();
    let cancelled = false;
    endpoint.onRequest("INVITE", (tx) => {
      tx.user = { cancelled: () => (cancelled = true) };
      tx.respond(tx.reply(180));
    });
    const invite = request("INVITE", ua, endpoint);
    ua.send(invite.text, udpPort(endpoint));
    expect((await ua.inbox.next((m) => m.status === 180)).status).toBe(180);
    ua.send(
      invite.text.replace("INVITE sip:", "CANCEL sip:").replace("CSeq: 1 INVITE", "CSeq: 1 CANCEL"),
      udpPort(endpoint),
    );
    const cancelOk = await ua.inbox.next((m) => m.header("CSeq") === "1 CANCEL");
    expect(cancelOk.status).toBe(200);
    const terminated = await ua.inbox.next((m) => m.header("CSeq") === "1 INVITE" && final(m));
    expect(terminated.status).toBe(487);
    expect(cancelled).toBe(true);
  });

  it("matches an RFC 2543 request (no magic cookie) and its retransmission to one transaction, and absorbs its ACK", async () => {
    const { endpoint, ua } = await setup();
    let calls = 0;
    let acks = 0;
    let state = () => "";
    endpoint.onAck(() => acks++);
    endpoint.onRequest("INVITE", (tx) => {
      calls++;
      state = () => tx.state;
      tx.respond(tx.reply(480));
    });
    const text = request("INVITE", ua, endpoint).text.replace(/;branch=[^;]+;rport/, "");
    ua.send(text, udpPort(endpoint));
    const first = await ua.inbox.next(final);
    ua.send(text, udpPort(endpoint));
    expect((await ua.inbox.next(final)).status).toBe(480);
    expect(calls).toBe(1);
    ua.send(
      text
        .replace("INVITE sip:", "ACK sip:")
        .replace("CSeq: 1 INVITE", "CSeq: 1 ACK")
        .replace(/^To: .*$/m, `To: ${first.header("To")}`),
      udpPort(endpoint),
    );
    await ua.inbox.quiet(200);
    expect(acks).toBe(0);
    expect(state()).toBe("confirmed");
  });

  it("survives a Via it cannot answer (port 0) through every retransmission", async () => {
    const { scheduler, endpoint, ua } = await setup();
    let called = false;
    endpoint.onRequest("INVITE", (tx) => {
      called = true;
      tx.respond(tx.reply(486));
    });
    ua.send(
      request("INVITE", ua, endpoint).text.replace(
        /127\.0\.0\.1:\d+;branch=([^;]+);rport/,
        "127.0.0.1:0;branch=$1",
      ),
      udpPort(endpoint),
    );
    await ua.inbox.quiet(200);
    expect([called, endpoint.transactionCount]).toEqual([true, 1]);
    await scheduler.advance(40);
    expect(endpoint.transactionCount).toBe(0);
    ua.send(request("MESSAGE", ua, endpoint).text, udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(405);
  });

  it("CANCEL matching no transaction gets 481", async () => {
    const { endpoint, ua } = await setup();
    const cancel = request("CANCEL", ua, endpoint);
    ua.send(cancel.text, udpPort(endpoint));
    expect((await ua.inbox.next()).status).toBe(481);
  });
});

function options(endpoint: SipEndpoint, ua: { port: number }, method = "OPTIONS"): SipRequest {
  return {
    kind: "request",
    method,
    uri: parseUri(`sip:ua@127.0.0.1:${ua.port}`),
    headers: new SipHeaders([
      ["From", `<sip:switchboard@127.0.0.1:${udpPort(endpoint)}>;tag=sb${++n}`],
      ["To", `<sip:ua@127.0.0.1:${ua.port}>`],
      ["Call-ID", `client-${n}@test`],
      ["CSeq", `1 ${method}`],
    ]),
    body: Buffer.alloc(0),
  };
}

/** Answers a request the UA received with literal text. */
function answer(ua: UdpUa, to: number, req: Received, status: string, toTag = ";tag=ua"): void {
  ua.send(
    `SIP/2.0 ${status}
Via: ${req.header("Via")}
From: ${req.header("From")}
To: ${req.header("To")}${toTag}
Call-ID: ${req.header("Call-ID")}
CSeq: ${req.header("CSeq")}
Content-Length: 0

`,
    to,
  );
}

describe("client transactions", () => {
  it("non-INVITE: E retransmits (T1 doubling to T2) until F times out after 64*T1", async () => {
    const { scheduler, endpoint, ua } = await setup();
    const peer = { transport: "UDP" as const, address: "127.0.0.1", port: ua.port };
    let timedOut = false;
    endpoint.sendRequest(options(endpoint, ua), peer, {
      response: () => {},
      timeout: () => (timedOut = true),
    });
    const first = await ua.inbox.next();
    expect(first.method).toBe("OPTIONS");
    // Sent at 0, then 0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5.
    for (const step of [0.5, 1, 2, 4, 4, 4, 4, 4, 4, 4]) {
      await scheduler.advance(step);
      const again = await ua.inbox.next();
      expect(again.header("Via")).toBe(first.header("Via"));
    }
    expect(timedOut).toBe(false);
    await scheduler.advance(0.5);
    expect(timedOut).toBe(true);
    expect(await ua.inbox.quiet(200)).toEqual([]);
    expect(endpoint.transactionCount).toBe(0);
  });

  it("non-INVITE: after a provisional E runs at T2; the final response ends it after K (T4)", async () => {
    const { scheduler, endpoint, ua } = await setup();
    const peer = { transport: "UDP" as const, address: "127.0.0.1", port: ua.port };
    const got: SipResponse[] = [];
    endpoint.sendRequest(options(endpoint, ua, "MESSAGE"), peer, {
      response: (r) => got.push(r),
      timeout: () => {},
    });
    const req = await ua.inbox.next();
    answer(ua, udpPort(endpoint), req, "100 Trying", "");
    await ua.inbox.quiet(100);
    expect(got.map((r) => r.status)).toEqual([100]);
    // E, set to T1 before the provisional, fires once more, then every T2.
    await scheduler.advance(0.5);
    await ua.inbox.next();
    await scheduler.advance(3.9);
    expect(await ua.inbox.quiet(100)).toEqual([]);
    await scheduler.advance(0.1);
    await ua.inbox.next();
    answer(ua, udpPort(endpoint), req, "200 OK");
    await ua.inbox.quiet(100);
    expect(got.map((r) => r.status)).toEqual([100, 200]);
    expect(endpoint.transactionCount).toBe(1);
    await scheduler.advance(5);
    expect(endpoint.transactionCount).toBe(0);
  });

  it("INVITE: A retransmits (doubling) until B times out after 64*T1", async () => {
    const { scheduler, endpoint, ua } = await setup();
    const peer = { transport: "UDP" as const, address: "127.0.0.1", port: ua.port };
    let timedOut = false;
    endpoint.sendRequest(options(endpoint, ua, "INVITE"), peer, {
      response: () => {},
      timeout: () => (timedOut = true),
    });
    await ua.inbox.next();
    for (const step of [0.5, 1, 2, 4, 8, 16]) {
      await scheduler.advance(step);
      expect((await ua.inbox.next()).method).toBe("INVITE");
    }
    await scheduler.advance(0.4);
    expect(timedOut).toBe(false);
    await scheduler.advance(0.1);
    expect(timedOut).toBe(true);
    expect(endpoint.transactionCount).toBe(0);
  });

  it("INVITE: a non-2xx final response is ACKed, again for its retransmission, and D ends it", async () => {
    const { scheduler, endpoint, ua } = await setup();
    const peer = { transport: "UDP" as const, address: "127.0.0.1", port: ua.port };
    const got: number[] = [];
    endpoint.sendRequest(options(endpoint, ua, "INVITE"), peer, {
      response: (r) => got.push(r.status),
      timeout: () => {},
    });
    const invite = await ua.inbox.next();
    answer(ua, udpPort(endpoint), invite, "486 Busy Here");
    const ack = await ua.inbox.next((m) => m.method === "ACK");
    expect(ack.header("CSeq")).toBe("1 ACK");
    expect(ack.header("Via")).toBe(invite.header("Via"));
    expect(ack.header("To")).toBe(`${invite.header("To")};tag=ua`);
    answer(ua, udpPort(endpoint), invite, "486 Busy Here");
    expect((await ua.inbox.next((m) => m.method === "ACK")).header("CSeq")).toBe("1 ACK");
    expect(got).toEqual([486]);
    await scheduler.advance(31.9);
    expect(endpoint.transactionCount).toBe(1);
    await scheduler.advance(0.1);
    expect(endpoint.transactionCount).toBe(0);
  });

  it("INVITE: a 2xx and its retransmissions go to the user until M ends the transaction", async () => {
    const { scheduler, endpoint, ua } = await setup();
    const peer = { transport: "UDP" as const, address: "127.0.0.1", port: ua.port };
    const got: number[] = [];
    endpoint.sendRequest(options(endpoint, ua, "INVITE"), peer, {
      response: (r) => got.push(r.status),
      timeout: () => {},
    });
    const invite = await ua.inbox.next();
    answer(ua, udpPort(endpoint), invite, "200 OK");
    answer(ua, udpPort(endpoint), invite, "200 OK");
    await ua.inbox.quiet(200);
    expect(got).toEqual([200, 200]);
    await scheduler.advance(32);
    expect(endpoint.transactionCount).toBe(0);
  });
});

describe("real UDP retransmission", () => {
  it("retransmits an unanswered request on real timers", async () => {
    const endpoint = await startEndpoint({
      scheduler: new RealScheduler(systemClock),
      timers: { t1: 0.05, t2: 0.2 },
    });
    const ua = await UdpUa.open();
    cleanups.push(
      () => endpoint.close(),
      () => ua.close(),
    );
    const peer = { transport: "UDP" as const, address: "127.0.0.1", port: ua.port };
    endpoint.sendRequest(options(endpoint, ua), peer, { response: () => {}, timeout: () => {} });
    const first = await ua.inbox.next();
    const second = await ua.inbox.next();
    expect(second.text).toBe(first.text);
  });
});
