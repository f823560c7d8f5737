/**
 * The SIP edge of the real app (build() + listenSip(), on a free port), as a
 * softphone meets it: OPTIONS answered, REGISTER challenged with digest
 * (SHA-256 and MD5), bindings stored in the database, refusals for unknown
 * and closed domains, wrong passwords and someone else's address-of-record,
 * INVITE challenged on a domain with users (the calls: test/sip-carrier),
 * scanners ignored.
 * The UA writes literal SIP on a raw socket and computes its digest answers
 * itself with node:crypto.
 */
import { createHash, randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SipDomains } from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipUsers } from "../../gen/switchboard/voice/v1/sip_users_pb.js";
import { systemClock } from "../../src/clock.js";
import { sipRegistrations } from "../../src/db/schema/index.js";
import { type App, build } from "../../src/server.js";
import type { SipEdge } from "../../src/telephony/sip-edge/edge.js";
import { createTestClient, newProject, testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { newSipDomainId } from "../voice/support.js";
import { type Received, UdpUa } from "./ua.js";

const BASE = "sip.switchboard.local";

function h(algorithm: "MD5" | "SHA-256", text: string): string {
  return createHash(algorithm === "MD5" ? "md5" : "sha256")
    .update(text)
    .digest("hex");
}

/** The UA's Authorization for a challenge (RFC 7616 §3.4, qop=auth). */
function answer(challenge: string, user: string, password: string, uri: string, nc = "00000001"): string {
  const param = (k: string) => new RegExp(`${k}="?([^",]+)"?`).exec(challenge)?.[1] ?? "";
  const algorithm = param("algorithm") as "MD5" | "SHA-256";
  const realm = param("realm");
  const nonce = param("nonce");
  const cnonce = randomBytes(8).toString("hex");
  const ha1 = h(algorithm, `${user}:${realm}:${password}`);
  const ha2 = h(algorithm, `REGISTER:${uri}`);
  const response = h(algorithm, `${ha1}:${nonce}:${nc}:${cnonce}:auth:${ha2}`);
  return `Digest username="${user}", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${response}", algorithm=${algorithm}, qop=auth, nc=${nc}, cnonce="${cnonce}"`;
}

describe.each(testDatabases())("the SIP edge on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let edge: SipEdge;
  let port: number;
  let ua: UdpUa;
  let cseq = 0;

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

  /** The name of the last domain's alice. */
  let aliceName = "";

  /** A domain (allow_register as given) with user alice / password "s3cret-pass". */
  async function domain(allowRegister: boolean): Promise<string> {
    const domains = createTestClient(SipDomains, database.db, systemClock);
    const users = createTestClient(SipUsers, database.db, systemClock);
    const d = await domains.createSipDomain({
      parent: await newProject(database.db),
      sipDomainId: newSipDomainId("edge"),
      sipDomain: { allowRegister },
    });
    const alice = await users.createSipUser({
      parent: d.name,
      sipUserId: "alice",
      sipUser: { username: "alice", password: "s3cret-pass" },
    });
    aliceName = alice.name;
    return d.sipDomainId;
  }

  async function send(text: string, match: (m: Received) => boolean): Promise<Received> {
    ua.send(text, port);
    return ua.inbox.next(match);
  }

  function register(
    host: string,
    user: string,
    opts: { callId: string; authorization?: string; contact?: string; expires?: number },
  ): Promise<Received> {
    cseq++;
    const branch = `z9hG4bK${randomBytes(6).toString("hex")}`;
    const lines = [
      `REGISTER sip:${host} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${ua.port};branch=${branch};rport`,
      "Max-Forwards: 70",
      `From: <sip:${user}@${host}>;tag=t${cseq}`,
      `To: <sip:${user}@${host}>`,
      `Call-ID: ${opts.callId}`,
      `CSeq: ${cseq} REGISTER`,
      `Contact: ${opts.contact ?? `<sip:${user}@127.0.0.1:${ua.port}>`}`,
      `Expires: ${opts.expires ?? 600}`,
      "User-Agent: Edge Test Phone",
    ];
    if (opts.authorization) lines.push(`Authorization: ${opts.authorization}`);
    lines.push("Content-Length: 0", "", "");
    return send(lines.join("\n"), (m) => m.text.includes(branch));
  }

  it("answers OPTIONS with 200", async () => {
    const branch = `z9hG4bK${randomBytes(6).toString("hex")}`;
    const res = await send(
      [
        `OPTIONS sip:127.0.0.1:${port} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${ua.port};branch=${branch}`,
        "Max-Forwards: 70",
        "From: <sip:probe@127.0.0.1>;tag=p1",
        "To: <sip:127.0.0.1>",
        "Call-ID: options-1",
        "CSeq: 1 OPTIONS",
        "Content-Length: 0",
        "",
        "",
      ].join("\n"),
      (m) => m.text.includes(branch),
    );
    expect(res.status).toBe(200);
    expect(res.header("Allow")).toContain("REGISTER");
  });

  for (const algorithm of ["SHA-256", "MD5"] as const) {
    it(`registers a user after a ${algorithm} digest challenge and stores the binding`, async () => {
      const id = await domain(true);
      const host = `${id}.${BASE}`;
      const callId = `reg-${algorithm}-${randomBytes(4).toString("hex")}`;
      const challenged = await register(host, "alice", { callId });
      expect(challenged.status).toBe(401);
      const challenges = challenged.headers("WWW-Authenticate");
      expect(challenges.map((c) => /algorithm=([\w-]+)/.exec(c)?.[1])).toEqual(["SHA-256", "MD5"]);
      const challenge = challenges.find((c) => c.includes(`algorithm=${algorithm}`))!;
      expect(challenge).toContain(`realm="${host}"`);
      const ok = await register(host, "alice", {
        callId,
        authorization: answer(challenge, "alice", "s3cret-pass", `sip:${host}`),
      });
      expect(ok.status).toBe(200);
      expect(ok.header("Contact")).toMatch(
        new RegExp(`^<sip:alice@127\\.0\\.0\\.1:${ua.port}>;expires=(600|599)$`),
      );
      const rows = await database.db
        .select()
        .from(sipRegistrations)
        .where(eq(sipRegistrations.sipDomainId, id));
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        contactUri: `sip:alice@127.0.0.1:${ua.port}`,
        sourceAddress: `127.0.0.1:${ua.port}`,
        sourceTransport: "UDP",
        callId,
        userAgent: "Edge Test Phone",
      });
    });
  }

  it("challenges statelessly (RFC 3261 §8.2.7): a retransmitted REGISTER gets a new challenge, which still works", async () => {
    const id = await domain(true);
    const host = `${id}.${BASE}`;
    const branch = `z9hG4bK${randomBytes(6).toString("hex")}`;
    const callId = `stateless-${randomBytes(4).toString("hex")}`;
    const text = [
      `REGISTER sip:${host} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${ua.port};branch=${branch};rport`,
      "Max-Forwards: 70",
      `From: <sip:alice@${host}>;tag=s1`,
      `To: <sip:alice@${host}>`,
      `Call-ID: ${callId}`,
      "CSeq: 1 REGISTER",
      `Contact: <sip:alice@127.0.0.1:${ua.port}>`,
      "Content-Length: 0",
      "",
      "",
    ].join("\n");
    const nonce = (m: Received) => /nonce="([^"]+)"/.exec(m.headers("WWW-Authenticate")[0] ?? "")?.[1];
    const first = await send(text, (m) => m.text.includes(branch));
    const again = await send(text, (m) => m.text.includes(branch));
    expect([first.status, again.status]).toEqual([401, 401]);
    // A transaction kept in Completed would have sent its first response again, byte for byte.
    expect(nonce(first)).toBeDefined();
    expect(nonce(again)).toBeDefined();
    expect(nonce(again)).not.toBe(nonce(first));
    const challenge = again.headers("WWW-Authenticate").find((c) => c.includes("algorithm=SHA-256"))!;
    cseq = Math.max(cseq, 1);
    const ok = await register(host, "alice", {
      callId,
      authorization: answer(challenge, "alice", "s3cret-pass", `sip:${host}`),
    });
    expect(ok.status).toBe(200);
  });

  it("refuses a wrong password, a replayed nonce-count and someone else's address-of-record", async () => {
    const id = await domain(true);
    const host = `${id}.${BASE}`;
    const callId = `reg-bad-${randomBytes(4).toString("hex")}`;
    const challenge = (await register(host, "alice", { callId })).headers("WWW-Authenticate")[0]!;
    const wrong = await register(host, "alice", {
      callId,
      authorization: answer(challenge, "alice", "not-the-password", `sip:${host}`),
    });
    expect(wrong.status).toBe(401);
    const good = answer(challenge, "alice", "s3cret-pass", `sip:${host}`);
    expect((await register(host, "alice", { callId, authorization: good })).status).toBe(200);
    expect((await register(host, "alice", { callId, authorization: good })).status).toBe(401);
    // alice's credentials, bob's address-of-record.
    const fresh = (await register(host, "bob", { callId: `${callId}-b` })).headers("WWW-Authenticate")[0]!;
    const foreign = await register(host, "bob", {
      callId: `${callId}-b`,
      authorization: answer(fresh, "alice", "s3cret-pass", `sip:${host}`),
    });
    expect(foreign.status).toBe(403);
    const rows = await database.db
      .select()
      .from(sipRegistrations)
      .where(eq(sipRegistrations.sipDomainId, id));
    expect(rows).toHaveLength(1);
  });

  it("takes a changed password, a disabled user and a deleted one at once (the edge's remembered credentials are forgotten)", async () => {
    const id = await domain(true);
    const host = `${id}.${BASE}`;
    const users = createTestClient(SipUsers, database.db, systemClock);
    const name = aliceName;
    const callId = `reg-change-${randomBytes(4).toString("hex")}`;
    /** A REGISTER answering its challenge with `password`: the final status. */
    const attempt = async (password: string) => {
      const challenge = (await register(host, "alice", { callId })).headers("WWW-Authenticate")[0]!;
      return (
        await register(host, "alice", {
          callId,
          authorization: answer(challenge, "alice", password, `sip:${host}`),
        })
      ).status;
    };
    expect(await attempt("s3cret-pass")).toBe(200);
    expect(await attempt("s3cret-pass")).toBe(200);
    await users.updateSipUser({
      sipUser: { name: name, password: "n3w-passw0rd" },
      updateMask: { paths: ["password"] },
    });
    expect(await attempt("s3cret-pass")).toBe(401);
    expect(await attempt("n3w-passw0rd")).toBe(200);
    await users.updateSipUser({
      sipUser: { name: name, disabled: true },
      updateMask: { paths: ["disabled"] },
    });
    expect(await attempt("n3w-passw0rd")).toBe(401);
    await users.updateSipUser({
      sipUser: { name: name, disabled: false },
      updateMask: { paths: ["disabled"] },
    });
    expect(await attempt("n3w-passw0rd")).toBe(200);
    await users.deleteSipUser({ name: name });
    expect(await attempt("n3w-passw0rd")).toBe(401);
  });

  it("answers 404 for an unknown domain and 403 where the domain does not allow REGISTER", async () => {
    const unknown = await register(`nosuchdomain-${randomBytes(3).toString("hex")}.${BASE}`, "alice", {
      callId: "u1",
    });
    expect(unknown.status).toBe(404);
    expect((await register("example.com", "alice", { callId: "u2" })).status).toBe(404);
    const closed = await domain(false);
    const refused = await register(`${closed}.${BASE}`, "alice", { callId: "u3" });
    expect(refused.status).toBe(403);
  });

  it("challenges an INVITE to a domain with users (the calls themselves: test/sip-carrier)", async () => {
    const id = await domain(true);
    const branch = `z9hG4bK${randomBytes(6).toString("hex")}`;
    const res = await send(
      [
        `INVITE sip:+61491570156@${id}.${BASE} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${ua.port};branch=${branch}`,
        "Max-Forwards: 70",
        `From: <sip:alice@${id}.${BASE}>;tag=i1`,
        `To: <sip:+61491570156@${id}.${BASE}>`,
        "Call-ID: invite-1",
        "CSeq: 1 INVITE",
        `Contact: <sip:alice@127.0.0.1:${ua.port}>`,
        "Content-Length: 0",
        "",
        "",
      ].join("\n"),
      (m) => m.text.includes(branch) && (m.status ?? 0) >= 200,
    );
    expect(res.status).toBe(401);
    expect(res.headers("WWW-Authenticate").length).toBeGreaterThan(0);
  });

  it("gives a scanner no answer, and still answers others", async () => {
    const branch = `z9hG4bK${randomBytes(6).toString("hex")}`;
    ua.send(
      [
        `OPTIONS sip:100@127.0.0.1:${port} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${ua.port};branch=${branch}`,
        "Max-Forwards: 70",
        "From: <sip:100@127.0.0.1>;tag=s1",
        "To: <sip:100@127.0.0.1>",
        "Call-ID: scan-1",
        "CSeq: 1 OPTIONS",
        "User-Agent: friendly-scanner",
        "Content-Length: 0",
        "",
        "",
      ].join("\n"),
      port,
    );
    await expect(ua.inbox.next((m) => m.text.includes(branch), 500)).rejects.toThrow();
    const id = await domain(true);
    expect((await register(`${id}.${BASE}`, "alice", { callId: "after-scan" })).status).toBe(401);
  });
});
