/**
 * The SIP capture's rules (src/telephony/sip-edge/capture.ts), fed wire
 * messages as the transport's tap hands them over, storing in the real
 * database and read back through GetSipInfo's domain: which Call-IDs are
 * kept, the per-call bounds and what truncation says, dialogues no call
 * claims expiring, addresses normalised, a failing call not costing the
 * others their messages, and the rows going with the call's project.
 */
import { randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { SipInfoService } from "../../gen/enfonica/voice/v1beta1/sip_info_pb.js";
import { ProjectsRepository } from "../../src/admin/projects-repository.js";
import { systemClock } from "../../src/clock.js";
import type { Db } from "../../src/db/client.js";
import { calls, sipCaptureMessages, sipCaptures } from "../../src/db/schema/index.js";
import { createLogger } from "../../src/log.js";
import type { WireMessage } from "../../src/sip/transport.js";
import { simulatedSipDialogue } from "../../src/telephony/simulator/sip-dialogue.js";
import {
  type CaptureStore,
  MAX_DIALOGUES,
  MAX_HELD_MESSAGES,
  SipCapture,
} from "../../src/telephony/sip-edge/capture.js";
import { SipInfoDomain } from "../../src/voice/sip-info/domain.js";
import { SipCaptureRepository } from "../../src/voice/sip-info/repository.js";
import { createTestClient, newProject } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

const UA = { address: "198.51.100.7", port: 5062 };
const EDGE = { address: "192.0.2.1", port: 5060 };

let t0 = Date.parse("2026-11-28T04:00:00.000Z");

/** A SIP message on the wire from the UA (received) or to it (sent). */
function wire(
  startLine: string,
  sipCallId: string,
  cseq: string,
  opts: { direction?: "received" | "sent"; pad?: number; extra?: string[] } = {},
): WireMessage {
  const direction = opts.direction ?? (startLine.startsWith("SIP/") ? "sent" : "received");
  const body = "x".repeat(opts.pad ?? 0);
  const text = [
    startLine,
    "Via: SIP/2.0/UDP 198.51.100.7:5062;branch=z9hG4bKabc",
    "From: <sip:alice@d.example>;tag=a",
    "To: <sip:1001@d.example>",
    `Call-ID: ${sipCallId}`,
    `CSeq: ${cseq}`,
    ...(opts.extra ?? []),
    `Content-Length: ${body.length}`,
    "",
    body,
  ].join("\r\n");
  t0 += 10;
  return {
    direction,
    transport: "UDP",
    source: direction === "received" ? UA : EDGE,
    destination: direction === "received" ? EDGE : UA,
    time: new Date(t0),
    data: Buffer.from(text),
  };
}

async function callRow(db: Db, project: string): Promise<string> {
  const id = `c-${randomBytes(8).toString("hex")}`;
  await db.insert(calls).values({
    id,
    projectId: project.split("/")[1]!,
    to: "sip:1001@d.example",
    from: "sip:alice@d.example",
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

describe.each(testDatabases())("the SIP capture's rules on $name", (backend) => {
  const database = useTestDatabase(backend);
  const log = createLogger("silent");
  let clockMs = 0;

  function capture(overrides: Partial<ConstructorParameters<typeof SipCapture>[0]> = {}): SipCapture {
    return new SipCapture({
      store: new SipCaptureRepository(database.db),
      maxMessages: 200,
      maxBytes: 256 * 1024,
      log,
      monotonicMs: () => clockMs,
      ...overrides,
    });
  }

  const domain = () => new SipInfoDomain(database.db, (facts) => simulatedSipDialogue(facts, "d.example"));

  async function newCall(): Promise<{ project: string; callId: string; name: string }> {
    const project = await newProject(database.db);
    const callId = await callRow(database.db, project);
    return { project, callId, name: `${project}/calls/${callId}/sipInfo` };
  }

  it("keeps an INVITE's Call-ID (held until a call claims it) and ignores OPTIONS, REGISTER and strays", async () => {
    const c = capture();
    const { callId, name } = await newCall();
    const id = `keep-${randomBytes(4).toString("hex")}`;
    c.tap(wire("OPTIONS sip:192.0.2.1 SIP/2.0", `o-${id}`, "1 OPTIONS"));
    c.tap(wire("REGISTER sip:d.example SIP/2.0", `r-${id}`, "1 REGISTER"));
    c.tap(wire("BYE sip:1001@d.example SIP/2.0", `stray-${id}`, "2 BYE"));
    c.tap(wire("SIP/2.0 200 OK", `stray-${id}`, "2 BYE"));
    c.tap(wire("INVITE sip:1001@d.example SIP/2.0", id, "1 INVITE"));
    c.tap(wire("SIP/2.0 100 Trying", id, "1 INVITE"));
    c.attach(callId, id);
    c.tap(wire("SIP/2.0 200 OK", id, "1 INVITE"));
    c.tap(wire("OPTIONS sip:1001@d.example SIP/2.0", id, "2 OPTIONS")); // in the dialogue: kept
    await c.close();
    const info = await domain().get(name);
    expect(info.sipCallId).toBe(id);
    expect(info.packets.map((p) => `${p.method} ${p.startLine}`)).toEqual([
      "INVITE INVITE sip:1001@d.example SIP/2.0",
      "INVITE SIP/2.0 100 Trying",
      "INVITE SIP/2.0 200 OK",
      "OPTIONS OPTIONS sip:1001@d.example SIP/2.0",
    ]);
    expect(info.omittedMessageCount).toBe(0);
    const stray = await database.db
      .select()
      .from(sipCaptureMessages)
      .where(eq(sipCaptureMessages.sipCallId, `stray-${id}`));
    expect(stray).toHaveLength(0);
  });

  it("stores a call's first messages up to SIP_CAPTURE_MAX_MESSAGES and counts the rest", async () => {
    const c = capture({ maxMessages: 3 });
    const { callId, name } = await newCall();
    const id = `count-${randomBytes(4).toString("hex")}`;
    // Two held before the call claims the dialogue, the rest after.
    c.tap(wire("INVITE sip:1001@d.example SIP/2.0", id, "1 INVITE"));
    c.tap(wire("SIP/2.0 100 Trying", id, "1 INVITE"));
    c.attach(callId, id);
    c.tap(wire("SIP/2.0 180 Ringing", id, "1 INVITE"));
    c.tap(wire("SIP/2.0 200 OK", id, "1 INVITE"));
    c.tap(wire("ACK sip:1001@d.example SIP/2.0", id, "1 ACK"));
    await c.flush();
    c.tap(wire("BYE sip:1001@d.example SIP/2.0", id, "2 BYE"));
    await c.close();
    const info = await domain().get(name);
    expect(info.packets.map((p) => p.startLine)).toEqual([
      "INVITE sip:1001@d.example SIP/2.0",
      "SIP/2.0 100 Trying",
      "SIP/2.0 180 Ringing",
    ]);
    expect(info.omittedMessageCount).toBe(3);
    // The same through the API.
    const proto = await createTestClient(SipInfoService, database.db, systemClock).getSipInfo({ name });
    expect([proto.messages.length, proto.omittedMessageCount]).toEqual([3, 3]);
  });

  it("stops at SIP_CAPTURE_MAX_BYTES for good (a smaller message after is not stored), held messages included", async () => {
    const c = capture({ maxBytes: 5000 });
    const { callId, name } = await newCall();
    const id = `bytes-${randomBytes(4).toString("hex")}`;
    c.tap(wire("INVITE sip:1001@d.example SIP/2.0", id, "1 INVITE", { pad: 2000 }));
    c.tap(wire("SIP/2.0 100 Trying", id, "1 INVITE"));
    c.tap(wire("SIP/2.0 200 OK", id, "1 INVITE", { pad: 3000 })); // over 5000 with the INVITE: held as omitted
    c.tap(wire("ACK sip:1001@d.example SIP/2.0", id, "1 ACK")); // small, but the capture is truncated
    c.attach(callId, id);
    c.tap(wire("BYE sip:1001@d.example SIP/2.0", id, "2 BYE"));
    await c.close();
    const info = await domain().get(name);
    expect(info.packets.map((p) => p.startLine)).toEqual([
      "INVITE sip:1001@d.example SIP/2.0",
      "SIP/2.0 100 Trying",
    ]);
    expect(info.omittedMessageCount).toBe(3);
    const [row] = await database.db.select().from(sipCaptures).where(eq(sipCaptures.callId, callId));
    expect(row!.omittedBytes).toBeGreaterThan(3000);
  });

  it("holds few messages for a dialogue no call has claimed yet, and counts the rest once one does", async () => {
    const c = capture();
    const { callId, name } = await newCall();
    const id = `held-${randomBytes(4).toString("hex")}`;
    c.tap(wire("INVITE sip:1001@d.example SIP/2.0", id, "1 INVITE"));
    for (let i = 0; i < MAX_HELD_MESSAGES + 7; i++) c.tap(wire("SIP/2.0 100 Trying", id, "1 INVITE"));
    c.attach(callId, id);
    await c.close();
    const info = await domain().get(name);
    expect([info.packets.length, info.omittedMessageCount]).toEqual([MAX_HELD_MESSAGES, 8]);
  });

  it("at MAX_DIALOGUES, forgets the oldest dialogue no call claimed, not a call's", async () => {
    const c = capture();
    const { callId, name } = await newCall();
    const id = `kept-${randomBytes(4).toString("hex")}`;
    c.tap(wire("INVITE sip:1001@d.example SIP/2.0", id, "1 INVITE"));
    c.attach(callId, id);
    const flood = `flood-${randomBytes(4).toString("hex")}`;
    for (let i = 0; i <= MAX_DIALOGUES; i++)
      c.tap(wire("INVITE sip:1001@d.example SIP/2.0", `${flood}-${i}`, "1 INVITE"));
    c.tap(wire("BYE sip:1001@d.example SIP/2.0", id, "2 BYE"));
    // The first of the flood was forgotten: claiming it now finds nothing held.
    const other = await newCall();
    c.attach(other.callId, `${flood}-0`);
    c.attach(other.callId, `${flood}-${MAX_DIALOGUES}`);
    await c.close();
    expect((await domain().get(name)).packets.map((p) => p.method)).toEqual(["INVITE", "BYE"]);
    const stored = await database.db
      .select({ sipCallId: sipCaptureMessages.sipCallId })
      .from(sipCaptureMessages)
      .where(eq(sipCaptureMessages.callId, other.callId));
    expect(stored.map((r) => r.sipCallId)).toEqual([`${flood}-${MAX_DIALOGUES}`]);
  });

  it("forgets a dialogue no call claims within a minute", async () => {
    const c = capture();
    const { callId, name } = await newCall();
    const id = `late-${randomBytes(4).toString("hex")}`;
    c.tap(wire("INVITE sip:1001@d.example SIP/2.0", id, "1 INVITE"));
    c.tap(wire("SIP/2.0 403 Forbidden", id, "1 INVITE"));
    clockMs += 61_000;
    c.tap(wire("OPTIONS sip:192.0.2.1 SIP/2.0", `other-${id}`, "1 OPTIONS")); // any traffic sweeps
    c.attach(callId, id);
    c.tap(wire("BYE sip:1001@d.example SIP/2.0", id, "2 BYE"));
    await c.close();
    const info = await domain().get(name);
    // Only what came after the claim: the INVITE and its 403 were forgotten.
    expect(info.packets.map((p) => p.startLine)).toEqual(["BYE sip:1001@d.example SIP/2.0"]);
  });

  it("follows a call through a refused re-INVITE and a long silence, and forgets it 32 s after its BYE", async () => {
    const c = capture();
    const { callId, name } = await newCall();
    const id = `long-${randomBytes(4).toString("hex")}`;
    const sweep = () => c.tap(wire("OPTIONS sip:192.0.2.1 SIP/2.0", `ping-${id}`, "1 OPTIONS"));
    c.tap(wire("INVITE sip:1001@d.example SIP/2.0", id, "1 INVITE"));
    c.attach(callId, id);
    c.tap(wire("SIP/2.0 200 OK", id, "1 INVITE"));
    c.tap(wire("ACK sip:1001@d.example SIP/2.0", id, "1 ACK"));
    c.tap(wire("INVITE sip:1001@d.example SIP/2.0", id, "2 INVITE"));
    c.tap(wire("SIP/2.0 488 Not Acceptable Here", id, "2 INVITE"));
    c.tap(wire("ACK sip:1001@d.example SIP/2.0", id, "2 ACK"));
    clockMs += 20 * 60_000; // twenty minutes of talk
    sweep();
    c.tap(wire("BYE sip:1001@d.example SIP/2.0", id, "3 BYE"));
    c.tap(wire("SIP/2.0 200 OK", id, "3 BYE"));
    clockMs += 33_000;
    sweep();
    c.tap(wire("BYE sip:1001@d.example SIP/2.0", id, "3 BYE")); // too late: forgotten
    await c.close();
    const info = await domain().get(name);
    expect(info.packets.map((p) => `${p.method} ${p.startLine.slice(0, 11)}`)).toEqual([
      "INVITE INVITE sip:",
      "INVITE SIP/2.0 200",
      "ACK ACK sip:100",
      "INVITE INVITE sip:",
      "INVITE SIP/2.0 488",
      "ACK ACK sip:100",
      "BYE BYE sip:100",
      "BYE SIP/2.0 200",
    ]);
  });

  it("claims a Call-ID before its INVITE is sent (outgoing calls)", async () => {
    const c = capture();
    const { callId, name } = await newCall();
    const id = `out-${randomBytes(4).toString("hex")}`;
    c.attach(callId, id);
    c.tap(wire("INVITE sip:bob@198.51.100.7 SIP/2.0", id, "1 INVITE", { direction: "sent" }));
    c.tap(wire("SIP/2.0 407 Proxy Authentication Required", id, "1 INVITE", { direction: "received" }));
    c.tap(
      wire("INVITE sip:bob@198.51.100.7 SIP/2.0", id, "2 INVITE", {
        direction: "sent",
        extra: ['Proxy-Authorization: Digest username="trunk", realm="carrier", response="feedfacefeedface"'],
      }),
    );
    await c.close();
    const info = await domain().get(name);
    expect(info.packets.map((p) => [p.source.ip, p.destination.ip, p.startLine.slice(0, 11)])).toEqual([
      [EDGE.address, UA.address, "INVITE sip:"],
      [UA.address, EDGE.address, "SIP/2.0 407"],
      [EDGE.address, UA.address, "INVITE sip:"],
    ]);
    expect(info.packets[2]!.data).toContain(
      'Proxy-Authorization: Digest username="trunk", realm="carrier", response="REDACTED"\r\n',
    );
    expect(info.packets[2]!.data).not.toContain("feedface");
  });

  it("writes IPv4-mapped addresses as IPv4 and an unspecified local address as the advertised one", async () => {
    const c = capture({ localAddress: "203.0.113.5" });
    const { callId, name } = await newCall();
    const id = `addr-${randomBytes(4).toString("hex")}`;
    const invite = wire("INVITE sip:1001@d.example SIP/2.0", id, "1 INVITE");
    c.tap({
      ...invite,
      source: { address: "::ffff:198.51.100.9", port: 5070 },
      destination: { address: "::", port: 5060 },
    });
    c.attach(callId, id);
    await c.close();
    const [packet] = (await domain().get(name)).packets;
    expect([packet!.source, packet!.destination]).toEqual([
      { ip: "198.51.100.9", port: 5070 },
      { ip: "203.0.113.5", port: 5060 },
    ]);
  });

  it("a call that does not exist costs the others nothing and is given up; nothing is thrown", async () => {
    let writes = 0;
    const repository = new SipCaptureRepository(database.db);
    const store: CaptureStore = {
      write: (batch) => {
        writes++;
        return repository.write(batch);
      },
    };
    const c = capture({ store });
    const { callId, name } = await newCall();
    const good = `good-${randomBytes(4).toString("hex")}`;
    const bad = `bad-${randomBytes(4).toString("hex")}`;
    c.tap(wire("INVITE sip:1001@d.example SIP/2.0", good, "1 INVITE"));
    c.tap(wire("INVITE sip:1001@d.example SIP/2.0", bad, "1 INVITE"));
    c.attach(callId, good);
    c.attach("c-no-such-call", bad);
    await c.flush();
    expect(writes).toBe(3); // the batch (refused on the foreign key), then call by call
    // Given up: its messages are no longer written.
    c.tap(wire("SIP/2.0 200 OK", bad, "1 INVITE"));
    await c.flush();
    expect(writes).toBe(3);
    c.tap(wire("SIP/2.0 200 OK", good, "1 INVITE"));
    await c.close();
    expect(writes).toBe(4);
    const info = await domain().get(name);
    expect(info.packets.map((p) => p.startLine)).toEqual([
      "INVITE sip:1001@d.example SIP/2.0",
      "SIP/2.0 200 OK",
    ]);
    const orphan = await database.db
      .select()
      .from(sipCaptures)
      .where(eq(sipCaptures.callId, "c-no-such-call"));
    expect(orphan).toHaveLength(0);
  });

  it("a store that throws loses that batch's messages, logged, and the capture carries on", async () => {
    let fail = true;
    const repository = new SipCaptureRepository(database.db);
    const c = capture({
      store: {
        write: async (batch) => {
          if (fail) throw new Error("database unavailable");
          await repository.write(batch);
        },
      },
    });
    const { callId, name } = await newCall();
    const id = `flaky-${randomBytes(4).toString("hex")}`;
    c.tap(wire("INVITE sip:1001@d.example SIP/2.0", id, "1 INVITE"));
    c.attach(callId, id);
    await c.flush();
    fail = false;
    c.tap(wire("SIP/2.0 200 OK", id, "1 INVITE"));
    await c.close();
    const info = await domain().get(name);
    expect(info.packets.map((p) => p.startLine)).toEqual(["SIP/2.0 200 OK"]);
  });

  it("a call the SIP edge delivered with nothing stored has no messages, not the simulator's dialogue", async () => {
    const { project, callId, name } = await newCall();
    const sipId = `edge-${randomBytes(4).toString("hex")}`;
    await database.db.update(calls).set({ sipCallId: sipId }).where(eq(calls.id, callId));
    const info = await domain().get(name);
    expect([info.sipCallId, info.packets.length, info.omittedMessageCount]).toEqual([sipId, 0, 0]);
    expect(info.pcap.length).toBe(24); // the pcap's global header alone
    // A simulated SIP call (no edge Call-ID) still gets its derived dialogue.
    const simulated = await callRow(database.db, project);
    expect((await domain().get(`${project}/calls/${simulated}/sipInfo`)).packets.length).toBeGreaterThan(0);
  });

  it("goes with the call's project", async () => {
    const c = capture();
    const { project, callId } = await newCall();
    const id = `gone-${randomBytes(4).toString("hex")}`;
    c.tap(wire("INVITE sip:1001@d.example SIP/2.0", id, "1 INVITE"));
    c.attach(callId, id);
    await c.close();
    expect(
      await database.db.select().from(sipCaptureMessages).where(eq(sipCaptureMessages.callId, callId)),
    ).toHaveLength(1);
    await new ProjectsRepository(database.db).delete(project.split("/")[1]!);
    expect(await database.db.select().from(sipCaptures).where(eq(sipCaptures.callId, callId))).toHaveLength(
      0,
    );
    expect(
      await database.db.select().from(sipCaptureMessages).where(eq(sipCaptureMessages.callId, callId)),
    ).toHaveLength(0);
  });
});
