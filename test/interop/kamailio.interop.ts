/**
 * Interop: Kamailio (Debian's `kamailio`, with the repository's config,
 * deploy/kamailio/kamailio.cfg) in front of two replicas of the compiled
 * service on one PostgreSQL database (issue 27, item 7). SIPp registers SIP
 * users through Kamailio; the test shows that:
 * - the dispatcher spreads new requests over both replicas (round-robin):
 *   the bindings record the replica that took each REGISTER;
 * - a binding made through either replica is seen by both: a REGISTER query
 *   sent straight to each replica lists it (the bindings are in the shared
 *   database);
 * - phones over TCP reach the replicas through it (Kamailio to the replicas
 *   is UDP);
 * - a stopped replica is found by Kamailio's OPTIONS probes and takes no new
 *   requests: every REGISTER after it stopped lands on the other;
 * - an INVITE through Kamailio, to a PROGRAMMABLE domain whose handler says
 *   hello and hangs up, gets the replica's answer back: 200 (the call over
 *   SIP): the test ACKs through the route set Kamailio recorded and answers
 *   the handler's BYE (a refusal, INVITE_ANSWER >= 300, is ACKed hop by hop).
 * PostgreSQL only (TEST_DATABASE_URL): the replicas are separate processes.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { SipDomain_TerminationMode, SipDomains } from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { Projects } from "../../gen/switchboard/admin/v1/projects_pb.js";
import { SipUsers } from "../../gen/switchboard/voice/v1/sip_users_pb.js";
import { type Database, openPostgres } from "../../src/db/client.js";
import { sipRegistrations } from "../../src/db/schema/index.js";
import { UdpUa } from "../sip/ua.js";
import { ensureBuilt } from "../support/build.js";
import { createScratchDatabase, describePostgres } from "../support/db.js";
import { freePort } from "../support/process.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { type Kamailio, startKamailio } from "./support/kamailio.js";
import { queryBindings } from "./support/query.js";
import { apiClient, BASE_DOMAIN, type Replica, startReplica } from "./support/replicas.js";
import { SCENARIOS, sipp, usersCsv } from "./support/sipp.js";

/** What an INVITE through Kamailio is answered: the PROGRAMMABLE domain's call (src/telephony/sip-carrier). */
const INVITE_ANSWER = 200;

const PASSWORD = "kamailio-interop-s3cret";

describePostgres("Kamailio's dispatcher in front of two replicas", () => {
  let scratch: { url: string; drop(): Promise<void> };
  let database: Database;
  let dir: string;
  const replicas: Replica[] = [];
  let kamailio: Kamailio;
  let fqdn: string;
  let sipDomainId: string;
  /** A PROGRAMMABLE domain reached by address: its handler says hello and hangs up. */
  let callsDomainId: string;
  let handler: Receiver;
  /** Each replica's id, as it records it on the bindings it writes. */
  const replicaIds: string[] = [];
  let nextUser = 0;

  /** Users u0, u1, ... of the domain (created in beforeAll). */
  const user = (i: number) => ({ username: `u${i}`, password: PASSWORD });
  const USERS = 20;

  /** Registers the next `count` users through SIPp at `port`, one after the other; their usernames. */
  async function register(port: number, count: number, transport: "u1" | "t1" = "u1"): Promise<string[]> {
    const users = Array.from({ length: count }, () => user(nextUser++));
    const csv = usersCsv(join(dir, `users-${nextUser}.csv`), users);
    const run = await sipp([
      `127.0.0.1:${port}`,
      "-sf",
      join(SCENARIOS, "register-users.xml"),
      "-inf",
      csv,
      "-key",
      "expires",
      "300",
      "-s",
      fqdn,
      "-t",
      transport,
      "-m",
      String(count),
      "-l",
      "1",
    ]);
    expect(run.code, run.output).toBe(0);
    return users.map((u) => u.username);
  }

  /** The replica id of each user's binding. */
  async function replicaOf(usernames: string[]): Promise<string[]> {
    const rows = await database.db
      .select()
      .from(sipRegistrations)
      .where(eq(sipRegistrations.sipDomainId, sipDomainId));
    return usernames.map((u) => {
      const row = rows.find((r) => r.userId === u);
      if (row === undefined) throw new Error(`no binding for ${u}`);
      return row.replicaId;
    });
  }

  /** An OPTIONS to a user of the domain through Kamailio: dispatched to a replica, which answers. */
  async function optionsThroughKamailio(): Promise<void> {
    const ua = await UdpUa.open();
    try {
      const branch = `z9hG4bK${randomBytes(6).toString("hex")}`;
      ua.send(
        [
          `OPTIONS sip:nobody@${fqdn} SIP/2.0`,
          `Via: SIP/2.0/UDP 127.0.0.1:${ua.port};rport;branch=${branch}`,
          "Max-Forwards: 70",
          `From: <sip:interop@127.0.0.1>;tag=${branch}`,
          `To: <sip:nobody@${fqdn}>`,
          `Call-ID: ${branch}@interop`,
          "CSeq: 1 OPTIONS",
          "Content-Length: 0",
          "",
          "",
        ].join("\n"),
        kamailio.port,
      );
      const answer = await ua.inbox.next((m) => m.status !== undefined && m.status >= 200);
      expect(answer.status, answer.text).toBe(200);
    } finally {
      ua.close();
    }
  }

  beforeAll(async () => {
    await ensureBuilt();
    scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
    database = openPostgres(scratch.url);
    dir = mkdtempSync(join(tmpdir(), "sb-kamailio-interop-"));
    // One after the other: the first migrates the database.
    // The call handler is on 127.0.0.1.
    const env = { WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true" };
    replicas.push(await startReplica(scratch.url, env));
    replicas.push(await startReplica(scratch.url, env));
    handler = await startReceiver();
    handler.handle((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/xml" });
      res.end('<?xml version="1.0" encoding="UTF-8"?><Response><Say>Hello</Say></Response>');
    });
    const [a] = replicas;
    await apiClient(Projects, a!).createProject({ projectId: "kamailio" });
    sipDomainId = `kam-${randomBytes(4).toString("hex")}`;
    await apiClient(SipDomains, a!).createSipDomain({
      parent: "projects/kamailio",
      sipDomainId,
      sipDomain: { allowRegister: true },
    });
    fqdn = `${sipDomainId}.${BASE_DOMAIN}`;
    callsDomainId = `kamc-${randomBytes(4).toString("hex")}`;
    await apiClient(SipDomains, a!).createSipDomain({
      parent: "projects/kamailio",
      sipDomainId: callsDomainId,
      sipDomain: {
        callTerminationMode: SipDomain_TerminationMode.PROGRAMMABLE,
        callTerminationHandlerUris: [`${handler.base}/voice`],
        cidrBlocks: [{ cidrBlock: "127.0.0.0/8" }],
      },
    });
    const users = apiClient(SipUsers, a!);
    for (let i = 0; i < USERS; i++) {
      await users.createSipUser({
        parent: `projects/kamailio/sipDomains/${sipDomainId}`,
        sipUserId: user(i).username,
        sipUser: user(i),
      });
    }
    // Each replica's id: a user registered straight to it.
    for (const r of replicas) replicaIds.push(...(await replicaOf(await register(r.sipPort, 1))));
    expect(new Set(replicaIds).size).toBe(2);
    kamailio = await startKamailio({
      port: await freePort(),
      replicas: replicas.map((r) => `sip:127.0.0.1:${r.sipPort}`),
    });
  }, 300_000);

  afterAll(async () => {
    await kamailio?.stop();
    await handler?.close();
    const codes = await Promise.all(replicas.map((r) => r.stop()));
    await database?.close();
    await scratch?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    expect(codes).toEqual(replicas.map(() => 0));
  }, 60_000);

  it("answers OPTIONS itself and probes both replicas as active", async () => {
    const run = await sipp([`127.0.0.1:${kamailio.port}`, "-sf", join(SCENARIOS, "options.xml"), "-t", "u1"]);
    expect(run.code, run.output).toBe(0);
    await until(async () => (await kamailio.destinations()).every((d) => d.flags === "AP"));
  });

  it("spreads requests over both replicas, round-robin, and a nonce from one is good at the other", async () => {
    // Each REGISTER transaction is dispatched on its own: a user's challenge (401) comes from
    // one replica and its answer is taken by the next, which records the binding. So one
    // SIPp run's bindings are all on one replica; a single request dispatched between two
    // runs moves the next run's bindings to the other replica.
    const first = await replicaOf(await register(kamailio.port, 3));
    expect(new Set(first).size, `bindings of one run: ${first}`).toBe(1);
    expect(replicaIds).toContain(first[0]);
    await optionsThroughKamailio();
    const second = await replicaOf(await register(kamailio.port, 3));
    expect(new Set(second).size, `bindings of one run: ${second}`).toBe(1);
    expect(new Set([...first, ...second])).toEqual(new Set(replicaIds));
  });

  it("lands bindings that every replica sees", async () => {
    // Registered through Kamailio (on whichever replica it chose): both replicas answer a
    // query for the user with its binding.
    const usernames = await register(kamailio.port, 2);
    for (const username of usernames) {
      for (const r of replicas) {
        const contacts = await queryBindings(r.sipPort, fqdn, username, PASSWORD);
        expect(contacts, `${username} at replica ${r.sipPort}`).toHaveLength(1);
        expect(contacts[0]).toMatch(new RegExp(`^<sip:${username}@127\\.0\\.0\\.1:\\d+>;expires=\\d+$`));
      }
    }
  });

  it("takes phones over TCP and relays them to the replicas", async () => {
    const [username] = await register(kamailio.port, 1, "t1");
    const rows = await database.db
      .select()
      .from(sipRegistrations)
      .where(eq(sipRegistrations.sipDomainId, sipDomainId));
    const row = rows.find((r) => r.userId === username);
    // The phone's contact, as it sent it over TCP; the replica heard it from Kamailio.
    expect(row?.contactUri).toMatch(new RegExp(`^sip:${username}@127\\.0\\.0\\.1:\\d+$`));
    expect(row?.sourceAddress).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(replicaIds).toContain(row?.replicaId);
  });

  it(`relays an INVITE to a replica and its answer (${INVITE_ANSWER}) back`, async () => {
    // To a PROGRAMMABLE domain reached by address (no users; 127.0.0.0/8), whose handler says
    // hello and hangs up: what a call through Kamailio will do once calls over SIP exist.
    const callsFqdn = `${callsDomainId}.${BASE_DOMAIN}`;
    const ua = await UdpUa.open();
    try {
      const callId = `${randomBytes(8).toString("hex")}@interop`;
      const invite = `z9hG4bK${randomBytes(6).toString("hex")}`;
      const sdp = [
        "v=0",
        "o=- 1 1 IN IP4 127.0.0.1",
        "s=-",
        "c=IN IP4 127.0.0.1",
        "t=0 0",
        `m=audio ${ua.port} RTP/AVP 0`,
        "a=rtpmap:0 PCMU/8000",
        "",
      ].join("\r\n");
      const dialog = (method: string, cseq: number, branch: string, toTag = "") => [
        `Via: SIP/2.0/UDP 127.0.0.1:${ua.port};rport;branch=${branch}`,
        "Max-Forwards: 70",
        `From: <sip:interop@127.0.0.1>;tag=kamailio-interop`,
        `To: <sip:+61491570156@${callsFqdn}>${toTag}`,
        `Call-ID: ${callId}`,
        `CSeq: ${cseq} ${method}`,
      ];
      ua.send(
        [
          `INVITE sip:+61491570156@${callsFqdn} SIP/2.0`,
          ...dialog("INVITE", 1, invite),
          `Contact: <sip:interop@127.0.0.1:${ua.port}>`,
          "Content-Type: application/sdp",
          `Content-Length: ${Buffer.byteLength(sdp)}`,
          "",
          sdp,
        ].join("\n"),
        kamailio.port,
      );
      const final = await ua.inbox.next((m) => m.status !== undefined && m.status >= 200, 30_000);
      expect(final.status, final.text).toBe(INVITE_ANSWER);
      // Passed through Kamailio: its Via was taken off, ours is on top.
      expect(final.headers("Via")).toHaveLength(1);
      expect(final.header("Via")).toContain(invite);
      const toTag = /;tag=[^;>\s]+/.exec(final.header("To") ?? "")?.[0] ?? "";
      if (final.status! >= 300) {
        // A refusal: ACKed hop by hop (the INVITE's branch); Kamailio absorbs the ACK and does
        // not send the answer again.
        ua.send(
          [
            `ACK sip:+61491570156@${callsFqdn} SIP/2.0`,
            ...dialog("ACK", 1, invite, toTag),
            "Content-Length: 0",
            "",
            "",
          ].join("\n"),
          kamailio.port,
        );
        expect((await ua.inbox.quiet(1_500)).filter((m) => m.status === INVITE_ANSWER)).toEqual([]);
        return;
      }
      // Answered: Kamailio record-routed the dialog. The ACK goes to the replica's Contact
      // through the route set (Kamailio first), and the handler's hang-up comes back the
      // same way as a BYE.
      const recordRoutes = final.headers("Record-Route").flatMap((h) => h.split(/,\s*(?=<)/));
      expect(recordRoutes.join(",")).toContain(`127.0.0.1:${kamailio.port}`);
      const contact = /<([^>]+)>/.exec(final.header("Contact") ?? "")![1]!;
      ua.send(
        [
          `ACK ${contact} SIP/2.0`,
          ...dialog("ACK", 1, `z9hG4bK${randomBytes(6).toString("hex")}`, toTag),
          ...[...recordRoutes].reverse().map((r) => `Route: ${r}`),
          "Content-Length: 0",
          "",
          "",
        ].join("\n"),
        kamailio.port,
      );
      const bye = await ua.inbox.next((m) => m.method === "BYE", 30_000);
      expect(bye.header("Call-ID")).toBe(callId);
      ua.send(
        [
          "SIP/2.0 200 OK",
          ...bye.headers("Via").map((v) => `Via: ${v}`),
          `From: ${bye.header("From")}`,
          `To: ${bye.header("To")}`,
          `Call-ID: ${callId}`,
          `CSeq: ${bye.header("CSeq")}`,
          "Content-Length: 0",
          "",
          "",
        ].join("\n"),
        kamailio.port,
      );
    } finally {
      ua.close();
    }
  });

  it("sends no new requests to a stopped replica", async () => {
    const [stopped, running] = replicas as [Replica, Replica];
    expect(await stopped.stop()).toBe(0);
    const stoppedUri = `sip:127.0.0.1:${stopped.sipPort}`;
    // Kamailio's OPTIONS probes find it gone (every second, unanswered after FR_TIMER, 5 s): inactive.
    await until(async () => {
      const ds = await kamailio.destinations();
      return ds.find((d) => d.uri === stoppedUri)?.flags.startsWith("I") === true;
    });
    const usernames = await register(kamailio.port, 4);
    const runningId = replicaIds[replicas.indexOf(running)];
    expect(await replicaOf(usernames)).toEqual(usernames.map(() => runningId));
  });
});

/** Polls `check` until it holds (generous limit: the machine may be busy). */
async function until(check: () => Promise<boolean>, limitMs = 60_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 200));
  }
}
