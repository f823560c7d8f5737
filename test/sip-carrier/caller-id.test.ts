/**
 * Caller ID on a `<Call>` child leg (issue 27), on raw sockets: a SIP caller
 * calls a PROGRAMMABLE domain whose handler `<Call>`s a SIP endpoint (a raw
 * UDP peer), and the endpoint reads the From of the INVITE it receives.
 * - the caller's user part is presented at the called domain's FQDN
 *   (`sip:alice@<fqdn>`, not the caller's own host), a number as a number;
 *   to a number, the caller's number only when its project holds it;
 * - a private caller (Privacy: id, or From anonymous) stays anonymous;
 * - an explicit CallerId (a number of the project) is presented instead,
 *   and one that is not allowed ends the call FAILED CALLER_ID_NOT_ALLOWED
 *   without calling anybody.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { systemClock } from "../../src/clock.js";
import { type CallRow, calls } from "../../src/db/schema/index.js";
import { type App, build } from "../../src/server.js";
import { addBlock, numberingClients, provision } from "../numbering/support.js";
import { type Received, UdpUa } from "../sip/ua.js";
import { createTestClient, newProject, testConfig } from "../support/app.js";
import { xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { newSipDomainId } from "../voice/support.js";
import { Phone } from "./phone.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let blocks = Math.floor(Math.random() * 900);

describe.each(testDatabases())("caller ID of <Call> child legs on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let port: number;
  let handler: Receiver;
  const markup = new Map<string, string>();
  const closers: Array<{ close(): void }> = [];

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
    port = (await app.listenSip()).local("UDP")!.port;
    handler = await startReceiver();
    handler.handle((req, res) => {
      res.setHeader("content-type", "application/xml");
      res.end(xml(markup.get(req.path.split("?")[0]!) ?? ""));
    });
  });

  afterAll(async () => {
    for (const c of closers) c.close();
    await handler?.close();
    await app?.close();
  });

  /** A PROGRAMMABLE domain of `project` whose handler `<Call>`s `endpoint` (with `attributes`). */
  async function domain(project: string, endpoint: string, attributes = ""): Promise<string> {
    const path = `/c${Math.random().toString(36).slice(2)}`;
    markup.set(path, `<Call${attributes}><Endpoint>${endpoint}</Endpoint></Call>`);
    const d = await createTestClient(SipDomains, database.db, systemClock).createSipDomain({
      parent: project,
      sipDomainId: newSipDomainId("cid"),
      sipDomain: {
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: [`${handler.base}${path}`],
        cidrBlocks: [{ cidrBlock: "127.0.0.1/32" }],
      },
    });
    return d.fqdn;
  }

  /** The called endpoint: a raw UDP peer that answers 486 to whatever INVITE it gets. */
  async function endpoint(): Promise<UdpUa> {
    const ua = await UdpUa.open();
    closers.push(ua);
    return ua;
  }

  function busy(ua: UdpUa, request: Received): void {
    const lines = [
      "SIP/2.0 486 Busy Here",
      ...request.headers("Via").map((v) => `Via: ${v}`),
      `From: ${request.header("From")}`,
      `To: ${request.header("To")};tag=callee1`,
      `Call-ID: ${request.header("Call-ID")}`,
      `CSeq: ${request.header("CSeq")}`,
      "Content-Length: 0",
      "",
      "",
    ];
    ua.send(Buffer.from(lines.join("\r\n")), port);
  }

  /** Calls `fqdn` as `from` (with `headers`); returns the INVITE the endpoint received, answered 486. */
  async function childInvite(
    fqdn: string,
    callee: UdpUa,
    from: string,
    headers: string[] = [],
  ): Promise<{ invite: Received; caller: Phone }> {
    const caller = await Phone.open(port);
    closers.push(caller);
    const { branch } = caller.invite(`sip:1001@${fqdn}`, { from, headers });
    const invite = await callee.inbox.next((m) => m.method === "INVITE", 15_000);
    busy(callee, invite);
    await callee.inbox.next((m) => m.method === "ACK", 10_000);
    // The parent's document ends after the <Call>: the caller gets a final answer.
    await caller.sip.inbox.next((m) => m.text.includes(branch) && (m.status ?? 0) >= 200, 15_000);
    return { invite, caller };
  }

  /** The child call of the parent with this SIP Call-ID, once recorded. */
  async function child(parentSipCallId: string): Promise<CallRow> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const [parent] = await database.db.select().from(calls).where(eq(calls.sipCallId, parentSipCallId));
      if (parent !== undefined) {
        const [c] = await database.db.select().from(calls).where(eq(calls.parentCallId, parent.id));
        if (c !== undefined) return c;
      }
      if (Date.now() > deadline) throw new Error("no child call");
      await sleep(50);
    }
  }

  const fromUri = (invite: Received) => /<([^>]+)>/.exec(invite.header("From") ?? "")?.[1];

  it("presents the SIP caller's user at the called domain", async () => {
    const callee = await endpoint();
    const fqdn = await domain(await newProject(database.db), `sip:bob@127.0.0.1:${callee.port}`);
    const { invite, caller } = await childInvite(fqdn, callee, "sip:alice@127.0.0.1");
    expect(fromUri(invite)).toBe(`sip:alice@${fqdn}`);
    const row = await child(caller.callId);
    expect(row.from).toBe(`sip:alice@${fqdn}`);
    expect(row.transport).toBe("SIP");
  });

  it("presents a caller whose user part is a number as that number", async () => {
    const callee = await endpoint();
    const fqdn = await domain(await newProject(database.db), `sip:bob@127.0.0.1:${callee.port}`);
    const { invite } = await childInvite(fqdn, callee, "sip:+61255500001@10.1.2.3");
    expect(fromUri(invite)).toBe(`sip:+61255500001@${fqdn}`);
  });

  it.each([
    ["held by the project", true],
    ["not held by the project", false],
  ])("presents a SIP caller's number to a number only when it is %s (else withheld)", async (_, held) => {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, systemClock);
    const number = await addBlock(c, `+6125552${String(blocks++ % 1000).padStart(3, "0")}0`, 10);
    // A number of another project when not held: a claim the caller may not make.
    await provision(c, held ? project : await newProject(database.db), number);
    const fqdn = await domain(project, "+61491570157");
    const caller = await Phone.open(port);
    closers.push(caller);
    const uri = `sip:1001@${fqdn}`;
    const { branch, cseq } = caller.invite(uri, { from: `sip:${number}@10.1.2.3` });
    const row = await child(caller.callId);
    expect(row.to).toBe("+61491570157");
    expect(row.transport).toBe("PSTN");
    expect(row.from).toBe(held ? number : "");
    caller.cancel(uri, branch, cseq);
    await caller.sip.inbox.next((m) => m.text.includes(branch) && (m.status ?? 0) >= 200, 15_000);
  });

  it.each([
    ["Privacy: id", "sip:alice@127.0.0.1", ["Privacy: id"]],
    ["Privacy: user", "sip:alice@127.0.0.1", ["Privacy: user"]],
    ["Privacy: header;id", "sip:alice@127.0.0.1", ["Privacy: header;id"]],
    ["From anonymous", "sip:anonymous@anonymous.invalid", []],
  ])("keeps a private caller (%s) anonymous: RFC 3323's From and Privacy: id", async (_, from, headers) => {
    const callee = await endpoint();
    const fqdn = await domain(await newProject(database.db), `sip:bob@127.0.0.1:${callee.port}`);
    const { invite, caller } = await childInvite(fqdn, callee, from, headers);
    expect(invite.text).toMatch(/\r\nFrom: "Anonymous" <sip:anonymous@anonymous\.invalid>;tag=/);
    expect(invite.text).toMatch(/\r\nPrivacy: id\r\n/);
    expect(invite.text).not.toContain("alice");
    expect((await child(caller.callId)).from).toBe("");
  });

  it.each([["Privacy: none"], ["Privacy: header"]])(
    "presents a caller whose %s withholds no identity",
    async (header) => {
      const callee = await endpoint();
      const fqdn = await domain(await newProject(database.db), `sip:bob@127.0.0.1:${callee.port}`);
      const { invite } = await childInvite(fqdn, callee, "sip:alice@127.0.0.1", [header]);
      expect(fromUri(invite)).toBe(`sip:alice@${fqdn}`);
      expect(invite.text).not.toMatch(/\r\nPrivacy:/i);
    },
  );

  it("presents an explicit CallerId of the project's own number instead", async () => {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, systemClock);
    const number = await addBlock(c, `+6125552${String(blocks++ % 1000).padStart(3, "0")}0`, 10);
    await provision(c, project, number);
    const callee = await endpoint();
    const fqdn = await domain(project, `sip:bob@127.0.0.1:${callee.port}`, ` CallerId="${number}"`);
    const { invite } = await childInvite(fqdn, callee, "sip:alice@127.0.0.1");
    expect(fromUri(invite)).toMatch(new RegExp(`^sip:\\${number}@`));
  });

  it("ends the call FAILED CALLER_ID_NOT_ALLOWED for a CallerId that is not the project's, calling nobody", async () => {
    const callee = await endpoint();
    const fqdn = await domain(
      await newProject(database.db),
      `sip:bob@127.0.0.1:${callee.port}`,
      ' CallerId="+61255599998"',
    );
    const caller = await Phone.open(port);
    closers.push(caller);
    const { branch } = caller.invite(`sip:1001@${fqdn}`, { from: "sip:alice@127.0.0.1" });
    const answer = await caller.sip.inbox.next(
      (m) => m.text.includes(branch) && (m.status ?? 0) >= 200,
      15_000,
    );
    expect(answer.status).toBeGreaterThanOrEqual(400);
    const deadline = Date.now() + 10_000;
    let parent: CallRow | undefined;
    while (parent?.state !== "FAILED") {
      if (Date.now() > deadline) throw new Error(`parent not FAILED: ${parent?.state}`);
      await sleep(50);
      [parent] = await database.db.select().from(calls).where(eq(calls.sipCallId, caller.callId));
    }
    expect(parent.errorCode).toBe("CALLER_ID_NOT_ALLOWED");
    expect((await callee.inbox.quiet(300)).filter((m) => m.method === "INVITE")).toEqual([]);
  });
});
