/**
 * The simulator's SIP dialogue for each way a leg can end (pure: facts in,
 * messages out), and its pcap read back by the independent reader. The
 * end-to-end tests (test/voice/sip-info.test.ts) cover calls the engine
 * really drove.
 */
import { describe, expect, it } from "vitest";
import { simulatedSipDialogue } from "../../src/telephony/simulator/sip-dialogue.js";
import { destinationOf, parseSipUri } from "../../src/telephony/simulator/sip-network.js";
import { sipPcap } from "../../src/telephony/sip/pcap.js";
import type { SipLegFacts } from "../../src/telephony/sip/types.js";
import { readPcap } from "../support/pcap.js";

const t = (s: number) => new Date(Date.UTC(2026, 2, 1, 0, 0, s));

const outgoing = (over: Partial<SipLegFacts>): SipLegFacts => ({
  callId: "c0ffee",
  sipCallId: "c0ffee@pbx.example.com",
  direction: "OUTGOING",
  to: "sip:agent@pbx.example.com",
  from: "+61491570156",
  sourceIp: undefined,
  state: "COMPLETED",
  inviteTime: t(1),
  ringTime: t(2),
  answerTime: undefined,
  endTime: undefined,
  endedBy: undefined,
  ...over,
});

const incoming = (over: Partial<SipLegFacts>): SipLegFacts =>
  outgoing({
    direction: "INCOMING",
    to: "sip:1001@d1.sip.switchboard.local",
    from: "sip:alice@203.0.113.10",
    sourceIp: "203.0.113.10",
    sipCallId: "c0ffee@d1.sip.switchboard.local",
    ...over,
  });

const dialogue = (facts: SipLegFacts) =>
  simulatedSipDialogue(facts, "sip.switchboard.local").map((p) => `${p.source.ip} ${p.startLine}`);

describe("simulated SIP dialogue", () => {
  it("outgoing BUSY: 486 Busy Here then ACK, without ringing", () => {
    expect(
      dialogue(outgoing({ state: "BUSY", ringTime: undefined, endTime: t(2), endedBy: "REMOTE" })),
    ).toEqual([
      "192.0.2.10 INVITE sip:agent@pbx.example.com SIP/2.0",
      `${destinationOf("sip:agent@pbx.example.com").ip} SIP/2.0 100 Trying`,
      `${destinationOf("sip:agent@pbx.example.com").ip} SIP/2.0 486 Busy Here`,
      "192.0.2.10 ACK sip:agent@pbx.example.com SIP/2.0",
    ]);
  });

  it("outgoing REJECTED: 603 Decline; FAILED by the network: 503", () => {
    const rejected = dialogue(outgoing({ state: "REJECTED", endTime: t(4), endedBy: "REMOTE" }));
    expect(rejected.map((l) => l.split(" ").slice(1).join(" "))).toEqual([
      "INVITE sip:agent@pbx.example.com SIP/2.0",
      "SIP/2.0 100 Trying",
      "SIP/2.0 180 Ringing",
      "SIP/2.0 603 Decline",
      "ACK sip:agent@pbx.example.com SIP/2.0",
    ]);
    const failed = dialogue(
      outgoing({ state: "FAILED", ringTime: undefined, endTime: t(2), endedBy: "REMOTE" }),
    );
    expect(failed[2]).toMatch(/ SIP\/2\.0 503 Service Unavailable$/);
  });

  it("outgoing ended by us before answer (parent hung up, answered elsewhere): CANCEL, 200, 487, ACK", () => {
    const lines = dialogue(outgoing({ state: "NOT_ANSWERED", endTime: t(3), endedBy: "LOCAL" }));
    expect(lines.slice(3)).toEqual([
      "192.0.2.10 CANCEL sip:agent@pbx.example.com SIP/2.0",
      expect.stringMatching(/ SIP\/2\.0 200 OK$/),
      expect.stringMatching(/ SIP\/2\.0 487 Request Terminated$/),
      "192.0.2.10 ACK sip:agent@pbx.example.com SIP/2.0",
    ]);
  });

  it("answered and in flight: no BYE yet; answered and hung up by us: BYE from the edge", () => {
    expect(dialogue(outgoing({ state: "IN_PROGRESS", answerTime: t(3) }))).toHaveLength(5);
    const ended = dialogue(outgoing({ answerTime: t(3), endTime: t(9), endedBy: "LOCAL" }));
    expect(ended.slice(5)).toEqual([
      `192.0.2.10 BYE sip:agent@${destinationOf("sip:agent@pbx.example.com").ip}:5060 SIP/2.0`,
      expect.stringMatching(/ SIP\/2\.0 200 OK$/),
    ]);
  });

  it("never placed: no messages", () => {
    expect(dialogue(outgoing({ state: "NOT_ANSWERED", inviteTime: undefined, ringTime: undefined }))).toEqual(
      [],
    );
  });

  it("incoming ended by us unanswered: 503 when FAILED, 480 otherwise; abandoned by the caller: CANCEL from it", () => {
    const failed = dialogue(incoming({ state: "FAILED", ringTime: t(1), endTime: t(2), endedBy: "LOCAL" }));
    expect(failed.slice(3)).toEqual([
      "192.0.2.10 SIP/2.0 503 Service Unavailable",
      "203.0.113.10 ACK sip:1001@d1.sip.switchboard.local SIP/2.0",
    ]);
    const unanswered = dialogue(incoming({ state: "NOT_ANSWERED", endTime: t(2), endedBy: "LOCAL" }));
    expect(unanswered[3]).toBe("192.0.2.10 SIP/2.0 480 Temporarily Unavailable");
    const abandoned = dialogue(incoming({ state: "NOT_ANSWERED", endTime: t(2), endedBy: "REMOTE" }));
    expect(abandoned.slice(3)).toEqual([
      "203.0.113.10 CANCEL sip:1001@d1.sip.switchboard.local SIP/2.0",
      "192.0.2.10 SIP/2.0 200 OK",
      "192.0.2.10 SIP/2.0 487 Request Terminated",
      "203.0.113.10 ACK sip:1001@d1.sip.switchboard.local SIP/2.0",
    ]);
  });

  it("incoming answered, the caller hangs up: BYE from the caller to our Contact", () => {
    const lines = dialogue(incoming({ answerTime: t(1), endTime: t(30), endedBy: "REMOTE" }));
    expect(lines.slice(5)).toEqual([
      "203.0.113.10 BYE sip:1001@192.0.2.10:5060 SIP/2.0",
      "192.0.2.10 SIP/2.0 200 OK",
    ]);
  });

  it("a withheld caller ID is anonymous; a SIP URI's host and port pick the destination", () => {
    const [invite] = simulatedSipDialogue(outgoing({ from: "" }), "sip.switchboard.local");
    expect(invite!.data).toContain('\r\nFrom: "Anonymous" <sip:anonymous@anonymous.invalid>;tag=');
    expect(destinationOf("sip:bob@203.0.113.77:5080;transport=udp")).toEqual({
      ip: "203.0.113.77",
      port: 5080,
    });
    expect(destinationOf("sip:bob@PBX.example.com")).toEqual(destinationOf("sip:bob@pbx.example.com"));
    expect(parseSipUri("sips:alice@example.com")).toEqual({
      user: "alice",
      host: "example.com",
      port: undefined,
    });
  });

  it("the pcap of a dialogue reads back with valid checksums and the messages' timestamps", async () => {
    const packets = simulatedSipDialogue(
      outgoing({
        answerTime: new Date(Date.UTC(2026, 2, 1, 0, 0, 3, 250)),
        endTime: t(9),
        endedBy: "REMOTE",
      }),
      "sip.switchboard.local",
    );
    const { header, packets: read } = await readPcap(sipPcap(packets));
    expect(header.magicNumber).toBe(0xa1b2c3d4);
    expect(header.linkLayerType).toBe(1);
    expect(read).toHaveLength(7);
    read.forEach((p, i) => {
      expect(p.ipHeaderChecksumOk).toBe(true);
      expect(p.udpChecksumOk).toBe(true);
      expect(p.timeMs).toBe(packets[i]!.time.getTime());
      expect(p.payload).toBe(packets[i]!.data);
      expect([p.sourceIp, p.sourcePort, p.destinationIp, p.destinationPort]).toEqual([
        packets[i]!.source.ip,
        packets[i]!.source.port,
        packets[i]!.destination.ip,
        packets[i]!.destination.port,
      ]);
    });
    expect(read[3]!.timeMs % 1000).toBe(250);
    // A corrupted byte is caught by the reader's checksum check.
    const bad = sipPcap(packets);
    const at = 24 + 16 + 14 + 20 + 8 + 3; // a byte of the first payload
    bad.writeUInt8(bad.readUInt8(at) ^ 0x01, at);
    expect((await readPcap(bad)).packets[0]!.udpChecksumOk).toBe(false);
  });
});
