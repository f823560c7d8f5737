/**
 * Incoming PSTN calls end to end: the real app (build()) listening on
 * 127.0.0.1, the carrier simulator on a ManualScheduler, real HTTP
 * receivers as the customer's call handlers, signatures checked with
 * node:crypto here. The operator injects calls through SimulatorAdmin
 * (Connect JSON) and the REST path POST /admin/v1/simulator/incomingCalls.
 */
import { fromJsonString } from "@bufbuild/protobuf";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { and, eq, ne } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { CallRequestSchema } from "../../gen/enfonica/voice/v1beta1/call_request_pb.js";
import {
  Call_CreateMethod,
  Call_Direction,
  Call_State,
  Call_Transport,
} from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import {
  SipDomain_DomainType as DomainType,
  SipDomain_TerminationMode as Mode,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SimulatorAdmin, SimulatorRoute_Outcome } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { calls, webhookEvents } from "../../src/db/schema/index.js";
import { addBlock, numberingClients } from "../numbering/support.js";
import {
  bearer,
  errorReason,
  expectCode,
  expectInvalid,
  newProject,
  TEST_OPERATOR_TOKEN,
} from "../support/app.js";
import { callHarness, expectSigned, keyOf, xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { newSipDomainId } from "./support.js";

const CALLER = "+61491570156";
describe.each(testDatabases())("incoming calls on $name", (backend) => {
  const database = useTestDatabase(backend);
  const harness = callHarness(database);
  const { scheduler, nextBlock, handler, serve, single, runToEnd } = harness;
  const callsClient = harness.connect;
  const simulator = harness.client(SimulatorAdmin);
  const sip = harness.client(SipDomains);

  async function rest(
    body: unknown,
  ): Promise<{ status: number; json: { call: string; error: { status: string; details: unknown[] } } }> {
    const res = await fetch(`${harness.base}/admin/v1/simulator/incomingCalls`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TEST_OPERATOR_TOKEN}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as never };
  }

  it("a call to a single number: answered, markup from the handlers (falling through), COMPLETED", async () => {
    const { project, number } = await single([`${handler.base}/broken`, `${handler.base}/start`]);
    serve({
      "/broken": 500,
      "/start": xml(
        `<Say>Welcome</Say><Input NextUri="menu" TimeoutSeconds="2"><Say>Press a key</Say></Input>`,
      ),
      "/menu": xml("<Say>Goodbye</Say>"),
    });
    const res = await simulator.injectIncomingCall({ to: number, from: CALLER });
    expect(res.call).toMatch(new RegExp(`^${project}/calls/[a-z0-9]{16}$`));

    const created = await callsClient.getCall({ name: res.call });
    expect(created.direction).toBe(Call_Direction.INCOMING);
    expect(created.createMethod).toBe(Call_CreateMethod.INCOMING_CALL);
    expect(created.transport).toBe(Call_Transport.PSTN);
    expect(created.to).toBe(number);
    expect(created.from).toBe(CALLER);
    expect(created.isPrivate).toBe(false);
    expect(created.startTime).toEqual(created.createTime);
    expect(created.options).toBeUndefined();
    expect(created.fromLocation?.regionCode).toBe("AU");
    expect(created.fromZone).toBe("MOBILE");

    const ended = await runToEnd(res.call);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.errorCode).toBe("");
    expect(ended.answerTime).toBeDefined();
    expect(ended.endTime).toBeDefined();
    expect(ended.answerDuration).toBeDefined();

    const key = await keyOf(database.db, project);
    expect(handler.requests.map((r) => r.path)).toEqual(["/broken", "/start", "/menu"]);
    expectSigned(handler.requests[1]!, key, `${handler.base}/start`);
    expectSigned(handler.requests[2]!, key, `${handler.base}/menu`);
    const first = fromJsonString(CallRequestSchema, handler.requests[1]!.body);
    expect(first.call?.name).toBe(res.call);
    // Markup is asked for while the caller still rings; the first Say answers.
    expect(first.call?.state).toBe(Call_State.RINGING);
    expect(first.call?.answerTime).toBeUndefined();
    const second = fromJsonString(CallRequestSchema, handler.requests[2]!.body);
    expect(second.call?.state).toBe(Call_State.IN_PROGRESS);
    expect(first.call?.direction).toBe(Call_Direction.INCOMING);
    expect(first.call?.fromLocation?.regionCode).toBe("AU");
    // Incoming calls have no state_update_uri: no state updates are queued
    // (the call-control exchanges are recorded there too, as event CALL).
    const events = await database.db
      .select()
      .from(webhookEvents)
      .where(and(eq(webhookEvents.projectId, project.split("/")[1]!), ne(webhookEvents.eventType, "CALL")));
    expect(events).toEqual([]);
  });

  it("signs the handler's requests with the project's current key: a rotation applies to the next call", async () => {
    const { project, number } = await single([`${handler.base}/rotating`]);
    serve({ "/rotating": xml("<Say>Hello</Say>") });
    const first = await simulator.injectIncomingCall({ to: number, from: CALLER });
    await runToEnd(first.call);
    const before = await keyOf(database.db, project);
    const signedBefore = handler.requests.filter((r) => r.path === "/rotating");
    expect(signedBefore).toHaveLength(1);
    expectSigned(signedBefore[0]!, before, `${handler.base}/rotating`);

    const rotated = await fetch(`${harness.base}/admin/v1/${project}/signingKey:rotate`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TEST_OPERATOR_TOKEN}` },
      body: "{}",
    });
    expect(rotated.status).toBe(200);
    const after = await keyOf(database.db, project);
    expect(after.equals(before)).toBe(false);

    const second = await simulator.injectIncomingCall({ to: number, from: CALLER });
    await runToEnd(second.call);
    const signedAfter = handler.requests.filter((r) => r.path === "/rotating");
    expect(signedAfter).toHaveLength(2);
    expectSigned(signedAfter[1]!, after, `${handler.base}/rotating`);
  });

  it("a private call to a number inside a range (REST): the range's instance takes it, no from", async () => {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, scheduler.clock);
    const start = await addBlock(c, nextBlock(), 100);
    const range = await c.admin.provisionPhoneNumberRange({
      parent: project,
      startPhoneNumber: start,
      size: 50,
    });
    await c.instances.updatePhoneNumberInstance({
      name: range.name,
      phoneNumberInstance: { incomingCallHandlerUris: [`${handler.base}/range`] },
    });
    serve({ "/range": xml("<Say>Hi</Say>") });
    const inside = `+${BigInt(start.slice(1)) + 37n}`;

    const res = await rest({ to: inside, isPrivate: true });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json)).toEqual(["call"]);
    expect(res.json.call).toMatch(new RegExp(`^${project}/calls/`));
    const ended = await runToEnd(res.json.call);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.to).toBe(inside);
    expect(ended.from).toBe("");
    expect(ended.isPrivate).toBe(true);
    expect(ended.fromLocation).toBeUndefined();
    expect(ended.fromZone).toBe("");
    expect(handler.requests.map((r) => r.path)).toEqual(["/range"]);

    // A private caller's number, if the network passes it, is not recorded either.
    const withheld = await rest({ to: inside, from: CALLER, isPrivate: true });
    expect(withheld.status).toBe(200);
    const [row] = await database.db
      .select()
      .from(calls)
      .where(eq(calls.id, String(withheld.json.call).split("/")[3]!));
    expect(row!.from).toBe("");
    await runToEnd(withheld.json.call);

    // Past the range's end nobody holds the number.
    const outside = await rest({ to: `+${BigInt(start.slice(1)) + 50n}`, from: CALLER });
    expect(outside.status).toBe(400);
    expect(outside.json.error.status).toBe("FAILED_PRECONDITION");
    expect(outside.json.error.details[0]).toMatchObject({ reason: "NUMBER_NOT_IN_SERVICE" });
  });

  it("no handler answering: the call ends FAILED HANDLER_UNAVAILABLE", async () => {
    const { number } = await single([`${handler.base}/down`]);
    serve({ "/down": 503 });
    const res = await simulator.injectIncomingCall({ to: number, from: CALLER });
    const ended = await runToEnd(res.call);
    expect(ended.state).toBe(Call_State.FAILED);
    expect(ended.errorCode).toBe("HANDLER_UNAVAILABLE");
  });

  it("forwards to a tel: handler (bridged with the caller) and to a sip: handler", async () => {
    await simulator.createRoute({ route: { prefix: "+61491570190", ringSeconds: 1, talkSeconds: 15 } });
    const { number } = await single(["tel:+61491570190", `${handler.base}/never`]);
    const res = await simulator.injectIncomingCall({ to: number, from: CALLER });
    const ended = await runToEnd(res.call);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.bridged).toBe(true);
    expect(ended.direction).toBe(Call_Direction.INCOMING);
    expect(Number(ended.endTime!.seconds - ended.answerTime!.seconds)).toBeGreaterThanOrEqual(14);
    expect(handler.requests).toEqual([]);

    const sipForward = await single(["sip:desk@pbx.example.com"]);
    const viaSip = await simulator.injectIncomingCall({ to: sipForward.number, from: CALLER });
    const sipEnded = await runToEnd(viaSip.call);
    expect(sipEnded.state).toBe(Call_State.COMPLETED);
    expect(sipEnded.bridged).toBe(true);

    await simulator.createRoute({ route: { prefix: "+61491570191", outcome: SimulatorRoute_Outcome.BUSY } });
    const busy = await single(["tel:+61491570191"]);
    const refused = await runToEnd(
      (await simulator.injectIncomingCall({ to: busy.number, from: CALLER })).call,
    );
    expect(refused.state).toBe(Call_State.BUSY);
    expect(refused.answerTime).toBeUndefined();
  });

  it("rejects what the network would not connect, recording nothing", async () => {
    const before = (await database.db.select().from(calls)).length;
    const c = numberingClients(database.db, scheduler.clock);
    const unowned = await addBlock(c, nextBlock(), 10);
    let e = await expectCode(
      simulator.injectIncomingCall({ to: unowned, from: CALLER }),
      Code.FailedPrecondition,
    );
    expect(errorReason(e)).toBe("NUMBER_NOT_IN_SERVICE");

    const none = await single([]);
    e = await expectCode(
      simulator.injectIncomingCall({ to: none.number, from: CALLER }),
      Code.FailedPrecondition,
    );
    expect(errorReason(e)).toBe("NO_HANDLER");

    const suspended = await single([`${handler.base}/x`]);
    await c.admin.suspendPhoneNumberInstance({ name: suspended.instance });
    e = await expectCode(
      simulator.injectIncomingCall({ to: suspended.number, from: CALLER }),
      Code.FailedPrecondition,
    );
    expect(errorReason(e)).toBe("NUMBER_NOT_IN_SERVICE");

    await expectInvalid(simulator.injectIncomingCall({ to: "12", from: "" }), ["to", "from"]);
    await expectInvalid(simulator.injectIncomingCall({ to: "100", sipDomain: "x.example" }), ["source_ip"]);
    expect((await database.db.select().from(calls)).length).toBe(before);
    expect(handler.requests).toEqual([]);
  });

  describe("calls to SIP domains", () => {
    const SOURCE = "203.0.113.10";

    async function sipDomain(init: Parameters<typeof sip.createSipDomain>[0]["sipDomain"]) {
      const project = await newProject(database.db);
      const domain = await sip.createSipDomain({
        parent: project,
        sipDomainId: newSipDomainId("in"),
        sipDomain: init,
      });
      return { project, domain };
    }

    it("PROGRAMMABLE: authorized by the domain's rules, markup from call_termination_handler_uris", async () => {
      const { project, domain } = await sipDomain({
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: [`${handler.base}/sip`],
        cidrBlocks: [{ cidrBlock: "203.0.113.0/24" }],
      });
      serve({ "/sip": xml("<Say>SIP hello</Say>") });
      const res = await rest({ to: "1001", from: "alice", sipDomain: domain.fqdn, sourceIp: SOURCE });
      expect(res.status).toBe(200);
      expect(res.json.call).toMatch(new RegExp(`^${project}/calls/`));
      const ended = await runToEnd(res.json.call);
      expect(ended.state).toBe(Call_State.COMPLETED);
      expect(ended.transport).toBe(Call_Transport.SIP);
      expect(ended.direction).toBe(Call_Direction.INCOMING);
      expect(ended.createMethod).toBe(Call_CreateMethod.INCOMING_CALL);
      expect(ended.to).toBe(`sip:1001@${domain.fqdn}`);
      expect(ended.from).toBe(`sip:alice@${SOURCE}`);
      expect(ended.sipCallId).not.toBe("");
      expect(ended.fromZone).toBe("");
      expect(handler.requests.map((r) => r.path)).toEqual(["/sip"]);
      expectSigned(handler.requests[0]!, await keyOf(database.db, project), `${handler.base}/sip`);

      // The rules decide: an address outside the blocks is refused with their code.
      const e = await expectCode(
        simulator.injectIncomingCall({ to: "1001", sipDomain: domain.fqdn, sourceIp: "192.0.2.1" }),
        Code.FailedPrecondition,
      );
      expect(errorReason(e)).toBe("SOURCE_IP_NOT_ALLOWED");
      const unknown = await expectCode(
        simulator.injectIncomingCall({ to: "1001", sipDomain: "nobody.example", sourceIp: SOURCE }),
        Code.FailedPrecondition,
      );
      expect(errorReason(unknown)).toBe("DOMAIN_NOT_FOUND");
    });

    it("DISABLED: rejected with TERMINATION_DISABLED", async () => {
      const { domain } = await sipDomain({
        callTerminationMode: Mode.TERMINATION_MODE_DISABLED,
        cidrBlocks: [{ cidrBlock: "203.0.113.0/24" }],
      });
      const before = (await database.db.select().from(calls)).length;
      const e = await expectCode(
        simulator.injectIncomingCall({ to: "1001", sipDomain: domain.fqdn, sourceIp: SOURCE }),
        Code.FailedPrecondition,
      );
      expect(errorReason(e)).toBe("TERMINATION_DISABLED");
      expect((await database.db.select().from(calls)).length).toBe(before);
    });

    it("PSTN_TRUNK: a PSTN leg to the dialled number, bridged; a busy number ends the call BUSY", async () => {
      const { domain } = await sipDomain({
        callTerminationMode: Mode.PSTN_TRUNK,
        cidrBlocks: [{ cidrBlock: "203.0.113.0/24" }],
      });
      const admin = createClient(
        SimulatorAdmin,
        createConnectTransport({
          baseUrl: harness.base,
          httpVersion: "1.1",
          interceptors: [bearer(TEST_OPERATOR_TOKEN)],
        }),
      );
      await admin.createRoute({ route: { prefix: "+61491570177", ringSeconds: 1, talkSeconds: 20 } });
      await admin.createRoute({ route: { prefix: "+61491570178", outcome: SimulatorRoute_Outcome.BUSY } });
      const res = await simulator.injectIncomingCall({
        to: "+61491570177",
        from: "+61255501234",
        sipDomain: domain.fqdn,
        sourceIp: SOURCE,
      });
      const ended = await runToEnd(res.call);
      expect(ended.state).toBe(Call_State.COMPLETED);
      expect(ended.bridged).toBe(true);
      expect(ended.answerTime).toBeDefined();
      const talked = Number(ended.endTime!.seconds - ended.answerTime!.seconds);
      expect(talked).toBeGreaterThanOrEqual(19);
      expect(handler.requests).toEqual([]);

      const busy = await simulator.injectIncomingCall({
        to: "+61491570178",
        sipDomain: domain.fqdn,
        sourceIp: SOURCE,
      });
      const refused = await runToEnd(busy.call);
      expect(refused.state).toBe(Call_State.BUSY);
      expect(refused.errorCode).toBe("BUSY");
      expect(refused.answerTime).toBeUndefined();
    });

    it("the collaboration type's channel_limit caps simultaneous calls", async () => {
      const { domain } = await sipDomain({
        type: DomainType.COLLAB_DIRECT_ROUTING,
        channelLimit: 2,
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: [`${handler.base}/long`],
      });
      serve({ "/long": xml('<Wait Seconds="30"/>') });
      const inject = () =>
        simulator.injectIncomingCall({
          to: "+61491570156",
          sipDomain: domain.fqdn,
          sourceIp: "198.51.100.20",
        });
      const first = await inject();
      const second = await inject();
      const e = await expectCode(inject(), Code.FailedPrecondition);
      expect(errorReason(e)).toBe("CHANNEL_LIMIT_REACHED");
      await runToEnd(first.call);
      await runToEnd(second.call);
      // Once they ended there is room again.
      const third = await inject();
      await runToEnd(third.call);
    });
  });
});
