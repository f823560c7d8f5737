/**
 * Carrier trunks in SIP signalling (issue 27 item 4), on the real app
 * (build() + listen() + listenSip() on free ports) against fake trunks: raw
 * UDP sockets on 127.0.0.1 answering with literal SIP.
 * - Out: CreateCall to +E164 goes to the enabled trunk (Request-URI
 *   `sip:+E164@host:port;user=phone`, From the caller ID); a 401 is answered
 *   with a digest the test recomputes itself; the handler's <Say> arrives as
 *   RTP. Failover to the next trunk by priority on 503 and on a trunk that
 *   never answers; 486 from the far end is the call's answer (BUSY), the next
 *   trunk never tried. A TCP trunk is reached over TCP (`transport=tcp`).
 * - In: an INVITE from a trunk's inbound network to a held number (with or
 *   without `+`, a `tel:` Request-URI, or the number in To when the
 *   Request-URI's is not held) rings the number's VoiceML handler (a real
 *   HTTP receiver) and is answered with RTP; a number nobody holds, no
 *   number, a local tel: number → 404; a source outside every trunk's
 *   networks → refused (no open relay).
 * - <Call> to a number from a SIP caller's markup: out through the trunk
 *   (its 401 answered), the caller's number as caller ID, the legs bridged
 *   (audio both ways), the caller's BYE ending both.
 * - A SIP caller's number is its caller ID only when its project holds the
 *   number: any other is withheld (From anonymous), and counted.
 * - PSTN_TRUNK domain: 503 with no trunk enabled; with one, an authorized
 *   caller's INVITE to `sip:+E164@fqdn` (or `tel:+E164` with its From at the
 *   fqdn; a tel: naming no domain is refused) goes out through the trunk: ringing
 *   and busy are mapped back, the caller's CANCEL reaches the trunk; once
 *   answered the legs are bridged (SipLeg.bridge: audio both ways) and a
 *   BYE on either side ends both.
 */
import { createHash } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Call, Call_State, Calls } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipTrunk_Transport, SipTrunks } from "../../gen/switchboard/admin/v1/sip_trunks_pb.js";
import { systemClock } from "../../src/clock.js";
import { type CallRow, calls } from "../../src/db/schema/index.js";
import { type App, build } from "../../src/server.js";
import { addBlock, numberingClients, provision } from "../numbering/support.js";
import { type Received, UdpUa } from "../sip/ua.js";
import { Phone } from "../sip-carrier/phone.js";
import { bearer, createTestClient, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { newSipDomainId } from "../voice/support.js";
import { sipResponse, streamTrunk } from "./peer.js";

let blocks = Math.floor(Math.random() * 900);
const FAR_NUMBER = "+61491570156";
const md5 = (t: string) => createHash("md5").update(t).digest("hex");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(testDatabases())("carrier trunks on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let sipPort: number;
  let handler: Receiver;
  let calls_: ReturnType<typeof createClient<typeof Calls>>;
  let base: string;
  const sockets: Array<{ close(): void }> = [];
  const trunkNames: string[] = [];
  let trunkSeq = 0;

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
    base = `http://127.0.0.1:${(await app.listen(0)).port}`;
    calls_ = createClient(
      Calls,
      createConnectTransport({
        baseUrl: base,
        httpVersion: "1.1",
        interceptors: [bearer(TEST_OPERATOR_TOKEN)],
      }),
    );
    handler = await startReceiver();
    handler.handle((req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(
        xml(
          req.path.startsWith("/in")
            ? "<Say>Hello from the number</Say>"
            : req.path.startsWith("/call")
              ? `<Call><Endpoint>${FAR_NUMBER}</Endpoint></Call>`
              : "<Say>Hello Bob</Say>",
        ),
      );
    });
  });

  afterAll(async () => {
    for (const s of sockets) s.close();
    await handler?.close();
    await app?.close();
  });

  afterEach(async () => {
    const client = createTestClient(SipTrunks, database.db, systemClock);
    for (const name of trunkNames.splice(0)) await client.deleteSipTrunk({ name }).catch(() => {});
  });

  async function ua(): Promise<UdpUa> {
    const u = await UdpUa.open();
    sockets.push(u);
    return u;
  }

  async function phone(): Promise<Phone> {
    const p = await Phone.open(sipPort);
    sockets.push(p.sip, p.media);
    return p;
  }

  /** An enabled trunk (the edge forgets its cached trunk list when this process changes one: no wait). */
  async function trunk(settings: {
    address: string;
    priority?: number;
    username?: string;
    password?: string;
    inboundNetworks?: string[];
  }): Promise<string> {
    const created = await createTestClient(SipTrunks, database.db, systemClock).createSipTrunk({
      sipTrunkId: `t${trunkSeq++}-${Math.random().toString(36).slice(2, 8)}`,
      sipTrunk: {
        address: settings.address,
        transport: SipTrunk_Transport.UDP,
        username: settings.username ?? "",
        password: settings.password ?? "",
        inboundNetworks: settings.inboundNetworks ?? [],
        enabled: true,
        priority: settings.priority ?? 10,
      },
    });
    trunkNames.push(created.name);
    return created.name;
  }

  /** A project owning a number (with the incoming handler /in when `handled`). */
  async function owner(handled = false): Promise<{ project: string; number: string }> {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, systemClock);
    const number = await addBlock(c, `+6125551${String(blocks++ % 1000).padStart(3, "0")}0`, 10);
    const instance = await provision(c, project, number);
    if (handled) {
      await c.instances.updatePhoneNumberInstance({
        name: instance.name,
        phoneNumberInstance: { incomingCallHandlerUris: [`${handler.base}/in`] },
      });
    }
    return { project, number };
  }

  /** An unlabelled metric's value on /metrics (0 before it was first counted). */
  async function metric(name: string): Promise<number> {
    const response = await fetch(`${base}/metrics`, {
      headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` },
    });
    const line = (await response.text()).split("\n").find((l) => l.startsWith(`${name} `));
    return line === undefined ? 0 : Number(line.split(" ").pop());
  }

  /** switchboard_sip_trunk_attempts_total of the trunk named `name` (its resource name) and `outcome`. */
  async function trunkAttempts(name: string, outcome: string): Promise<number> {
    const response = await fetch(`${base}/metrics`, {
      headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` },
    });
    const labels = `{trunk="${name.split("/").pop()}",outcome="${outcome}"}`;
    const line = (await response.text())
      .split("\n")
      .find((l) => l.startsWith(`switchboard_sip_trunk_attempts_total${labels} `));
    return line === undefined ? 0 : Number(line.split(" ").pop());
  }

  /** A response from a fake trunk to `request` (To tag added for non-100). */
  function reply(u: UdpUa, request: Received, status: string, extra: string[] = [], body = ""): void {
    u.send(Buffer.from(sipResponse(request, status, extra, body)), sipPort);
  }

  function answerSdp(rtpPort: number): string {
    return [
      "v=0",
      "o=carrier 7 1 IN IP4 127.0.0.1",
      "s=carrier",
      "c=IN IP4 127.0.0.1",
      "t=0 0",
      `m=audio ${rtpPort} RTP/AVP 0`,
      "a=rtpmap:0 PCMU/8000",
      "a=ptime:20",
      "a=sendrecv",
      "",
    ].join("\r\n");
  }

  async function ended(name: string): Promise<Call> {
    const deadline = Date.now() + 30_000;
    const done = [
      Call_State.COMPLETED,
      Call_State.BUSY,
      Call_State.NOT_ANSWERED,
      Call_State.FAILED,
      Call_State.REJECTED,
    ];
    for (;;) {
      const call = await calls_.getCall({ name });
      if (done.includes(call.state)) return call;
      if (Date.now() > deadline) throw new Error(`${name} did not end: ${Call_State[call.state]}`);
      await sleep(50);
    }
  }

  async function callOut(timeoutSeconds = 30): Promise<{ call: Call; from: string }> {
    const { project, number } = await owner();
    const call = await calls_.createCall({
      parent: project,
      call: {
        to: FAR_NUMBER,
        from: number,
        options: { handlerUris: [`${handler.base}/out`], timeoutSeconds },
      },
    });
    return { call, from: number };
  }

  const isInvite = (m: Received) => m.method === "INVITE";

  it("calls +E164 through the trunk, answering its 401 with the trunk's digest; <Say> arrives as RTP", async () => {
    const carrier = await ua();
    const used = await trunk({
      address: `127.0.0.1:${carrier.port}`,
      username: "acct-42",
      password: "trunk secret",
    });
    const media = await phone(); // only its RTP socket is used
    const { call, from } = await callOut();
    const first = await carrier.inbox.next(isInvite, 15_000);
    const requestUri = `sip:${FAR_NUMBER}@127.0.0.1:${carrier.port};user=phone`;
    expect(first.text.startsWith(`INVITE ${requestUri} SIP/2.0\r\n`)).toBe(true);
    expect(first.header("To")).toBe(`<${requestUri}>`);
    expect(first.header("From")).toMatch(new RegExp(`^<sip:\\${from}@`));
    expect(first.header("Authorization")).toBeUndefined();
    reply(carrier, first, "401 Unauthorized", [
      'WWW-Authenticate: Digest realm="carrier.example", nonce="n0nce-123", qop="auth", algorithm=MD5',
    ]);
    await carrier.inbox.next((m) => m.method === "ACK");
    const second = await carrier.inbox.next(isInvite, 15_000);
    expect(second.header("Call-ID")).toBe(first.header("Call-ID"));
    expect(second.header("CSeq")).toBe("2 INVITE");
    // The Authorization computed here, independently of the service's digest code.
    const auth = second.header("Authorization")!;
    const p = (k: string) => new RegExp(`${k}="?([^",]+)"?`).exec(auth)?.[1];
    expect(p("username")).toBe("acct-42");
    expect(p("realm")).toBe("carrier.example");
    expect(p("nonce")).toBe("n0nce-123");
    expect(p("uri")).toBe(requestUri);
    expect(p("qop")).toBe("auth");
    expect(p("nc")).toBe("00000001");
    const ha1 = md5("acct-42:carrier.example:trunk secret");
    const ha2 = md5(`INVITE:${requestUri}`);
    expect(p("response")).toBe(md5(`${ha1}:n0nce-123:00000001:${p("cnonce")}:auth:${ha2}`));
    reply(carrier, second, "180 Ringing");
    reply(
      carrier,
      second,
      "200 OK",
      [`Contact: <sip:carrier@127.0.0.1:${carrier.port}>`],
      answerSdp(media.rtpPort),
    );
    await carrier.inbox.next((m) => m.method === "ACK" && m.header("CSeq") === "2 ACK");
    const bye = await carrier.inbox.next((m) => m.method === "BYE", 20_000);
    reply(carrier, bye, "200 OK");
    expect((await ended(call.name)).state).toBe(Call_State.COMPLETED);
    expect(media.rtp.length).toBeGreaterThan(10);
    expect(media.rtp.every((x) => x.payloadType === 0 && x.payload.length === 160)).toBe(true);
    // Which trunk carried the call: counted (and logged) by trunk.
    expect(await trunkAttempts(used, "answered")).toBe(1);
    expect(await trunkAttempts(used, "failed")).toBe(0);
  });

  it("fails over to the next trunk by priority on 503; 486 from the far end is the call's answer", async () => {
    const a = await ua();
    const b = await ua();
    const c = await ua();
    const trunkB = await trunk({ address: `127.0.0.1:${b.port}`, priority: 20 });
    const trunkA = await trunk({ address: `127.0.0.1:${a.port}`, priority: 10 });
    const trunkC = await trunk({ address: `127.0.0.1:${c.port}`, priority: 30 });
    const { call } = await callOut();
    const first = await a.inbox.next(isInvite, 15_000);
    reply(a, first, "503 Service Unavailable");
    const second = await b.inbox.next(isInvite, 15_000);
    reply(b, second, "486 Busy Here");
    await b.inbox.next((m) => m.method === "ACK");
    const done = await ended(call.name);
    expect(done.state).toBe(Call_State.BUSY);
    // Busy is the far end's answer: the third trunk is never tried.
    expect((await c.inbox.quiet(500)).filter(isInvite)).toEqual([]);
    expect(await trunkAttempts(trunkA, "failed")).toBe(1);
    expect(await trunkAttempts(trunkB, "rejected")).toBe(1);
    expect(await trunkAttempts(trunkB, "failed")).toBe(0);
    for (const outcome of ["answered", "rejected", "failed", "cancelled"]) {
      expect(await trunkAttempts(trunkC, outcome)).toBe(0);
    }
  });

  it("fails over to the next trunk when one never answers", async () => {
    const silent = await ua();
    const b = await ua();
    await trunk({ address: `127.0.0.1:${silent.port}`, priority: 1 });
    await trunk({ address: `127.0.0.1:${b.port}`, priority: 2 });
    const { call } = await callOut();
    await silent.inbox.next(isInvite, 15_000); // retransmitted, never answered
    const invite = await b.inbox.next(isInvite, 20_000);
    reply(b, invite, "603 Decline");
    expect((await ended(call.name)).state).toBe(Call_State.REJECTED);
  });

  /** The row of the call with this SIP Call-ID, once it is ended (`done`) or as soon as it exists. */
  async function row(callId: string, done = false): Promise<CallRow> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const [r] = await database.db.select().from(calls).where(eq(calls.sipCallId, callId));
      const over = ["COMPLETED", "FAILED", "BUSY", "REJECTED", "NOT_ANSWERED"];
      if (r !== undefined && (!done || over.includes(r.state))) return r;
      if (Date.now() > deadline) throw new Error(`call ${callId} not ${done ? "ended" : "found"}`);
      await sleep(50);
    }
  }

  const final = (branch: string) => (m: Received) => m.text.includes(branch) && (m.status ?? 0) >= 200;

  it.each([
    ["with +", (n: string) => ({ uri: `sip:${n}@127.0.0.1:${sipPort}` })],
    ["as digits without +", (n: string) => ({ uri: `sip:${n.slice(1)}@127.0.0.1:${sipPort}` })],
    ["as a tel: URI", (n: string) => ({ uri: `tel:${n.slice(0, 3)}-${n.slice(3)}` })],
    // Carriers that put the number in To and a fixed value (or another number) in the Request-URI.
    [
      "in To, the Request-URI not a number",
      (n: string) => ({ uri: `sip:trunkgroup7@127.0.0.1:${sipPort}`, to: `sip:${n}@127.0.0.1` }),
    ],
    [
      "in To, the Request-URI's number held by nobody",
      (n: string) => ({ uri: `sip:+61255599997@127.0.0.1:${sipPort}`, to: `tel:${n}` }),
    ],
  ])(
    "takes an INVITE from a trunk network to a held number (%s): its handler answers, RTP flows",
    async (_, spell) => {
      await trunk({ address: "192.0.2.10", inboundNetworks: ["127.0.0.1/32"] });
      const { number, project } = await owner(true);
      const before = handler.requests.length;
      const p = await phone();
      const { uri, to } = spell(number) as { uri: string; to?: string };
      const { branch, cseq } = p.invite(uri, {
        from: `sip:${FAR_NUMBER}@192.0.2.10`,
        ...(to === undefined ? {} : { to }),
      });
      const ok = await p.sip.inbox.next(final(branch), 15_000);
      expect(ok.status).toBe(200);
      p.learn(ok);
      p.inDialog("ACK", uri, { cseq });
      const bye = await p.sip.inbox.next((m) => m.method === "BYE", 20_000);
      p.ok(bye);
      const r = await row(p.callId, true);
      expect(r.projectId).toBe(project.split("/")[1]);
      expect(r.to).toBe(number);
      expect(r.from).toBe(FAR_NUMBER);
      expect(r.transport).toBe("PSTN");
      expect(r.state).toBe("COMPLETED");
      expect(handler.requests.slice(before).some((q) => q.path.startsWith("/in"))).toBe(true);
      expect(p.rtp.length).toBeGreaterThan(10);
    },
  );

  it("answers 404 to a trunk's INVITE for a number nobody holds", async () => {
    await trunk({ address: "192.0.2.10", inboundNetworks: ["127.0.0.0/24"] });
    const p = await phone();
    const { branch } = p.invite(`sip:+61255599999@127.0.0.1:${sipPort}`, {
      from: `sip:${FAR_NUMBER}@192.0.2.10`,
    });
    const answer = await p.sip.inbox.next(final(branch), 15_000);
    expect(answer.status).toBe(404);
    expect(answer.reason).toContain("NUMBER_NOT_IN_SERVICE");
  });

  it.each([
    [
      "a number nobody holds, in both",
      "sip:+61255599999@127.0.0.1",
      "sip:+61255599998@127.0.0.1",
      "NUMBER_NOT_IN_SERVICE",
    ],
    ["no number at all", "sip:trunkgroup7@127.0.0.1", "sip:trunkgroup7@127.0.0.1", "Not A Number"],
    [
      "a local tel: number",
      "tel:0491570156;phone-context=+61",
      "tel:0491570156;phone-context=+61",
      "Not A Global Number",
    ],
  ])("answers a trunk's INVITE to %s with 404", async (_, uri, to, reason) => {
    await trunk({ address: "192.0.2.10", inboundNetworks: ["127.0.0.1/32"] });
    const p = await phone();
    const { branch } = p.invite(uri.startsWith("sip:") ? `${uri}:${sipPort}` : uri, {
      from: `sip:${FAR_NUMBER}@192.0.2.10`,
      to,
    });
    const answer = await p.sip.inbox.next(final(branch), 15_000);
    expect(answer.status).toBe(404);
    expect(answer.reason).toContain(reason);
    const [r] = await database.db.select().from(calls).where(eq(calls.sipCallId, p.callId));
    expect(r).toBeUndefined();
  });

  it("refuses an INVITE to a held number from outside every trunk's networks (no open relay)", async () => {
    await trunk({ address: "192.0.2.10", inboundNetworks: ["192.0.2.0/24"] });
    const { number } = await owner(true);
    const before = handler.requests.length;
    const p = await phone();
    const { branch } = p.invite(`sip:${number}@127.0.0.1:${sipPort}`, {
      from: `sip:${FAR_NUMBER}@192.0.2.10`,
    });
    const answer = await p.sip.inbox.next(final(branch), 15_000);
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(answer.status).toBeLessThan(500);
    expect(handler.requests.slice(before).some((q) => q.path.startsWith("/in"))).toBe(false);
    const [r] = await database.db.select().from(calls).where(eq(calls.sipCallId, p.callId));
    expect(r).toBeUndefined();
  });

  /** A PSTN_TRUNK domain taking calls from 127.0.0.1. */
  async function pstnDomain(project?: string): Promise<string> {
    const d = await createTestClient(SipDomains, database.db, systemClock).createSipDomain({
      parent: project ?? (await newProject(database.db)),
      sipDomainId: newSipDomainId("tr"),
      sipDomain: { callTerminationMode: Mode.PSTN_TRUNK, cidrBlocks: [{ cidrBlock: "127.0.0.1/32" }] },
    });
    return d.fqdn;
  }

  /** A PSTN_TRUNK domain of a project holding `number`. */
  async function heldPstnDomain(): Promise<{ fqdn: string; number: string }> {
    const { project, number } = await owner();
    return { fqdn: await pstnDomain(project), number };
  }

  it("answers 503 to a PSTN_TRUNK domain's call while no trunk is enabled", async () => {
    const fqdn = await pstnDomain();
    const p = await phone();
    const { branch } = p.invite(`sip:${FAR_NUMBER}@${fqdn}`);
    const answer = await p.sip.inbox.next(final(branch), 15_000);
    expect(answer.status).toBe(503);
    expect(answer.reason).toBe("Service Unavailable (No Carrier Trunk)");
  });

  it("sends a PSTN_TRUNK domain's call out through the trunk, its project's number as caller ID: ringing and busy mapped back", async () => {
    const carrier = await ua();
    await trunk({ address: `127.0.0.1:${carrier.port}` });
    const { fqdn, number } = await heldPstnDomain();
    const p = await phone();
    const { branch } = p.invite(`sip:${FAR_NUMBER}@${fqdn}`, { from: `sip:${number}@127.0.0.1` });
    const out = await carrier.inbox.next(isInvite, 15_000);
    expect(out.text.startsWith(`INVITE sip:${FAR_NUMBER}@127.0.0.1:${carrier.port};user=phone SIP/2.0`)).toBe(
      true,
    );
    expect(out.header("From")).toMatch(new RegExp(`^<sip:\\${number}@`));
    reply(carrier, out, "180 Ringing");
    expect((await p.sip.inbox.next((m) => m.text.includes(branch) && m.status === 180)).status).toBe(180);
    reply(carrier, out, "486 Busy Here");
    const answer = await p.sip.inbox.next(final(branch), 15_000);
    expect(answer.status).toBe(486);
    expect((await row(p.callId, true)).state).toBe("BUSY");
  });

  it("sends a tel: INVITE from a PSTN_TRUNK domain's endpoint (its From naming the domain) out through the trunk", async () => {
    const carrier = await ua();
    await trunk({ address: `127.0.0.1:${carrier.port}` });
    const { fqdn, number } = await heldPstnDomain();
    const p = await phone();
    const { branch } = p.invite(`tel:${FAR_NUMBER}`, { from: `sip:${number}@${fqdn}` });
    const out = await carrier.inbox.next(isInvite, 15_000);
    expect(out.text.startsWith(`INVITE sip:${FAR_NUMBER}@127.0.0.1:${carrier.port};user=phone SIP/2.0`)).toBe(
      true,
    );
    expect(out.header("From")).toMatch(new RegExp(`^<sip:\\${number}@`));
    reply(carrier, out, "486 Busy Here");
    const answer = await p.sip.inbox.next(final(branch), 15_000);
    expect(answer.status).toBe(486);
    const r = await row(p.callId, true);
    expect(r.state).toBe("BUSY");
    expect(r.to).toBe(`sip:${FAR_NUMBER}@${fqdn}`);
  });

  it.each([
    ["a number of another project", async () => (await owner()).number],
    ["a number nobody holds", async () => "+61255500001"],
  ])(
    "withholds a PSTN_TRUNK caller's number when it is %s: the trunk's INVITE is From anonymous",
    async (_, claimed) => {
      const carrier = await ua();
      await trunk({ address: `127.0.0.1:${carrier.port}` });
      const { fqdn } = await heldPstnDomain();
      const number = await claimed();
      const withheld = await metric("switchboard_caller_ids_withheld_total");
      const p = await phone();
      const { branch } = p.invite(`sip:${FAR_NUMBER}@${fqdn}`, { from: `sip:${number}@127.0.0.1` });
      const out = await carrier.inbox.next(isInvite, 15_000);
      expect(out.header("From")).toMatch(/^"Anonymous" <sip:anonymous@anonymous\.invalid>;tag=/);
      expect(out.header("Privacy")).toBe("id");
      expect(out.text).not.toContain(number);
      expect(await metric("switchboard_caller_ids_withheld_total")).toBe(withheld + 1);
      reply(carrier, out, "486 Busy Here");
      expect((await p.sip.inbox.next(final(branch), 15_000)).status).toBe(486);
      const r = await row(p.callId, true);
      expect(r.from).toBe(`sip:${number}@127.0.0.1`);
      const [child] = await database.db.select().from(calls).where(eq(calls.parentCallId, r.id));
      expect(child?.from).toBe("");
    },
  );

  it("refuses a tel: INVITE naming no domain from outside every trunk's networks: nothing goes out (no open relay)", async () => {
    const carrier = await ua();
    await trunk({ address: `127.0.0.1:${carrier.port}`, inboundNetworks: ["192.0.2.0/24"] });
    await pstnDomain(); // a PSTN_TRUNK domain for 127.0.0.1 exists, but the INVITE does not name it
    const p = await phone();
    const { branch } = p.invite(`tel:${FAR_NUMBER}`, { from: "sip:+61255500001@127.0.0.1" });
    const answer = await p.sip.inbox.next(final(branch), 15_000);
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(answer.status).toBeLessThan(500);
    expect((await carrier.inbox.quiet(500)).filter(isInvite)).toEqual([]);
    const [r] = await database.db.select().from(calls).where(eq(calls.sipCallId, p.callId));
    expect(r).toBeUndefined();
  });

  it("passes a PSTN_TRUNK caller's CANCEL on to the trunk", async () => {
    const carrier = await ua();
    await trunk({ address: `127.0.0.1:${carrier.port}` });
    const fqdn = await pstnDomain();
    const p = await phone();
    const uri = `sip:${FAR_NUMBER}@${fqdn}`;
    const { branch, cseq } = p.invite(uri, { from: "sip:+61255500001@127.0.0.1" });
    const out = await carrier.inbox.next(isInvite, 15_000);
    reply(carrier, out, "180 Ringing");
    await p.sip.inbox.next((m) => m.text.includes(branch) && m.status === 180);
    p.cancel(uri, branch, cseq);
    const terminated = await p.sip.inbox.next(
      (m) => final(branch)(m) && m.header("CSeq") === `${cseq} INVITE`,
      15_000,
    );
    expect(terminated.status).toBe(487);
    const cancel = await carrier.inbox.next((m) => m.method === "CANCEL", 15_000);
    expect(cancel.header("Call-ID")).toBe(out.header("Call-ID"));
    reply(carrier, cancel, "200 OK");
    reply(carrier, out, "487 Request Terminated");
    await row(p.callId, true);
  });

  it("answers a PSTN_TRUNK caller when the trunk answers, bridges their audio; a BYE on one side reaches the other", async () => {
    const carrier = await ua();
    await trunk({ address: `127.0.0.1:${carrier.port}` });
    const fqdn = await pstnDomain();
    const p = await phone();
    const far = await phone(); // the far end's RTP socket
    const uri = `sip:${FAR_NUMBER}@${fqdn}`;
    const { branch, cseq } = p.invite(uri, { from: "sip:+61255500001@127.0.0.1" });
    const out = await carrier.inbox.next(isInvite, 15_000);
    reply(carrier, out, "180 Ringing");
    reply(
      carrier,
      out,
      "200 OK",
      [`Contact: <sip:carrier@127.0.0.1:${carrier.port}>`],
      answerSdp(far.rtpPort),
    );
    await carrier.inbox.next((m) => m.method === "ACK", 15_000);
    const ok = await p.sip.inbox.next(
      (m) => final(branch)(m) && m.header("CSeq") === `${cseq} INVITE`,
      15_000,
    );
    expect(ok.status).toBe(200);
    expect(ok.header("Content-Type")).toBe("application/sdp");
    p.learn(ok);
    p.inDialog("ACK", uri, { cseq });
    // The two legs are bridged: a tone from the caller reaches the far end's RTP socket, and back.
    const tone = (hz: number) =>
      Int16Array.from({ length: 4800 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / 8000)));
    const farMedia = Phone.mediaPort(out.body);
    const callerMedia = Phone.mediaPort(ok.body);
    const loud = (packets: Phone["rtp"]) =>
      packets.filter((x) => x.payloadType === 0 && x.payload.some((b) => (b & 0x7f) < 0x60)).length;
    await Promise.all([p.sendAudio(callerMedia, tone(440)), far.sendAudio(farMedia, tone(1000))]);
    await new Promise((r) => setTimeout(r, 300));
    expect(loud(far.rtp)).toBeGreaterThan(15);
    expect(loud(p.rtp)).toBeGreaterThan(15);
    // The caller hangs up: the trunk leg is hung up too.
    p.inDialog("BYE", uri);
    const bye = await carrier.inbox.next((m) => m.method === "BYE", 15_000);
    expect(bye.header("Call-ID")).toBe(out.header("Call-ID"));
    reply(carrier, bye, "200 OK");
    expect((await row(p.callId, true)).state).toBe("COMPLETED");
  });

  it("<Call>s a number through the trunk (answering its 401) and bridges it with the SIP caller, who is the caller ID", async () => {
    const carrier = await ua();
    await trunk({ address: `127.0.0.1:${carrier.port}`, username: "acct-7", password: "s3cret" });
    const { project, number } = await owner();
    const d = await createTestClient(SipDomains, database.db, systemClock).createSipDomain({
      parent: project,
      sipDomainId: newSipDomainId("pc"),
      sipDomain: {
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: [`${handler.base}/call`],
        cidrBlocks: [{ cidrBlock: "127.0.0.1/32" }],
      },
    });
    const p = await phone();
    const far = await phone(); // the far end's RTP socket
    const uri = `sip:1001@${d.fqdn}`;
    const { branch, cseq } = p.invite(uri, { from: `sip:${number}@127.0.0.1` });
    const first = await carrier.inbox.next(isInvite, 15_000);
    const requestUri = `sip:${FAR_NUMBER}@127.0.0.1:${carrier.port};user=phone`;
    expect(first.text.startsWith(`INVITE ${requestUri} SIP/2.0\r\n`)).toBe(true);
    // The SIP caller's number is the child leg's caller ID.
    expect(first.header("From")).toMatch(new RegExp(`^<sip:\\${number}@`));
    reply(carrier, first, "401 Unauthorized", [
      'WWW-Authenticate: Digest realm="carrier.example", nonce="n0nce-call", qop="auth", algorithm=MD5',
    ]);
    await carrier.inbox.next((m) => m.method === "ACK");
    const out = await carrier.inbox.next(isInvite, 15_000);
    const auth = out.header("Authorization")!;
    const param = (k: string) => new RegExp(`${k}="?([^",]+)"?`).exec(auth)?.[1];
    expect(param("username")).toBe("acct-7");
    const ha1 = md5("acct-7:carrier.example:s3cret");
    const ha2 = md5(`INVITE:${requestUri}`);
    expect(param("response")).toBe(md5(`${ha1}:n0nce-call:${param("nc")}:${param("cnonce")}:auth:${ha2}`));
    reply(carrier, out, "180 Ringing");
    reply(
      carrier,
      out,
      "200 OK",
      [`Contact: <sip:carrier@127.0.0.1:${carrier.port}>`],
      answerSdp(far.rtpPort),
    );
    await carrier.inbox.next((m) => m.method === "ACK" && m.header("CSeq") === "2 ACK", 15_000);
    // The caller is answered once the trunk leg is.
    const ok = await p.sip.inbox.next(
      (m) => final(branch)(m) && m.header("CSeq") === `${cseq} INVITE`,
      15_000,
    );
    expect(ok.status).toBe(200);
    p.learn(ok);
    p.inDialog("ACK", uri, { cseq });
    const parent = await row(p.callId);
    const deadline = Date.now() + 10_000;
    let child: CallRow | undefined;
    while (!child?.bridged) {
      if (Date.now() > deadline) throw new Error("never bridged");
      await sleep(50);
      [child] = await database.db.select().from(calls).where(eq(calls.parentCallId, parent.id));
    }
    expect(child.transport).toBe("PSTN");
    expect(child.to).toBe(FAR_NUMBER);
    expect(child.from).toBe(number);
    // The trunk INVITE's Call-ID is the child's id (a number has no host to add).
    expect(out.header("Call-ID")).toBe(child.id);
    // Bridged: the caller's tone reaches the far end, the far end's the caller.
    const tone = (hz: number) =>
      Int16Array.from({ length: 4800 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / 8000)));
    const loud = (packets: Phone["rtp"]) =>
      packets.filter((x) => x.payloadType === 0 && x.payload.some((b) => (b & 0x7f) < 0x60)).length;
    const farBefore = loud(far.rtp);
    const callerBefore = loud(p.rtp);
    await Promise.all([
      p.sendAudio(Phone.mediaPort(ok.body), tone(440)),
      far.sendAudio(Phone.mediaPort(out.body), tone(1000)),
    ]);
    await sleep(300);
    expect(loud(far.rtp) - farBefore).toBeGreaterThan(15);
    expect(loud(p.rtp) - callerBefore).toBeGreaterThan(15);
    // The caller hangs up: the trunk leg gets a BYE; both calls end COMPLETED.
    p.inDialog("BYE", uri);
    const bye = await carrier.inbox.next((m) => m.method === "BYE", 15_000);
    expect(bye.header("Call-ID")).toBe(out.header("Call-ID"));
    reply(carrier, bye, "200 OK");
    expect((await row(p.callId, true)).state).toBe("COMPLETED");
    const childId = child.id;
    const childDeadline = Date.now() + 10_000;
    while (child?.state !== "COMPLETED") {
      if (Date.now() > childDeadline) throw new Error(`child not COMPLETED: ${child?.state}`);
      await sleep(50);
      [child] = await database.db.select().from(calls).where(eq(calls.id, childId));
    }
  });

  it("reaches a TCP trunk over TCP (transport=tcp in the Request-URI); its 486 is the call's BUSY", async () => {
    // A fake trunk listening on TCP: literal SIP framed by Content-Length, answered on the same connection.
    const server = await streamTrunk();
    sockets.push(server);
    const port = server.port;
    const created = await createTestClient(SipTrunks, database.db, systemClock).createSipTrunk({
      sipTrunkId: `tcp-${Math.random().toString(36).slice(2, 8)}`,
      sipTrunk: { address: `127.0.0.1:${port}`, transport: SipTrunk_Transport.TCP, enabled: true },
    });
    trunkNames.push(created.name);
    const { call } = await callOut();
    const invite = await server.next(isInvite);
    expect(
      invite.text.startsWith(`INVITE sip:${FAR_NUMBER}@127.0.0.1:${port};transport=tcp;user=phone SIP/2.0`),
    ).toBe(true);
    expect(invite.headers("Via")[0]).toMatch(/^SIP\/2\.0\/TCP /);
    server.write(sipResponse(invite, "486 Busy Here"));
    expect((await ended(call.name)).state).toBe(Call_State.BUSY);
  });

  it("ends a PSTN_TRUNK caller's leg with BYE when the trunk hangs up", async () => {
    const carrier = await ua();
    await trunk({ address: `127.0.0.1:${carrier.port}` });
    const fqdn = await pstnDomain();
    const p = await phone();
    const far = await phone();
    const uri = `sip:${FAR_NUMBER}@${fqdn}`;
    const { branch, cseq } = p.invite(uri, { from: "sip:+61255500001@127.0.0.1" });
    const out = await carrier.inbox.next(isInvite, 15_000);
    reply(
      carrier,
      out,
      "200 OK",
      [`Contact: <sip:carrier@127.0.0.1:${carrier.port}>`],
      answerSdp(far.rtpPort),
    );
    await carrier.inbox.next((m) => m.method === "ACK", 15_000);
    const ok = await p.sip.inbox.next(
      (m) => final(branch)(m) && m.header("CSeq") === `${cseq} INVITE`,
      15_000,
    );
    expect(ok.status).toBe(200);
    p.learn(ok);
    p.inDialog("ACK", uri, { cseq });
    // The far end hangs up: a BYE from the trunk, in its dialog (our Contact, tags swapped).
    const contact = /<([^>]+)>/.exec(out.header("Contact")!)![1]!;
    carrier.send(
      [
        `BYE ${contact} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${carrier.port};branch=z9hG4bKtrunkbye${Date.now()};rport`,
        "Max-Forwards: 70",
        `From: ${out.header("To")};tag=trunk1`,
        `To: ${out.header("From")}`,
        `Call-ID: ${out.header("Call-ID")}`,
        "CSeq: 1 BYE",
        "Content-Length: 0",
        "",
        "",
      ].join("\r\n"),
      sipPort,
    );
    expect(
      (await carrier.inbox.next((m) => m.status === 200 && m.header("CSeq") === "1 BYE", 15_000)).status,
    ).toBe(200);
    const bye = await p.sip.inbox.next((m) => m.method === "BYE", 15_000);
    expect(bye.header("Call-ID")).toBe(p.callId);
    p.ok(bye);
    expect((await row(p.callId, true)).state).toBe("COMPLETED");
  });
});
