/**
 * The SIP capture end to end: real SIP exchanges with a test UA on raw
 * sockets (literal messages), the transport's tap, the capture writing to
 * the database, and GetSipInfo reading the messages back with a pcap of
 * their bytes (read by the independent parser, test/support/pcap.ts).
 *
 * - Through the real SIP edge (build() + listenSip()): an INVITE over UDP
 *   refused by the edge (501 before the SIP carrier; an unknown domain's
 *   refusal with it: either way a dialogue with a Call-ID) becomes a call's
 *   once the call is attached to its Call-ID; OPTIONS, REGISTER and an
 *   INVITE no call claims are not stored.
 * - On the SIP core with a test INVITE handler, over TCP: a digest
 *   challenge, the authenticated INVITE, 180, 200 with SDP, ACK, BYE, 200,
 *   all in order with the TCP connection's real ports, the credentials
 *   redacted.
 */
import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SipInfo, SipInfoService } from "../../gen/enfonica/voice/v1beta1/sip_info_pb.js";
import { systemClock } from "../../src/clock.js";
import type { Db } from "../../src/db/client.js";
import { calls, sipCaptureMessages } from "../../src/db/schema/index.js";
import { createLogger } from "../../src/log.js";
import { type App, build } from "../../src/server.js";
import type { SipEndpoint } from "../../src/sip/endpoint.js";
import { SipCapture } from "../../src/telephony/sip-edge/capture.js";
import type { SipEdge } from "../../src/telephony/sip-edge/edge.js";
import { SipCaptureRepository } from "../../src/voice/sip-info/repository.js";
import { createTestClient, newProject, testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { readPcap } from "../support/pcap.js";
import { type Received, startEndpoint, TcpUa, tcpPort, UdpUa } from "./ua.js";

const BASE = "sip.switchboard.local";
const SECRET_RESPONSE = "0123456789abcdef0123456789abcdef";
const SECRET_CNONCE = "c0ffee00c0ffee00";

/** A call row as the SIP carrier would create it (transport SIP, incoming). */
async function callRow(db: Db, project: string): Promise<string> {
  const id = `c-${randomBytes(8).toString("hex")}`;
  await db.insert(calls).values({
    id,
    projectId: project.split("/")[1]!,
    to: `sip:1001@d.${BASE}`,
    from: "sip:alice@127.0.0.1",
    state: "IN_PROGRESS",
    direction: "INCOMING",
    transport: "SIP",
    createMethod: "INCOMING_CALL",
    handlerUris: [],
    timeoutSeconds: 30,
    createTime: new Date(),
  });
  return id;
}

function sipInfoClient(db: Db) {
  return createClient(db);
}

function createClient(db: Db) {
  return createTestClient(SipInfoService, db, systemClock);
}

/** Polls GetSipInfo until `done` holds (the capture writes in batches, off the hot path). */
async function sipInfoWhen(db: Db, name: string, done: (info: SipInfo) => boolean): Promise<SipInfo> {
  const client = sipInfoClient(db);
  const deadline = Date.now() + 10_000;
  for (;;) {
    const info = await client.getSipInfo({ name });
    if (done(info) || Date.now() > deadline) return info;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Checks the pcap against the messages: one UDP packet each, same addresses, ports, bytes and times. */
async function expectPcapMatches(info: SipInfo): Promise<void> {
  const { packets } = await readPcap(info.pcap);
  expect(packets).toHaveLength(info.messages.length);
  const start =
    info.startTime === undefined ? 0 : Number(info.startTime.seconds) * 1000 + info.startTime.nanos / 1e6;
  info.messages.forEach((m, i) => {
    const p = packets[i]!;
    expect(p.ipProtocol).toBe(17);
    expect(p.ipHeaderChecksumOk).toBe(true);
    expect(p.udpChecksumOk).toBe(true);
    expect([p.sourceIp, p.sourcePort, p.destinationIp, p.destinationPort]).toEqual([
      m.sourceIp,
      m.sourcePort,
      m.destinationIp,
      m.destinationPort,
    ]);
    expect(p.payload).toBe(m.data);
    const offset = Number(m.offsetDuration?.seconds ?? 0n) * 1000 + (m.offsetDuration?.nanos ?? 0) / 1e6;
    expect(p.timeMs).toBeCloseTo(start + offset, 0);
  });
}

describe.each(testDatabases())("the SIP capture on $name", (backend) => {
  const database = useTestDatabase(backend);

  describe("through the SIP edge", () => {
    let app: App;
    let edge: SipEdge;
    let port: number;
    let ua: UdpUa;

    beforeAll(async () => {
      app = await build({ config: testConfig({ SIP_PORT: "0", LOG_LEVEL: "silent" }), db: database.db });
      edge = await app.listenSip();
      port = edge.local("UDP")!.port;
      ua = await UdpUa.open();
    });

    afterAll(async () => {
      ua?.close();
      await app?.close();
    });

    function request(
      method: string,
      callId: string,
      cseq: number,
      branch: string,
      extra: string[] = [],
    ): string {
      const target = method === "REGISTER" ? `sip:d.${BASE}` : `sip:1001@d.${BASE}`;
      return [
        `${method} ${target} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${ua.port};branch=${branch};rport`,
        "Max-Forwards: 70",
        `From: <sip:alice@d.${BASE}>;tag=ua${cseq}`,
        `To: <sip:${method === "REGISTER" ? "alice" : "1001"}@d.${BASE}>`,
        `Call-ID: ${callId}`,
        `CSeq: ${cseq} ${method}`,
        `Contact: <sip:alice@127.0.0.1:${ua.port}>`,
        ...extra,
        "Content-Length: 0",
        "",
        "",
      ].join("\n");
    }

    async function exchange(method: string, callId: string, extra: string[] = []): Promise<Received> {
      const branch = `z9hG4bK${randomBytes(6).toString("hex")}`;
      ua.send(request(method, callId, 1, branch, extra), port);
      const final = await ua.inbox.next((m) => m.text.includes(branch) && (m.status ?? 0) >= 200);
      if (method === "INVITE") {
        // The ACK of a non-2xx final response: same branch, To with the response's tag.
        const ack = request("ACK", callId, 1, branch).replace(/^To: (.*)$/m, `To: ${final.header("To")}`);
        ua.send(ack, port);
      }
      return final;
    }

    it("stores an INVITE dialogue once a call claims its Call-ID: both directions, in order, real addresses, credentials redacted", async () => {
      const project = await newProject(database.db);
      const sipCallId = `cap-${randomBytes(6).toString("hex")}@127.0.0.1`;
      const authorization = `Authorization: Digest username="alice", realm="d.${BASE}", nonce="n0", uri="sip:1001@d.${BASE}", response="${SECRET_RESPONSE}", algorithm=MD5, qop=auth, nc=00000001, cnonce="${SECRET_CNONCE}"`;
      const final = await exchange("INVITE", sipCallId, [authorization]);
      expect(final.status).toBeGreaterThanOrEqual(300);
      // Noise on the same listener: never stored.
      await exchange("OPTIONS", `opt-${sipCallId}`);
      await exchange("REGISTER", `reg-${sipCallId}`);
      const unclaimed = `unclaimed-${sipCallId}`;
      await exchange("INVITE", unclaimed);

      const callId = await callRow(database.db, project);
      edge.capture.attach(callId, sipCallId);
      const name = `${project}/calls/${callId}/sipInfo`;
      const info = await sipInfoWhen(database.db, name, (i) => i.messages.some((m) => m.method === "ACK"));

      expect(info.sipCallId).toBe(sipCallId);
      expect(info.omittedMessageCount).toBe(0);
      const lines = info.messages.map((m) => m.requestLine);
      // The refusal may be sent again (timer G) if the ACK is slow to arrive.
      expect(lines.join("|")).toMatch(
        new RegExp(
          `^INVITE sip:1001@d\\.${BASE.replace(/\./g, "\\.")} SIP/2\\.0\\|SIP/2\\.0 100 Trying(\\|SIP/2\\.0 ${final.status} [^|]+)+\\|ACK sip:`,
        ),
      );
      expect(info.messages.map((m) => m.method)).toEqual(
        info.messages.map((m) => (m.requestLine.startsWith("ACK") ? "ACK" : "INVITE")),
      );
      for (const m of info.messages) {
        const fromUa = !m.requestLine.startsWith("SIP/2.0");
        const uaSide = ["127.0.0.1", ua.port];
        const edgeSide = ["127.0.0.1", port];
        expect([m.sourceIp, m.sourcePort]).toEqual(fromUa ? uaSide : edgeSide);
        expect([m.destinationIp, m.destinationPort]).toEqual(fromUa ? edgeSide : uaSide);
        expect(m.data).toContain(`Call-ID: ${sipCallId}\r\n`);
        expect(m.data.startsWith(`${m.requestLine}\r\n`)).toBe(true);
      }
      const offsets = info.messages.map(
        (m) => Number(m.offsetDuration?.seconds ?? 0n) * 1e9 + (m.offsetDuration?.nanos ?? 0),
      );
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
      // The received INVITE as the UA wrote it, except for the credentials.
      const invite = info.messages[0]!.data;
      expect(invite).not.toContain(SECRET_RESPONSE);
      expect(invite).not.toContain(SECRET_CNONCE);
      expect(invite).toContain(
        `Authorization: Digest username="alice", realm="d.${BASE}", nonce="n0", uri="sip:1001@d.${BASE}", response="REDACTED", algorithm=MD5, qop=auth, nc=00000001, cnonce="REDACTED"\r\n`,
      );
      await expectPcapMatches(info);

      // Nothing of the unclaimed INVITE, the OPTIONS or the REGISTER was written.
      await edge.capture.flush();
      const stored = await database.db
        .select({ sipCallId: sipCaptureMessages.sipCallId })
        .from(sipCaptureMessages)
        .where(eq(sipCaptureMessages.callId, callId));
      expect(new Set(stored.map((r) => r.sipCallId))).toEqual(new Set([sipCallId]));
      for (const other of [unclaimed, `opt-${sipCallId}`, `reg-${sipCallId}`]) {
        const rows = await database.db
          .select()
          .from(sipCaptureMessages)
          .where(eq(sipCaptureMessages.sipCallId, other));
        expect(rows).toHaveLength(0);
      }
    });
  });

  describe("a whole dialogue over TCP on the SIP core", () => {
    let endpoint: SipEndpoint;
    let capture: SipCapture;
    let ua: TcpUa;
    let callId = "";
    let project = "";

    beforeAll(async () => {
      capture = new SipCapture({
        store: new SipCaptureRepository(database.db),
        maxMessages: 200,
        maxBytes: 256 * 1024,
        log: createLogger("silent"),
      });
      endpoint = await startEndpoint({
        transport: { address: "127.0.0.1", udpPort: 0, tcpPort: 0, tap: capture.tap },
      });
      // A UAS that challenges, then rings and answers, and answers BYE.
      endpoint.onInvite((tx) => {
        if (!tx.request.headers.has("Authorization")) {
          tx.respond(
            tx.reply(401, undefined, [
              ["WWW-Authenticate", `Digest realm="d.${BASE}", nonce="n1", algorithm=MD5, qop="auth"`],
            ]),
          );
          return;
        }
        // The authenticated INVITE became a call: the carrier attaches it.
        capture.attach(callId, tx.request.headers.get("Call-ID")!);
        tx.respond(tx.reply(180));
        const sdp = Buffer.from(
          "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\n",
        );
        tx.respond(
          tx.reply(
            200,
            undefined,
            [
              ["Contact", `<sip:1001@127.0.0.1:${tcpPort(endpoint)};transport=tcp>`],
              ["Content-Type", "application/sdp"],
            ],
            sdp,
          ),
        );
      });
      endpoint.onAck(() => {});
      endpoint.onInDialogRequest((tx) => tx.respond(tx.reply(200)));
      project = await newProject(database.db);
      callId = await callRow(database.db, project);
      ua = await TcpUa.connect(tcpPort(endpoint));
    });

    afterAll(async () => {
      ua?.close();
      await endpoint?.close();
      await capture?.close();
    });

    it("stores challenge, authenticated INVITE, 180, 200, ACK, BYE and 200 with the connection's ports; the pcap has them as UDP", async () => {
      const sipCallId = `tcp-${randomBytes(6).toString("hex")}`;
      const head = (method: string, cseq: number, branch: string, toTag = "") => [
        `${method} sip:1001@d.${BASE};transport=tcp SIP/2.0`,
        `Via: SIP/2.0/TCP 127.0.0.1:${ua.port};branch=${branch}`,
        "Max-Forwards: 70",
        `From: "Alice" <sip:alice@d.${BASE}>;tag=a1`,
        `To: <sip:1001@d.${BASE}>${toTag}`,
        `Call-ID: ${sipCallId}`,
        `CSeq: ${cseq} ${method}`,
      ];
      const b1 = `z9hG4bK${randomBytes(6).toString("hex")}`;
      ua.send([...head("INVITE", 1, b1), "Content-Length: 0", "", ""].join("\n"));
      const challenge = await ua.inbox.next((m) => m.status === 401);
      ua.send(
        [
          ...head("ACK", 1, b1, `;tag=${/tag=(\w+)/.exec(challenge.header("To")!)![1]}`),
          "Content-Length: 0",
          "",
          "",
        ].join("\n"),
      );
      const b2 = `z9hG4bK${randomBytes(6).toString("hex")}`;
      const auth = `Authorization: Digest username="alice", realm="d.${BASE}", nonce="n1", uri="sip:1001@d.${BASE}", response="${SECRET_RESPONSE}", algorithm=MD5, qop=auth, nc=00000001, cnonce="${SECRET_CNONCE}"`;
      const offer =
        "v=0\r\no=- 2 2 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 41000 RTP/AVP 0\r\n";
      ua.send(
        [
          ...head("INVITE", 2, b2),
          auth,
          `Contact: <sip:alice@127.0.0.1:${ua.port};transport=tcp>`,
          "Content-Type: application/sdp",
          `Content-Length: ${offer.length}`,
          "",
          offer,
        ].join("\n"),
      );
      const ok = await ua.inbox.next((m) => m.status === 200 && m.text.includes(b2));
      const toTag = `;tag=${/tag=(\w+)/.exec(ok.header("To")!)![1]}`;
      ua.send(
        [
          ...head("ACK", 2, `z9hG4bK${randomBytes(6).toString("hex")}`, toTag),
          "Content-Length: 0",
          "",
          "",
        ].join("\n"),
      );
      const b3 = `z9hG4bK${randomBytes(6).toString("hex")}`;
      ua.send([...head("BYE", 3, b3, toTag), "Content-Length: 0", "", ""].join("\n"));
      await ua.inbox.next((m) => m.status === 200 && m.text.includes(b3));

      const name = `${project}/calls/${callId}/sipInfo`;
      const info = await sipInfoWhen(database.db, name, (i) => i.messages.length >= 11);
      expect(info.sipCallId).toBe(sipCallId);
      expect(
        info.messages.map((m) => `${m.method} ${m.requestLine.split(" ").slice(0, 2).join(" ")}`),
      ).toEqual([
        "INVITE INVITE sip:1001@d.sip.switchboard.local;transport=tcp",
        "INVITE SIP/2.0 100",
        "INVITE SIP/2.0 401",
        "ACK ACK sip:1001@d.sip.switchboard.local;transport=tcp",
        "INVITE INVITE sip:1001@d.sip.switchboard.local;transport=tcp",
        "INVITE SIP/2.0 100",
        "INVITE SIP/2.0 180",
        "INVITE SIP/2.0 200",
        "ACK ACK sip:1001@d.sip.switchboard.local;transport=tcp",
        "BYE BYE sip:1001@d.sip.switchboard.local;transport=tcp",
        "BYE SIP/2.0 200",
      ]);
      const uaSide = ["127.0.0.1", ua.port];
      const edgeSide = ["127.0.0.1", tcpPort(endpoint)];
      for (const m of info.messages) {
        const fromUa = !m.requestLine.startsWith("SIP/2.0");
        expect([m.sourceIp, m.sourcePort]).toEqual(fromUa ? uaSide : edgeSide);
        expect([m.destinationIp, m.destinationPort]).toEqual(fromUa ? edgeSide : uaSide);
      }
      expect(info.messages[2]!.data).toContain(
        'WWW-Authenticate: Digest realm="d.sip.switchboard.local", nonce="n1"',
      );
      const authenticated = info.messages[4]!.data;
      expect(authenticated).toContain('response="REDACTED"');
      expect(authenticated).not.toContain(SECRET_RESPONSE);
      expect(authenticated).not.toContain(SECRET_CNONCE);
      expect(authenticated.endsWith(`\r\n\r\n${offer}`)).toBe(true);
      expect(info.messages[7]!.data).toContain("m=audio 40000 RTP/AVP 0\r\n");
      await expectPcapMatches(info);
    });
  });
});
