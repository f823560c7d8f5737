/**
 * GetSipInfo end to end: the real app listening on 127.0.0.1 with the
 * carrier simulator on a ManualScheduler; SIP calls made through the
 * simulator (an incoming call to a SIP domain, outgoing `<Call>` legs to
 * `sip:` URIs); the SIP info read over gRPC, Connect and REST, its pcap read
 * by an independent parser (pcap-parser from npm, test/support/pcap.ts) and
 * checked against `messages`.
 */
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { type Call, Call_State, Call_Transport } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import {
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { type SipInfo, SipInfoService } from "../../gen/enfonica/voice/v1beta1/sip_info_pb.js";
import { SimulatorAdmin } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import {
  bearer,
  errorReason,
  expectCode,
  expectInvalid,
  newApiKey,
  newProject,
  TEST_OPERATOR_TOKEN,
} from "../support/app.js";
import { callHarness, xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { readPcap } from "../support/pcap.js";
import { newSipDomainId } from "./support.js";

const SOURCE = "203.0.113.10";
const EDGE = "192.0.2.10";

/** Milliseconds of a Duration or Timestamp (exact integers, unlike seconds in floating point). */
const ms = (d: { seconds: bigint; nanos: number } | undefined): number =>
  d === undefined ? Number.NaN : Number(d.seconds) * 1000 + Math.round(d.nanos / 1e6);
const between = (a: { seconds: bigint; nanos: number } | undefined, b: typeof a) => ms(b) - ms(a);

/** The start lines of the messages. */
const lines = (info: SipInfo) => info.messages.map((m) => m.requestLine);

/** A header's value in a message's data. */
function header(data: string, name: string): string | undefined {
  const head = data.split("\r\n\r\n")[0]!;
  const line = head.split("\r\n").find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(name.length + 1).trim();
}

/** Checks every message's headers, and the pcap against the messages, with the independent reader. */
async function expectConsistent(info: SipInfo, call: Call): Promise<void> {
  expect(info.name).toBe(`${call.name}/sipInfo`);
  expect(info.sipCallId).toBe(call.sipCallId);
  expect(info.sipCallId).not.toBe("");
  for (const m of info.messages) {
    expect(header(m.data, "Call-ID")).toBe(call.sipCallId);
    expect(header(m.data, "Via")).toMatch(/^SIP\/2\.0\/UDP [0-9.]+:\d+;branch=z9hG4bK[0-9a-f]+$/);
    expect(header(m.data, "CSeq")).toMatch(new RegExp(`^\\d+ ${m.method}$`));
    expect(header(m.data, "From")).toMatch(/;tag=[0-9a-f]{8}$/);
    expect(header(m.data, "To")).toBeDefined();
    const body = m.data.split("\r\n\r\n").slice(1).join("\r\n\r\n");
    expect(Number(header(m.data, "Content-Length"))).toBe(Buffer.byteLength(body));
    expect(m.data.startsWith(`${m.requestLine}\r\n`)).toBe(true);
    if (
      m.requestLine.startsWith("INVITE ") ||
      (m.requestLine === "SIP/2.0 200 OK" && m.method === "INVITE")
    ) {
      expect(header(m.data, "Content-Type")).toBe("application/sdp");
      expect(body).toMatch(/^v=0\r\n/);
      // The SDP announces the sender's address.
      expect(body).toContain(`c=IN IP4 ${m.sourceIp}\r\n`);
      expect(header(m.data, "Contact")).toMatch(/^<sip:/);
    }
  }
  const { header: global, packets } = await readPcap(info.pcap);
  expect(global.linkLayerType).toBe(1);
  expect([global.majorVersion, global.minorVersion]).toEqual([2, 4]);
  expect(packets).toHaveLength(info.messages.length);
  const start = ms(info.startTime);
  packets.forEach((p, i) => {
    const m = info.messages[i]!;
    expect(p.etherType).toBe(0x0800);
    expect(p.ipVersion).toBe(4);
    expect(p.ipProtocol).toBe(17);
    expect(p.ipHeaderChecksumOk).toBe(true);
    expect(p.udpChecksumOk).toBe(true);
    expect(p.capturedLength).toBe(p.originalLength);
    expect(p.ipTotalLength).toBe(20 + p.udpLength);
    expect(p.sourceIp).toBe(m.sourceIp);
    expect(p.sourcePort).toBe(m.sourcePort);
    expect(p.destinationIp).toBe(m.destinationIp);
    expect(p.destinationPort).toBe(m.destinationPort);
    expect(p.payload).toBe(m.data);
    expect(p.timeMs).toBe(start + ms(m.offsetDuration));
  });
}

describe.each(testDatabases())("GetSipInfo on $name", (backend) => {
  const database = useTestDatabase(backend);
  const harness = callHarness(database);
  const { handler, serve, single, runToEnd, owner, route, createCall } = harness;
  const grpc = harness.client(SipInfoService, "grpc");
  const connect = harness.client(SipInfoService);
  const simulator = harness.client(SimulatorAdmin);
  const sip = harness.client(SipDomains);

  async function rest(path: string, token = TEST_OPERATOR_TOKEN) {
    const res = await fetch(`${harness.base}/v1beta1/${path}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> & { error?: never } };
  }

  async function sipDomainCall(markup: string): Promise<{ project: string; call: Call }> {
    const project = await newProject(database.db);
    const domain = await sip.createSipDomain({
      parent: project,
      sipDomainId: newSipDomainId("si"),
      sipDomain: {
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: [`${handler.base}/sip`],
        cidrBlocks: [{ cidrBlock: "203.0.113.0/24" }],
      },
    });
    serve({ "/sip": xml(markup), "/after": xml("") });
    const res = await simulator.injectIncomingCall({
      to: "1001",
      from: "alice",
      sipDomain: domain.fqdn,
      sourceIp: SOURCE,
    });
    return { project, call: await runToEnd(res.call) };
  }

  it("an incoming call to a SIP domain: INVITE … BYE at the call's times, the pcap read back (gRPC, Connect, REST)", async () => {
    const { call } = await sipDomainCall("<Say>Hello from the SIP domain</Say>");
    expect(call.transport).toBe(Call_Transport.SIP);
    expect(call.state).toBe(Call_State.COMPLETED);
    const name = `${call.name}/sipInfo`;
    const info = await grpc.getSipInfo({ name });
    const domain = call.to.split("@")[1]!;
    expect(lines(info)).toEqual([
      `INVITE sip:1001@${domain} SIP/2.0`,
      "SIP/2.0 100 Trying",
      "SIP/2.0 180 Ringing",
      "SIP/2.0 200 OK",
      `ACK sip:1001@${EDGE}:5060 SIP/2.0`,
      // The markup ended: the service hung up.
      `BYE sip:alice@${SOURCE}:5060 SIP/2.0`,
      "SIP/2.0 200 OK",
    ]);
    expect(info.messages.map((m) => m.method)).toEqual([
      "INVITE",
      "INVITE",
      "INVITE",
      "INVITE",
      "ACK",
      "BYE",
      "BYE",
    ]);
    const from = { ip: SOURCE, port: 5060 };
    const edge = { ip: EDGE, port: 5060 };
    const ends = info.messages.map((m) => [
      { ip: m.sourceIp, port: m.sourcePort },
      { ip: m.destinationIp, port: m.destinationPort },
    ]);
    expect(ends).toEqual([
      [from, edge],
      [edge, from],
      [edge, from],
      [edge, from],
      [from, edge],
      [edge, from],
      [from, edge],
    ]);
    // Offsets are the call's own times: INVITE at create, 180 at ring, 200 at answer, BYE at end.
    const offsets = info.messages.map((m) => ms(m.offsetDuration));
    expect(ms(info.startTime)).toBe(ms(call.createTime));
    expect(offsets[2]).toBe(between(call.createTime, call.ringTime));
    expect(offsets[3]).toBe(between(call.createTime, call.answerTime));
    expect(offsets[5]).toBe(between(call.createTime, call.endTime));
    expect(offsets[5]).toBeGreaterThan(offsets[3]!);
    expect(ms(info.endTime)).toBe(ms(call.endTime));
    const invite = info.messages[0]!.data;
    expect(header(invite, "From")).toMatch(new RegExp(`^<sip:alice@${SOURCE.replaceAll(".", "\\.")}>;tag=`));
    expect(header(invite, "To")).toBe(`<sip:1001@${domain}>`);
    expect(header(invite, "CSeq")).toBe("1 INVITE");
    expect(header(info.messages[1]!.data, "To")).toBe(`<sip:1001@${domain}>`);
    expect(header(info.messages[3]!.data, "To")).toMatch(/;tag=[0-9a-f]{8}$/);
    // Responses carry the Via of their request.
    expect(header(info.messages[3]!.data, "Via")).toBe(header(invite, "Via"));
    await expectConsistent(info, call);

    // The same over Connect and REST (proto3 JSON: pcap in base64).
    const viaConnect = await connect.getSipInfo({ name });
    expect(viaConnect).toEqual(info);
    const viaRest = await rest(name);
    expect(viaRest.status).toBe(200);
    expect(Buffer.from(String(viaRest.json.pcap), "base64").equals(Buffer.from(info.pcap))).toBe(true);
    expect(viaRest.json.sipCallId).toBe(call.sipCallId);
    const restMessages = viaRest.json.messages as { requestLine: string; offsetDuration: string }[];
    expect(restMessages.map((m) => m.requestLine)).toEqual(lines(info));
    expect(restMessages[5]!.offsetDuration).toMatch(/^\d+(\.\d+)?s$/);
  });

  it('an incoming SIP call refused with <Reject Reason="busy">: 486 Busy Here, ACK', async () => {
    const { call } = await sipDomainCall(`<Reject Reason="busy"/>`);
    expect(call.state).toBe(Call_State.BUSY);
    const info = await grpc.getSipInfo({ name: `${call.name}/sipInfo` });
    expect(lines(info).slice(1)).toEqual([
      "SIP/2.0 100 Trying",
      "SIP/2.0 180 Ringing",
      "SIP/2.0 486 Busy Here",
      `ACK sip:1001@${call.to.split("@")[1]} SIP/2.0`,
    ]);
    expect(ms(info.messages[3]!.offsetDuration)).toBe(between(call.createTime, call.endTime));
    await expectConsistent(info, call);
  });

  it("outgoing legs to sip: URIs: INVITE from the edge to the URI's host, BYE from the remote party; CANCEL on ring timeout", async () => {
    const { number } = await single([`${handler.base}/start`]);
    // The caller stays on the line long enough for three attempts.
    const caller = await route({ talkSeconds: 600 });
    serve({
      "/start": xml(
        `<Call><Endpoint>sip:agent@pbx.example.com</Endpoint></Call>` +
          `<Call><Endpoint>sip:bob@203.0.113.77:5080</Endpoint></Call>` +
          // The simulated party rings 2 s: a 1 s ring time gives up first.
          `<Call TimeoutSeconds="1"><Endpoint>sip:carol@pbx.example.com</Endpoint></Call>`,
      ),
    });
    const res = await simulator.injectIncomingCall({ to: number, from: caller });
    const parent = await runToEnd(res.call);
    const list = await harness.connect.listCalls({ parent: res.call.split("/calls/")[0]!, pageSize: 10 });
    const children = list.calls.filter((c) => c.originatingCall === parent.name).reverse();
    expect(children.map((c) => c.to)).toEqual([
      "sip:agent@pbx.example.com",
      "sip:bob@203.0.113.77:5080",
      "sip:carol@pbx.example.com",
    ]);
    const callerUri = `sip:${caller}@${EDGE}:5060`.replaceAll(".", "\\.").replace("+", "\\+");
    for (const child of children.slice(0, 2)) {
      expect(child.transport).toBe(Call_Transport.SIP);
      expect(child.state).toBe(Call_State.COMPLETED);
      const info = await grpc.getSipInfo({ name: `${child.name}/sipInfo` });
      expect(lines(info)).toEqual([
        `INVITE ${child.to} SIP/2.0`,
        "SIP/2.0 100 Trying",
        "SIP/2.0 180 Ringing",
        "SIP/2.0 200 OK",
        expect.stringMatching(/^ACK sip:(agent|bob)@[0-9.]+:\d+ SIP\/2\.0$/),
        // The simulated party talked 30 s, then hung up: it sends BYE to our Contact.
        expect.stringMatching(new RegExp(`^BYE ${callerUri} SIP/2\\.0$`)),
        "SIP/2.0 200 OK",
      ]);
      const invite = info.messages[0]!;
      expect([invite.sourceIp, invite.sourcePort]).toEqual([EDGE, 5060]);
      if (child.to.includes("203.0.113.77")) {
        expect([invite.destinationIp, invite.destinationPort]).toEqual(["203.0.113.77", 5080]);
      } else {
        expect(invite.destinationIp).toMatch(/^198\.51\.100\.\d+$/);
        expect(invite.destinationPort).toBe(5060);
      }
      const bye = info.messages[5]!;
      expect([bye.sourceIp, bye.destinationIp]).toEqual([invite.destinationIp, EDGE]);
      expect(header(invite.data, "From")).toBe(
        `<sip:${caller}@sip.switchboard.local>;tag=${header(invite.data, "From")!.split("tag=")[1]}`,
      );
      // INVITE at start_time; the rest at the call's times.
      expect(ms(info.startTime)).toBe(ms(child.startTime));
      expect(ms(info.messages[2]!.offsetDuration)).toBe(between(child.startTime, child.ringTime));
      expect(ms(info.messages[3]!.offsetDuration)).toBe(between(child.startTime, child.answerTime));
      expect(ms(bye.offsetDuration)).toBe(between(child.startTime, child.endTime));
      expect(ms(bye.offsetDuration) - ms(info.messages[3]!.offsetDuration)).toBe(30_000);
      await expectConsistent(info, child);
      const viaRest = await rest(`${child.name}/sipInfo`);
      expect(Buffer.from(String(viaRest.json.pcap), "base64").equals(Buffer.from(info.pcap))).toBe(true);
    }
    const timedOut = children[2]!;
    expect(timedOut.state).toBe(Call_State.NOT_ANSWERED);
    const info = await grpc.getSipInfo({ name: `${timedOut.name}/sipInfo` });
    expect(lines(info)).toEqual([
      `INVITE ${timedOut.to} SIP/2.0`,
      "SIP/2.0 100 Trying",
      "SIP/2.0 180 Ringing",
      `CANCEL ${timedOut.to} SIP/2.0`,
      "SIP/2.0 200 OK",
      "SIP/2.0 487 Request Terminated",
      `ACK ${timedOut.to} SIP/2.0`,
    ]);
    expect(info.messages.map((m) => m.method)).toEqual([
      "INVITE",
      "INVITE",
      "INVITE",
      "CANCEL",
      "CANCEL",
      "INVITE",
      "ACK",
    ]);
    // CANCEL and the ACK of a non-2xx answer belong to the INVITE transaction: its branch.
    const via = header(info.messages[0]!.data, "Via");
    expect(header(info.messages[3]!.data, "Via")).toBe(via);
    expect(header(info.messages[6]!.data, "Via")).toBe(via);
    expect(ms(info.messages[3]!.offsetDuration)).toBe(between(timedOut.startTime, timedOut.endTime));
    await expectConsistent(info, timedOut);
  });

  it("a PSTN call has no SIP info: NOT_FOUND SIP_INFO_NOT_FOUND on every transport", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 1 });
    serve({ "/start": xml("") });
    const created = await createCall(project, from, to);
    const call = await runToEnd(created.name);
    expect(call.transport).toBe(Call_Transport.PSTN);
    for (const client of [grpc, connect]) {
      const e = await expectCode(client.getSipInfo({ name: `${call.name}/sipInfo` }), Code.NotFound);
      expect(errorReason(e)).toBe("SIP_INFO_NOT_FOUND");
      expect(e.rawMessage).toContain("PSTN");
    }
    const viaRest = await rest(`${call.name}/sipInfo`);
    expect(viaRest.status).toBe(404);
    expect(JSON.stringify(viaRest.json)).toContain("SIP_INFO_NOT_FOUND");
    // An unknown call: NOT_FOUND as for GetCall.
    const unknown = await expectCode(
      grpc.getSipInfo({ name: `${project}/calls/nosuchcall/sipInfo` }),
      Code.NotFound,
    );
    expect(errorReason(unknown)).toBe("RESOURCE_NOT_FOUND");
  });

  it("another project's call: PERMISSION_DENIED without the permission, NOT_FOUND under one's own project", async () => {
    const { project, call } = await sipDomainCall("<Say>Hi</Say>");
    const other = await newProject(database.db);
    const key = await newApiKey(database.db, [{ project: other, roles: ["roles/voice.admin"] }]);
    const outsider = createClient(
      SipInfoService,
      createGrpcTransport({ baseUrl: harness.base, interceptors: [bearer(key.secret)] }),
    );
    const denied = await expectCode(
      outsider.getSipInfo({ name: `${call.name}/sipInfo` }),
      Code.PermissionDenied,
    );
    expect(denied.rawMessage).not.toContain(call.sipCallId);
    expect((await rest(`${call.name}/sipInfo`, key.secret)).status).toBe(403);
    const callId = call.name.split("/")[3]!;
    await expectCode(outsider.getSipInfo({ name: `${other}/calls/${callId}/sipInfo` }), Code.NotFound);
    // voice.calls.get is what it needs: a viewer of the project may read it.
    const viewer = await newApiKey(database.db, [{ project, permissions: ["voice.calls.get"] }]);
    expect((await rest(`${call.name}/sipInfo`, viewer.secret)).status).toBe(200);
  });

  it("a malformed name is INVALID_ARGUMENT naming name", async () => {
    for (const client of [grpc, connect]) {
      await expectInvalid(client.getSipInfo({ name: "projects/p/calls/c" }), ["name"]);
      await expectInvalid(client.getSipInfo({ name: "" }), ["name"]);
    }
  });
});
