/**
 * Dialogs over real UDP with raw test UAs: the UAS side (2xx retransmitted
 * until the ACK, BYE when none comes, re-INVITE hold/resume keeping the
 * dialog, BYE, 481/500) and the UAC side (INVITE, ACK for the 2xx and its
 * retransmissions, re-INVITE, BYE).
 */
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import type { Dialog } from "../../src/sip/dialog.js";
import { DialogLayer } from "../../src/sip/dialog-layer.js";
import type { SipEndpoint } from "../../src/sip/endpoint.js";
import { createAnswer, createOffer } from "../../src/sip/sdp.js";
import { ManualScheduler } from "../support/scheduler.js";
import { type Received, startEndpoint, UdpUa, udpPort } from "./ua.js";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const media = { address: "127.0.0.1", port: 40000, sessionId: 7, sessionVersion: 1 };
const offerSdp = (direction = "sendrecv") =>
  `v=0\r\no=ua 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 30000 RTP/AVP 0 101\r\na=rtpmap:101 telephone-event/8000\r\na=${direction}\r\n`;

async function setup() {
  const scheduler = new ManualScheduler();
  const endpoint = await startEndpoint({ scheduler });
  const ua = await UdpUa.open();
  const ended: string[] = [];
  const layer = new DialogLayer(endpoint, {
    terminated: (_d, why) => ended.push(why),
    request: (dialog, tx) => {
      if (tx.request.method === "INVITE") {
        dialog.answer(tx, { body: Buffer.from(createAnswer(tx.request.body.toString(), media).sdp) });
      } else tx.respond(tx.reply(200));
    },
  });
  cleanups.push(
    () => endpoint.close(),
    () => ua.close(),
  );
  return { scheduler, endpoint, ua, layer, ended };
}

let n = 0;

/** The UA's side of an incoming-call dialog. */
function uaDialog(ua: UdpUa, endpoint: SipEndpoint) {
  const id = ++n;
  let cseq = 0;
  let toTag = "";
  const target = `sip:service@127.0.0.1:${udpPort(endpoint)}`;
  const send = (method: string, opts: { body?: string; seq?: number; branch?: string } = {}) => {
    const seq = opts.seq ?? ++cseq;
    const body = opts.body ?? "";
    const branch = opts.branch ?? `z9hG4bKd${id}m${method}${seq}${Math.random().toString(36).slice(2, 6)}`;
    ua.send(
      `${method} ${target} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${ua.port};branch=${branch};rport
Max-Forwards: 70
From: "Alice" <sip:alice@example.com>;tag=ua${id}
To: <sip:service@example.com>${toTag === "" ? "" : `;tag=${toTag}`}
Call-ID: dlg-${id}@test
CSeq: ${seq} ${method}
Contact: <sip:alice@127.0.0.1:${ua.port}>
${body === "" ? "" : "Content-Type: application/sdp\n"}Content-Length: ${Buffer.byteLength(body.replace(/\r?\n/g, "\r\n"))}

${body}`,
      udpPort(endpoint),
    );
    return branch;
  };
  return {
    send,
    setTag: (tag: string) => {
      toTag = tag;
    },
    get cseq() {
      return cseq;
    },
  };
}

const tagOf = (m: Received) => /;tag=([^;\s]+)/.exec(m.header("To") ?? "")?.[1] ?? "";

describe("UAS dialogs", () => {
  it("retransmits the 2xx until the ACK; re-INVITE hold and resume keep the dialog; BYE ends it", async () => {
    const { scheduler, endpoint, ua, layer, ended } = await setup();
    let dialog: Dialog | undefined;
    endpoint.onRequest("INVITE", (tx, source) => {
      dialog = layer.accept(tx, source, {
        body: Buffer.from(createAnswer(tx.request.body.toString(), media).sdp),
      });
    });
    const peer = uaDialog(ua, endpoint);
    peer.send("INVITE", { body: offerSdp() });
    expect((await ua.inbox.next()).status).toBe(100);
    const ok = await ua.inbox.next();
    expect(ok.status).toBe(200);
    expect(ok.header("Contact")).toBe(`<sip:switchboard@127.0.0.1:${udpPort(endpoint)}>`);
    expect(ok.body).toContain("m=audio 40000 RTP/AVP 0 101");
    peer.setTag(tagOf(ok));
    // No ACK yet: the 2xx again after T1 and 2*T1 more.
    await scheduler.advance(0.5);
    expect((await ua.inbox.next()).status).toBe(200);
    await scheduler.advance(1);
    expect((await ua.inbox.next()).status).toBe(200);
    expect(dialog!.waitingForAck).toBe(true);
    peer.send("ACK", { seq: 1 });
    await ua.inbox.quiet(100);
    expect(dialog!.waitingForAck).toBe(false);
    await scheduler.advance(10);
    expect(await ua.inbox.quiet(100)).toEqual([]);

    // Hold, then resume: answered, ACKed, the dialog stays.
    for (const [direction, answered] of [
      ["sendonly", "recvonly"],
      ["sendrecv", "sendrecv"],
    ]) {
      peer.send("INVITE", { body: offerSdp(direction) });
      const re = await ua.inbox.next((m) => m.status === 200);
      expect(re.header("CSeq")).toBe(`${peer.cseq} INVITE`);
      expect(re.body).toContain(`a=${answered}`);
      expect(tagOf(re)).toBe(tagOf(ok));
      peer.send("ACK", { seq: peer.cseq });
      await ua.inbox.quiet(100);
      expect(dialog!.state).toBe("confirmed");
      expect(dialog!.waitingForAck).toBe(false);
    }

    peer.send("OPTIONS");
    expect((await ua.inbox.next((m) => (m.status ?? 0) >= 200)).status).toBe(200);
    peer.send("BYE");
    const bye = await ua.inbox.next((m) => m.header("CSeq")?.endsWith("BYE") === true);
    expect(bye.status).toBe(200);
    expect(dialog!.state).toBe("terminated");
    expect(ended).toEqual(["bye-received"]);
    expect(layer.size).toBe(0);
  });

  it("sends BYE when the 2xx is never acknowledged (64*T1)", async () => {
    const { scheduler, endpoint, ua, layer, ended } = await setup();
    endpoint.onRequest("INVITE", (tx, source) => {
      layer.accept(tx, source, { body: Buffer.from(createAnswer(tx.request.body.toString(), media).sdp) });
    });
    uaDialog(ua, endpoint).send("INVITE", { body: offerSdp() });
    await ua.inbox.next((m) => m.status === 200);
    await scheduler.advance(32);
    const bye = await ua.inbox.next((m) => m.method === "BYE");
    expect(bye.header("Call-ID")).toBe(`dlg-${n}@test`);
    expect(bye.header("From")).toMatch(/^<sip:service@example.com>;tag=/);
    expect(bye.text.startsWith(`BYE sip:alice@127.0.0.1:${ua.port} SIP/2.0`)).toBe(true);
    expect(ended).toEqual(["no-ack"]);
  });

  it("does not answer an INVITE a CANCEL already ended (accept returns no dialog)", async () => {
    const { endpoint, ua, layer } = await setup();
    let pending: import("../../src/sip/transaction.js").ServerTransaction | undefined;
    endpoint.onInvite((tx) => {
      pending = tx;
      tx.respond(tx.reply(180));
    });
    const peer = uaDialog(ua, endpoint);
    const branch = peer.send("INVITE", { body: offerSdp() });
    await ua.inbox.next((m) => m.status === 180);
    peer.send("CANCEL", { seq: 1, branch });
    expect((await ua.inbox.next((m) => m.status === 487)).header("CSeq")).toBe("1 INVITE");
    expect(layer.accept(pending!, { transport: "UDP", address: "127.0.0.1", port: ua.port })).toBeUndefined();
    expect(
      (await ua.inbox.quiet(200)).filter((m) => m.status === 200 && m.header("CSeq") === "1 INVITE"),
    ).toEqual([]);
    expect(layer.size).toBe(0);
  });

  it("answers 481 to a request for no dialog and 500 to a CSeq that went backwards", async () => {
    const { endpoint, ua, layer } = await setup();
    endpoint.onRequest("INVITE", (tx, source) => {
      layer.accept(tx, source, { body: Buffer.from(createAnswer(tx.request.body.toString(), media).sdp) });
    });
    const peer = uaDialog(ua, endpoint);
    peer.setTag("nonexistent");
    peer.send("BYE");
    expect((await ua.inbox.next()).status).toBe(481);
    const real = uaDialog(ua, endpoint);
    real.send("INVITE", { body: offerSdp(), seq: 10 });
    const ok = await ua.inbox.next((m) => m.status === 200);
    real.setTag(tagOf(ok));
    real.send("ACK", { seq: 10 });
    real.send("INFO", { seq: 5 });
    const r = await ua.inbox.next((m) => m.header("CSeq") === "5 INFO");
    expect([r.status, r.reason]).toEqual([500, "CSeq Out Of Order"]);
  });
});

/** Answers a request the UA received with literal text. */
function respond(ua: UdpUa, endpoint: SipEndpoint, req: Received, status: string, body = "") {
  ua.send(
    `SIP/2.0 ${status}
Via: ${req.header("Via")}
From: ${req.header("From")}
To: ${req.header("To")}${/tag=/.test(req.header("To") ?? "") ? "" : ";tag=uas1"}
Call-ID: ${req.header("Call-ID")}
CSeq: ${req.header("CSeq")}
Contact: <sip:bob@127.0.0.1:${ua.port}>
${body === "" ? "" : "Content-Type: application/sdp\n"}Content-Length: ${Buffer.byteLength(body)}

${body}`,
    udpPort(endpoint),
  );
}

describe("UAC dialogs", () => {
  it("INVITEs, ACKs the 2xx (and its retransmission), re-INVITEs and hangs up", async () => {
    const { endpoint, ua, layer } = await setup();
    const pending = layer.invite(
      `sip:bob@127.0.0.1:${ua.port}`,
      { transport: "UDP", address: "127.0.0.1", port: ua.port },
      {
        from: "<sip:switchboard@example.com>",
        body: Buffer.from(createOffer(media)),
      },
    );
    const invite = await ua.inbox.next((m) => m.method === "INVITE");
    expect(invite.header("CSeq")).toBe("1 INVITE");
    expect(invite.header("Content-Type")).toBe("application/sdp");
    respond(ua, endpoint, invite, "180 Ringing");
    respond(ua, endpoint, invite, "200 OK", offerSdp().replace(/\r\n/g, "\n").replace(/\n/g, "\r\n"));
    const ack = await ua.inbox.next((m) => m.method === "ACK");
    expect(ack.text.startsWith(`ACK sip:bob@127.0.0.1:${ua.port} SIP/2.0`)).toBe(true);
    expect(ack.header("CSeq")).toBe("1 ACK");
    expect(ack.header("To")).toBe(`<sip:bob@127.0.0.1:${ua.port}>;tag=uas1`);
    expect(ack.header("Via")).not.toBe(invite.header("Via"));
    const { response, dialog } = await pending;
    expect(response.status).toBe(200);
    expect(dialog?.state).toBe("confirmed");
    // The 2xx retransmitted: the same ACK again.
    respond(ua, endpoint, invite, "200 OK");
    expect((await ua.inbox.next((m) => m.method === "ACK")).text).toBe(ack.text);

    const reinvite = dialog!.reinvite(createOffer({ ...media, sessionVersion: 2, direction: "sendonly" }));
    const re = await ua.inbox.next((m) => m.method === "INVITE");
    expect(re.header("CSeq")).toBe("2 INVITE");
    expect(re.header("Call-ID")).toBe(invite.header("Call-ID"));
    expect(re.header("To")).toBe(`<sip:bob@127.0.0.1:${ua.port}>;tag=uas1`);
    expect(re.body).toContain("a=sendonly");
    respond(ua, endpoint, re, "200 OK");
    expect((await ua.inbox.next((m) => m.method === "ACK")).header("CSeq")).toBe("2 ACK");
    expect((await reinvite).status).toBe(200);
    expect(dialog!.state).toBe("confirmed");

    const bye = dialog!.bye();
    const byeReq = await ua.inbox.next((m) => m.method === "BYE");
    expect(byeReq.header("CSeq")).toBe("3 BYE");
    respond(ua, endpoint, byeReq, "200 OK");
    expect((await bye).status).toBe(200);
    expect(layer.size).toBe(0);
  });

  it("answers 491 to the peer's re-INVITE while ours is pending (glare)", async () => {
    const { endpoint, ua, layer } = await setup();
    const pending = layer.invite(
      `sip:bob@127.0.0.1:${ua.port}`,
      { transport: "UDP", address: "127.0.0.1", port: ua.port },
      {
        from: "<sip:switchboard@example.com>",
      },
    );
    const invite = await ua.inbox.next((m) => m.method === "INVITE");
    respond(ua, endpoint, invite, "200 OK");
    await ua.inbox.next((m) => m.method === "ACK");
    const { dialog } = await pending;
    const ours = dialog!.reinvite(createOffer({ ...media, sessionVersion: 2 }));
    const re = await ua.inbox.next((m) => m.method === "INVITE");
    // The peer's own re-INVITE crosses ours: From/To swapped, its own CSeq.
    ua.send(
      `INVITE sip:switchboard@127.0.0.1:${udpPort(endpoint)} SIP/2.0
Via: SIP/2.0/UDP 127.0.0.1:${ua.port};branch=z9hG4bKglare1;rport
Max-Forwards: 70
From: ${re.header("To")}
To: ${re.header("From")}
Call-ID: ${re.header("Call-ID")}
CSeq: 1 INVITE
Contact: <sip:bob@127.0.0.1:${ua.port}>
Content-Length: 0

`,
      udpPort(endpoint),
    );
    expect(
      (
        await ua.inbox.next(
          (m) => m.status !== undefined && m.header("CSeq") === "1 INVITE" && m.status >= 200,
        )
      ).status,
    ).toBe(491);
    respond(ua, endpoint, re, "200 OK");
    expect((await ours).status).toBe(200);
  });

  it("resolves with the final failure and no dialog", async () => {
    const { endpoint, ua, layer } = await setup();
    const pending = layer.invite(
      `sip:bob@127.0.0.1:${ua.port}`,
      { transport: "UDP", address: "127.0.0.1", port: ua.port },
      {
        from: "<sip:switchboard@example.com>",
      },
    );
    const invite = await ua.inbox.next((m) => m.method === "INVITE");
    respond(ua, endpoint, invite, "486 Busy Here");
    const { response, dialog } = await pending;
    expect([response.status, dialog]).toEqual([486, undefined]);
    expect((await ua.inbox.next((m) => m.method === "ACK")).header("CSeq")).toBe("1 ACK");
  });

  it("answers a 407 challenge with SHA-256 credentials (outbound trunk) and completes the call", async () => {
    const { endpoint, ua, layer } = await setup();
    const target = `sip:+61290001234@127.0.0.1:${ua.port}`;
    const pending = layer.invite(
      target,
      { transport: "UDP", address: "127.0.0.1", port: ua.port },
      {
        from: "<sip:+61200000000@switchboard.example>",
        credentials: { username: "trunk1", password: "pw" },
      },
    );
    const first = await ua.inbox.next((m) => m.method === "INVITE");
    expect(first.header("Proxy-Authorization")).toBeUndefined();
    ua.send(
      `SIP/2.0 407 Proxy Authentication Required
Via: ${first.header("Via")}
From: ${first.header("From")}
To: ${first.header("To")};tag=carrier
Call-ID: ${first.header("Call-ID")}
CSeq: ${first.header("CSeq")}
Proxy-Authenticate: Digest realm="carrier", nonce="n0nce", algorithm=SHA-256, qop="auth"
Proxy-Authenticate: Digest realm="carrier", nonce="n0nce", algorithm=MD5, qop="auth"
Content-Length: 0

`,
      udpPort(endpoint),
    );
    expect((await ua.inbox.next((m) => m.method === "ACK")).header("CSeq")).toBe("1 ACK");
    const second = await ua.inbox.next((m) => m.method === "INVITE");
    expect(second.header("CSeq")).toBe("2 INVITE");
    expect(second.header("Call-ID")).toBe(first.header("Call-ID"));
    expect(second.header("Via")).not.toBe(first.header("Via"));
    const auth = second.header("Proxy-Authorization")!;
    const field = (k: string) => new RegExp(`${k}="?([^",]+)"?`).exec(auth)?.[1];
    const h = (x: string) => createHash("sha256").update(x).digest("hex");
    const expected = h(
      `${h("trunk1:carrier:pw")}:n0nce:${field("nc")}:${field("cnonce")}:auth:${h(`INVITE:${target}`)}`,
    );
    expect([field("username"), field("algorithm"), field("uri"), field("response")]).toEqual([
      "trunk1",
      "SHA-256",
      target,
      expected,
    ]);
    respond(ua, endpoint, second, "200 OK");
    expect((await ua.inbox.next((m) => m.method === "ACK")).header("CSeq")).toBe("2 ACK");
    const { response, dialog } = await pending;
    expect(response.status).toBe(200);
    expect(dialog?.localSeq).toBe(2);
  });
});
