/**
 * The guard at the real edge (build() + listenSip() + listen(), raw UAs on
 * loopback addresses of their own, so each is a source of its own): floods
 * of REGISTER and INVITE answered 503 with Retry-After and no state kept; a
 * source that keeps answering challenges wrongly is blocked (silence on
 * UDP, 403 on TCP) and let back after the block; no open relay for callers
 * without credentials; scanners answered nothing; every refusal counted in
 * /metrics by reason.
 */
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SipDomains } from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipUsers } from "../../gen/switchboard/voice/v1/sip_users_pb.js";
import { systemClock } from "../../src/clock.js";
import { calls } from "../../src/db/schema/index.js";
import { type App, build } from "../../src/server.js";
import { createTestClient, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { newSipDomainId } from "../voice/support.js";
import { type Received, TcpUa, UdpUa } from "./ua.js";

const BASE = "sip.switchboard.local";

function h(text: string): string {
  return createHash("md5").update(text).digest("hex");
}

/** An MD5 digest answer (qop=auth) for `challenge`. */
function answer(challenge: string, user: string, password: string, uri: string): string {
  const param = (k: string) => new RegExp(`${k}="?([^",]+)"?`).exec(challenge)?.[1] ?? "";
  const realm = param("realm");
  const nonce = param("nonce");
  const cnonce = randomBytes(8).toString("hex");
  const response = h(
    `${h(`${user}:${realm}:${password}`)}:${nonce}:00000001:${cnonce}:auth:${h(`REGISTER:${uri}`)}`,
  );
  return `Digest username="${user}", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${response}", algorithm=MD5, qop=auth, nc=00000001, cnonce="${cnonce}"`;
}

describe.each(testDatabases())("the SIP guard at the edge on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let sipPort: number;
  let sipTcpPort: number;
  let baseUrl: string;
  const uas: Array<{ close(): void }> = [];
  let cseq = 0;

  beforeAll(async () => {
    app = await build({
      config: testConfig({
        SIP_PORT: "0",
        LOG_LEVEL: "silent",
        SIP_DIGEST_ALGORITHMS: "MD5",
        SIP_GUARD_EXEMPT_NETWORKS: "",
        SIP_GUARD_REGISTER_RATE: "1",
        SIP_GUARD_REGISTER_BURST: "3",
        SIP_GUARD_INVITE_RATE: "1",
        SIP_GUARD_INVITE_BURST: "2",
        SIP_GUARD_AUTH_FAILURES: "3",
        SIP_GUARD_BLOCK_SECONDS: "2",
      }),
      db: database.db,
    });
    const edge = await app.listenSip();
    sipPort = edge.local("UDP")!.port;
    sipTcpPort = edge.local("TCP")!.port;
    baseUrl = `http://127.0.0.1:${(await app.listen(0, "127.0.0.1")).port}`;
  });

  afterAll(async () => {
    for (const ua of uas) ua.close();
    await app?.close();
  });

  async function udp(address: string): Promise<UdpUa> {
    const ua = await UdpUa.open(address);
    uas.push(ua);
    return ua;
  }

  function request(
    method: "REGISTER" | "INVITE" | "OPTIONS",
    from: { address: string; port: number; transport: "UDP" | "TCP" },
    uri: string,
    extra: string[] = [],
    callId = `guard-${randomBytes(4).toString("hex")}`,
  ): { text: string; branch: string } {
    cseq++;
    const branch = `z9hG4bK${randomBytes(6).toString("hex")}`;
    const text = [
      `${method} ${uri} SIP/2.0`,
      `Via: SIP/2.0/${from.transport} ${from.address}:${from.port};branch=${branch};rport`,
      "Max-Forwards: 70",
      `From: <sip:alice@${from.address}>;tag=t${cseq}`,
      `To: <${uri}>`,
      `Call-ID: ${callId}`,
      `CSeq: ${cseq} ${method}`,
      `Contact: <sip:alice@${from.address}:${from.port}>`,
      ...extra,
      "Content-Length: 0",
      "",
      "",
    ].join("\n");
    return { text, branch };
  }

  async function metric(reason: string): Promise<number> {
    const text = await (
      await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` } })
    ).text();
    const line = text
      .split("\n")
      .find((l) => l.startsWith(`switchboard_sip_refused_total{reason="${reason}"}`));
    return line === undefined ? 0 : Number(line.split(" ").pop());
  }

  it("answers a REGISTER flood 503 with Retry-After once the source's burst is spent", async () => {
    const ua = await udp("127.0.0.2");
    const before = await metric("rate-limited-register");
    const branches: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { text, branch } = request(
        "REGISTER",
        { address: "127.0.0.2", port: ua.port, transport: "UDP" },
        `sip:alice@nowhere.${BASE}`,
      );
      branches.push(branch);
      ua.send(text, sipPort);
    }
    const answers: Received[] = [];
    for (const b of branches) answers.push(await ua.inbox.next((m) => m.text.includes(b)));
    const limited = answers.filter((a) => a.status === 503);
    expect(answers.filter((a) => a.status === 404)).toHaveLength(3);
    expect(limited.length).toBe(3);
    for (const a of limited) expect(Number(a.header("Retry-After"))).toBeGreaterThanOrEqual(1);
    expect((await metric("rate-limited-register")) - before).toBe(3);
    // Another source is not limited by this one's flood.
    const other = await udp("127.0.0.5");
    const { text, branch } = request(
      "REGISTER",
      { address: "127.0.0.5", port: other.port, transport: "UDP" },
      `sip:alice@nowhere.${BASE}`,
    );
    other.send(text, sipPort);
    expect((await other.inbox.next((m) => m.text.includes(branch))).status).toBe(404);
  });

  it("answers an INVITE flood 503 with Retry-After, and makes no call of the refused ones", async () => {
    const ua = await udp("127.0.0.3");
    const before = await database.db.select().from(calls);
    const branches: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { text, branch } = request(
        "INVITE",
        { address: "127.0.0.3", port: ua.port, transport: "UDP" },
        `sip:+61491570156@nowhere.${BASE}`,
      );
      branches.push(branch);
      ua.send(text, sipPort);
    }
    const finals: number[] = [];
    for (const b of branches)
      finals.push((await ua.inbox.next((m) => m.text.includes(b) && (m.status ?? 0) >= 200)).status!);
    expect(finals.filter((s) => s === 503)).toHaveLength(3);
    expect(finals.filter((s) => s !== 503).every((s) => s >= 400)).toBe(true);
    expect(await metric("rate-limited-invite")).toBeGreaterThanOrEqual(3);
    expect(await database.db.select().from(calls)).toHaveLength(before.length);
  });

  it("relays nothing for a caller without credentials: a number at our address or at another domain", async () => {
    const ua = await udp("127.0.0.6");
    // A "carrier" listening on a loopback address of its own: a relayed INVITE would arrive here.
    const carrier = await udp("127.0.0.8");
    const before = await database.db.select().from(calls);
    for (const uri of [
      "sip:+61491570156@127.0.0.1",
      "sip:+61491570156@carrier.example.com",
      `sip:+61491570156@127.0.0.8:${carrier.port}`,
      "tel:+61491570156",
    ]) {
      const { text, branch } = request(
        "INVITE",
        { address: "127.0.0.6", port: ua.port, transport: "UDP" },
        uri,
      );
      ua.send(text, sipPort);
      const final = await ua.inbox.next((m) => m.text.includes(branch) && (m.status ?? 0) >= 200);
      expect(final.status).toBeGreaterThanOrEqual(400);
      expect(final.status).not.toBe(503);
      await new Promise((r) => setTimeout(r, 1100)); // one INVITE a second: under the limit
    }
    expect(await database.db.select().from(calls)).toHaveLength(before.length);
    expect(await carrier.inbox.quiet(500)).toEqual([]);
  });

  it("answers a scanner nothing at all, over UDP and TCP, and counts it", async () => {
    const before = await metric("scanner");
    const ua = await udp("127.0.0.7");
    for (const agent of ["friendly-scanner", "sipvicious", "VaxSIPUserAgent/3.1"]) {
      for (const method of ["OPTIONS", "REGISTER", "INVITE"] as const) {
        const { text } = request(
          method,
          { address: "127.0.0.7", port: ua.port, transport: "UDP" },
          `sip:100@${BASE}`,
          [`User-Agent: ${agent}`],
        );
        ua.send(text, sipPort);
      }
    }
    expect(await ua.inbox.quiet(700)).toEqual([]);
    const tcp = await TcpUa.connect(sipTcpPort, "127.0.0.7");
    uas.push(tcp);
    const overTcp = request(
      "OPTIONS",
      { address: "127.0.0.7", port: tcp.port, transport: "TCP" },
      `sip:100@${BASE}`,
      ["User-Agent: friendly-scanner"],
    );
    tcp.send(overTcp.text);
    expect(await tcp.inbox.quiet(700)).toEqual([]);
    // The same source without a scanner's User-Agent is answered (the drop is by User-Agent, not address).
    const plain = request(
      "OPTIONS",
      { address: "127.0.0.7", port: ua.port, transport: "UDP" },
      `sip:${BASE}`,
    );
    ua.send(plain.text, sipPort);
    expect((await ua.inbox.next((m) => m.text.includes(plain.branch))).status).toBe(200);
    expect(await metric("scanner")).toBeGreaterThanOrEqual(before + 10);
  });

  it("blocks a source after repeated wrong passwords (silence on UDP, 403 on TCP), then lets it back", async () => {
    const domains = createTestClient(SipDomains, database.db, systemClock);
    const users = createTestClient(SipUsers, database.db, systemClock);
    const d = await domains.createSipDomain({
      parent: await newProject(database.db),
      sipDomainId: newSipDomainId("guard"),
      sipDomain: { allowRegister: true },
    });
    await users.createSipUser({
      parent: d.name,
      sipUserId: "alice",
      sipUser: { username: "alice", password: "right-password" },
    });
    const host = `${d.sipDomainId}.${BASE}`;
    const ua = await udp("127.0.0.4");
    const from = { address: "127.0.0.4", port: ua.port, transport: "UDP" as const };
    const exchange = async (extra: string[] = [], callId?: string) => {
      const { text, branch } = request("REGISTER", from, `sip:alice@${host}`, extra, callId);
      ua.send(text, sipPort);
      return ua.inbox.next((m) => m.text.includes(branch), 3000);
    };
    const blockedBefore = await metric("blocked");
    for (let i = 0; i < 3; i++) {
      // Under the REGISTER limit (1/s, burst 3): a challenge and its answer every 2.1 s.
      if (i > 0) await new Promise((r) => setTimeout(r, 2100));
      const callId = `guess-${i}`;
      const challenge = (await exchange([], callId)).header("WWW-Authenticate")!;
      const wrong = await exchange(
        [`Authorization: ${answer(challenge, "alice", `guess-${i}`, `sip:alice@${host}`)}`],
        callId,
      );
      expect(wrong.status).toBe(401);
    }
    // Blocked: nothing at all comes back over UDP, not even to OPTIONS.
    const probe = request("OPTIONS", from, `sip:${host}`);
    ua.send(probe.text, sipPort);
    expect(await ua.inbox.quiet(500)).toEqual([]);
    // Over TCP from the same address: 403.
    const tcp = await TcpUa.connect(sipTcpPort, "127.0.0.4");
    uas.push(tcp);
    const overTcp = request(
      "OPTIONS",
      { address: "127.0.0.4", port: tcp.port, transport: "TCP" },
      `sip:${host}`,
    );
    tcp.send(overTcp.text);
    expect((await tcp.inbox.next((m) => m.text.includes(overTcp.branch))).status).toBe(403);
    expect(await metric("blocked")).toBeGreaterThan(blockedBefore);
    // After the block (2 s) the source is answered again, and the right password registers.
    await new Promise((r) => setTimeout(r, 2200));
    const challenge = (await exchange([], "after-block")).header("WWW-Authenticate")!;
    const ok = await exchange(
      [`Authorization: ${answer(challenge, "alice", "right-password", `sip:alice@${host}`)}`],
      "after-block",
    );
    expect(ok.status).toBe(200);
  }, 30_000);
});
