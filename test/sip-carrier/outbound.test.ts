/**
 * Real calls out over SIP: CreateCall through the real app's API (build() +
 * listen() + listenSip()) to a `sip:` URI reaches a raw-socket UA on
 * 127.0.0.1, which answers with literal messages: 180 + 200 (ACKed; the
 * handler's `<Say>` arrives as RTP; BYE at the end), 486 (BUSY), or only 180
 * until the call's timeout (CANCEL, NOT_ANSWERED). A domain user registered
 * with REGISTER is called at its registered contact.
 */
import { randomBytes } from "node:crypto";
import dgram from "node:dgram";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Call, Call_State, Call_Transport, Calls } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { SipDomains } from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipUsers } from "../../gen/switchboard/voice/v1/sip_users_pb.js";
import { systemClock } from "../../src/clock.js";
import { sharedSpeech } from "../../src/media/speech/index.js";
import { type App, build } from "../../src/server.js";
import { encodeG711 } from "../../src/telephony/g711.js";
import { addBlock, numberingClients, provision } from "../numbering/support.js";
import { type Received, UdpUa } from "../sip/ua.js";
import { bearer, createTestClient, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { newSipDomainId } from "../voice/support.js";
import { digestAnswer, type RtpSeen, spokenRun } from "./phone.js";

let blocks = Math.floor(Math.random() * 900);

describe.each(testDatabases())("outbound SIP calls on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let sipPort: number;
  let handler: Receiver;
  let calls: ReturnType<typeof createClient<typeof Calls>>;
  const sockets: Array<{ close(): void }> = [];

  beforeAll(async () => {
    app = await build({
      config: testConfig({
        SIP_PORT: "0",
        RTP_PORT_MIN: "0",
        LOG_LEVEL: "silent",
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
      }),
      db: database.db,
    });
    sipPort = (await app.listenSip()).local("UDP")!.port;
    const base = `http://127.0.0.1:${(await app.listen(0)).port}`;
    calls = createClient(
      Calls,
      createConnectTransport({
        baseUrl: base,
        httpVersion: "1.1",
        interceptors: [bearer(TEST_OPERATOR_TOKEN)],
      }),
    );
    handler = await startReceiver();
    handler.handle((_req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(xml("<Say>Hello Bob</Say>"));
    });
  });

  afterAll(async () => {
    for (const s of sockets) s.close();
    await handler?.close();
    await app?.close();
  });

  async function ua(): Promise<UdpUa> {
    const u = await UdpUa.open();
    sockets.push(u);
    return u;
  }

  async function rtpSocket(): Promise<{ port: number; packets: RtpSeen[] }> {
    const socket = dgram.createSocket("udp4");
    await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", () => resolve()));
    sockets.push(socket);
    const packets: RtpSeen[] = [];
    socket.on("message", (data, from) =>
      packets.push({
        version: data[0]! >> 6,
        marker: (data[1]! & 0x80) !== 0,
        payloadType: data[1]! & 0x7f,
        sequence: data.readUInt16BE(2),
        timestamp: data.readUInt32BE(4),
        ssrc: data.readUInt32BE(8),
        payload: data.subarray(12),
        from: from.port,
      }),
    );
    return { port: socket.address().port, packets };
  }

  /** A project owning a number to call from. */
  async function owner(): Promise<{ project: string; from: string }> {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, systemClock);
    const from = await addBlock(c, `+6125550${String(blocks++ % 1000).padStart(3, "0")}0`, 10);
    await provision(c, project, from);
    return { project, from };
  }

  /** A response to `request` from the UA (To tag added for non-100). */
  function reply(u: UdpUa, request: Received, status: string, extra: string[] = [], body = ""): void {
    const to = request.header("To")!;
    const lines = [
      `SIP/2.0 ${status}`,
      ...request.headers("Via").map((v) => `Via: ${v}`),
      `From: ${request.header("From")}`,
      `To: ${to}${to.includes("tag=") || status.startsWith("100") ? "" : ";tag=bob1"}`,
      `Call-ID: ${request.header("Call-ID")}`,
      `CSeq: ${request.header("CSeq")}`,
      ...extra,
      ...(body === "" ? [] : ["Content-Type: application/sdp"]),
      `Content-Length: ${Buffer.byteLength(body)}`,
      "",
      body,
    ];
    u.send(Buffer.from(lines.join("\r\n")), sipPort);
  }

  function answerSdp(rtpPort: number): string {
    return [
      "v=0",
      "o=bob 7 1 IN IP4 127.0.0.1",
      "s=bob",
      "c=IN IP4 127.0.0.1",
      "t=0 0",
      `m=audio ${rtpPort} RTP/AVP 8`,
      "a=rtpmap:8 PCMA/8000",
      "a=ptime:20",
      "a=sendrecv",
      "",
    ].join("\r\n");
  }

  async function ended(name: string): Promise<Call> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const call = await calls.getCall({ name });
      if (
        [
          Call_State.COMPLETED,
          Call_State.BUSY,
          Call_State.NOT_ANSWERED,
          Call_State.FAILED,
          Call_State.REJECTED,
        ].includes(call.state)
      )
        return call;
      if (Date.now() > deadline) throw new Error(`${name} did not end: ${Call_State[call.state]}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async function create(to: string, timeoutSeconds = 30): Promise<Call> {
    const { project, from } = await owner();
    return calls.createCall({
      parent: project,
      call: { to, from, options: { handlerUris: [`${handler.base}/answer`], timeoutSeconds } },
    });
  }

  it("calls a sip: URI: 180, 200 (ACKed), the <Say> as RTP, BYE; the Call is SIP and COMPLETED", async () => {
    const u = await ua();
    const media = await rtpSocket();
    const created = await create(`sip:bob@127.0.0.1:${u.port}`);
    expect(created.transport).toBe(Call_Transport.SIP);
    const invite = await u.inbox.next((m) => m.method === "INVITE");
    expect(invite.header("Content-Type")).toBe("application/sdp");
    expect(invite.body).toMatch(/^m=audio \d+ RTP\/AVP 0 8 101\r$/m);
    reply(u, invite, "180 Ringing");
    reply(u, invite, "200 OK", [`Contact: <sip:bob@127.0.0.1:${u.port}>`], answerSdp(media.port));
    const ack = await u.inbox.next((m) => m.method === "ACK");
    expect(ack.header("CSeq")).toBe(invite.header("CSeq")!.replace("INVITE", "ACK"));
    const bye = await u.inbox.next((m) => m.method === "BYE", 15_000);
    reply(u, bye, "200 OK");
    const call = await ended(created.name);
    expect(call.state).toBe(Call_State.COMPLETED);
    expect(call.sipCallId).toBe(invite.header("Call-ID"));
    // "Hello Bob" as the speech engine says it (the same cached samples),
    // in 20 ms PCMA packets (the codec the answer chose), the last padded;
    // silence (A-law 0xd5) around it: the session sends RTP for the whole
    // call, one talkspurt (the marker on its first packet only).
    const spoken = await sharedSpeech().synthesize("Hello Bob");
    expect(media.packets.every((p) => p.payloadType === 8 && p.payload.length === 160)).toBe(true);
    const first = spokenRun(media.packets, Buffer.from(encodeG711("alaw", spoken)), 0xd5);
    expect(media.packets.length).toBeGreaterThanOrEqual(first + Math.ceil(spoken.length / 160));
    expect(media.packets[0]!.marker).toBe(true);
    expect(media.packets.slice(1).some((p) => p.marker)).toBe(false);
    for (let i = 1; i < media.packets.length; i++) {
      expect((media.packets[i]!.sequence - media.packets[i - 1]!.sequence) & 0xffff).toBe(1);
      expect((media.packets[i]!.timestamp - media.packets[i - 1]!.timestamp) >>> 0).toBe(160);
    }
  });

  it("ends BUSY on 486 (and ACKs it)", async () => {
    const u = await ua();
    const created = await create(`sip:bob@127.0.0.1:${u.port}`);
    const invite = await u.inbox.next((m) => m.method === "INVITE");
    reply(u, invite, "486 Busy Here");
    const ack = await u.inbox.next((m) => m.method === "ACK");
    expect(ack.header("To")).toContain("tag=bob1");
    const call = await ended(created.name);
    expect(call.state).toBe(Call_State.BUSY);
  });

  it("ends FAILED with SIP_<status> on other refusals", async () => {
    const u = await ua();
    const created = await create(`sip:bob@127.0.0.1:${u.port}`);
    const invite = await u.inbox.next((m) => m.method === "INVITE");
    reply(u, invite, "404 Not Found");
    const call = await ended(created.name);
    expect(call.state).toBe(Call_State.FAILED);
    expect(call.errorCode).toBe("SIP_404");
  });

  it("CANCELs a call nobody answers within its timeout: NOT_ANSWERED", async () => {
    const u = await ua();
    const created = await create(`sip:bob@127.0.0.1:${u.port}`, 2);
    const invite = await u.inbox.next((m) => m.method === "INVITE");
    reply(u, invite, "180 Ringing");
    const cancel = await u.inbox.next((m) => m.method === "CANCEL", 15_000);
    expect(cancel.header("Call-ID")).toBe(invite.header("Call-ID"));
    expect(cancel.headers("Via")[0]).toBe(invite.headers("Via")[0]);
    reply(u, cancel, "200 OK");
    reply(u, invite, "487 Request Terminated");
    const call = await ended(created.name);
    expect(call.state).toBe(Call_State.NOT_ANSWERED);
  });

  /** A domain allowing REGISTER with user bob; returns its address-of-record. */
  async function bobsDomain(): Promise<{ aor: string; fqdn: string }> {
    const project = await newProject(database.db);
    const domain = await createTestClient(SipDomains, database.db, systemClock).createSipDomain({
      parent: project,
      sipDomainId: newSipDomainId("so"),
      sipDomain: { allowRegister: true },
    });
    await createTestClient(SipUsers, database.db, systemClock).createSipUser({
      parent: domain.name,
      sipUserId: "bob",
      sipUser: { username: "bob", password: "bob-secret-1" },
    });
    return { aor: `sip:bob@${domain.fqdn}`, fqdn: domain.fqdn };
  }

  /** REGISTERs `u`'s address as a contact of bob (answering the digest challenge). */
  async function registerBob(u: UdpUa, fqdn: string): Promise<void> {
    const aor = `sip:bob@${fqdn}`;
    const callId = `reg-${randomBytes(4).toString("hex")}`;
    const register = (authorization?: string) => {
      const branch = `z9hG4bK${randomBytes(6).toString("hex")}`;
      u.send(
        [
          `REGISTER sip:${fqdn} SIP/2.0`,
          `Via: SIP/2.0/UDP 127.0.0.1:${u.port};branch=${branch};rport`,
          "Max-Forwards: 70",
          `From: <${aor}>;tag=r1`,
          `To: <${aor}>`,
          `Call-ID: ${callId}`,
          `CSeq: ${authorization ? 2 : 1} REGISTER`,
          `Contact: <sip:bob@127.0.0.1:${u.port}>`,
          "Expires: 600",
          ...(authorization ? [`Authorization: ${authorization}`] : []),
          "Content-Length: 0",
          "",
          "",
        ].join("\n"),
        sipPort,
      );
      return u.inbox.next((m) => m.text.includes(branch) && (m.status ?? 0) >= 200);
    };
    const challenge = await register();
    expect(challenge.status).toBe(401);
    const md5 = challenge.headers("WWW-Authenticate").find((c) => c.includes("MD5"))!;
    const registered = await register(digestAnswer(md5, "REGISTER", "bob", "bob-secret-1", `sip:${fqdn}`));
    expect(registered.status).toBe(200);
  }

  it("calls a registered domain user at the contact it registered", async () => {
    const u = await ua();
    const { aor, fqdn } = await bobsDomain();
    await registerBob(u, fqdn);
    const created = await create(aor, 3);
    const invite = await u.inbox.next((m) => m.method === "INVITE");
    expect(invite.text.startsWith(`INVITE sip:bob@127.0.0.1:${u.port} SIP/2.0`)).toBe(true);
    expect(invite.header("To")).toContain(aor);
    reply(u, invite, "603 Decline");
    const call = await ended(created.name);
    expect(call.state).toBe(Call_State.REJECTED);
  });

  it("tries the user's next contact when one is unavailable (480)", async () => {
    const phones = [await ua(), await ua()];
    const { aor, fqdn } = await bobsDomain();
    for (const u of phones) await registerBob(u, fqdn);
    const created = await create(aor, 10);
    // Whichever contact is tried first (the registrar's order) refuses; the other is tried next.
    const deadline = Date.now() + 10_000;
    let firstUa: UdpUa | undefined;
    while (firstUa === undefined) {
      if (Date.now() > deadline) throw new Error("no INVITE reached a contact");
      firstUa = phones.find((u) => u.inbox.pending.some((m) => m.method === "INVITE"));
      await new Promise((r) => setTimeout(r, 20));
    }
    const first = { u: firstUa, invite: await firstUa.inbox.next((m) => m.method === "INVITE") };
    reply(first.u, first.invite, "480 Temporarily Unavailable");
    const other = phones.find((u) => u !== first.u)!;
    const second = await other.inbox.next((m) => m.method === "INVITE");
    expect(second.text.startsWith(`INVITE sip:bob@127.0.0.1:${other.port} SIP/2.0`)).toBe(true);
    reply(other, second, "603 Decline");
    expect((await ended(created.name)).state).toBe(Call_State.REJECTED);
  });
});
