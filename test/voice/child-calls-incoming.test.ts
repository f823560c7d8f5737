/**
 * Child calls of incoming calls end to end: forwarding (`tel:` handler URIs)
 * with fall-through, and how markup answers or refuses the ringing caller.
 * The real app (build()) listening on 127.0.0.1, the carrier simulator on a
 * ManualScheduler, real HTTP receivers as the customer's call handlers; the
 * operator injects calls through SimulatorAdmin (Connect JSON).
 */
import { fromJsonString } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { CallRequestSchema } from "../../gen/enfonica/voice/v1beta1/call_request_pb.js";
import {
  type Call,
  Call_CreateMethod,
  Call_Direction,
  Call_State,
  Call_Transport,
} from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { SimulatorAdmin, SimulatorRoute_Outcome } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { between, callHarness, secondsOf, xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { spokenSeconds } from "../support/speech.js";

/** The caller: no route matches it, so once answered it talks the default 30 s. */
const CALLER = "+61491570156";

describe.each(testDatabases())("child calls of incoming calls on $name", (backend) => {
  const database = useTestDatabase(backend);
  const harness = callHarness(database, { destinations: "+614915703" });
  const { handler, serve, route, single, runToEnd } = harness;
  const callsClient = harness.connect;
  const simulator = harness.client(SimulatorAdmin);

  /** The calls of a project, oldest first (a forwarding may be created at its parent's very time). */
  async function callsOf(project: string): Promise<Call[]> {
    const res = await callsClient.listCalls({ parent: project, pageSize: 100 });
    return [...res.calls].reverse();
  }

  /** The one child call of `parent` in `project`. */
  async function onlyChildOf(project: string, parent: string): Promise<Call> {
    const all = await callsOf(project);
    expect(all).toHaveLength(2);
    expect(all.map((c) => c.name)).toContain(parent);
    return all.find((c) => c.name !== parent)!;
  }

  function expectForwardingOf(child: Call, parent: Call, to: string): void {
    expect(child.createMethod).toBe(Call_CreateMethod.PARENT_CALL);
    expect(child.originatingCall).toBe(parent.name);
    expect(child.direction).toBe(Call_Direction.OUTGOING);
    expect(child.transport).toBe(Call_Transport.PSTN);
    expect(child.to).toBe(to);
    // Forwarding presents the caller's number.
    expect(child.from).toBe(CALLER);
  }

  it("[http 500, tel:] falls through to the forwarding: bridged, answered when the child answered", async () => {
    const agent = await route({ ringSeconds: 2, talkSeconds: 7 });
    const { project, number } = await single([`${handler.base}/broken`, `tel:${agent}`]);
    serve({ "/broken": 500 });
    const res = await simulator.injectIncomingCall({ to: number, from: CALLER });
    const ended = await runToEnd(res.call);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.errorCode).toBe("");
    expect(ended.bridged).toBe(true);
    expect(ended.direction).toBe(Call_Direction.INCOMING);
    expect(ended.createMethod).toBe(Call_CreateMethod.INCOMING_CALL);
    expect(handler.requests.map((r) => r.path)).toEqual(["/broken"]);

    const child = await onlyChildOf(project, res.call);
    expectForwardingOf(child, ended, agent);
    expect(child.state).toBe(Call_State.COMPLETED);
    expect(child.errorCode).toBe("");
    expect(child.bridged).toBe(true);
    expect(secondsOf(child.answerDuration)).toBeCloseTo(7, 3);
    // The caller was answered when the agent answered, and the call ended with the agent's hang-up.
    expect(between(child.answerTime, ended.answerTime)).toBeCloseTo(0, 3);
    expect(between(child.endTime, ended.endTime)).toBeCloseTo(0, 3);
    expect(secondsOf(ended.answerDuration)).toBeCloseTo(7, 3);
    // The agent rang 2 s while the caller was still ringing.
    expect(between(ended.startTime, ended.answerTime)).toBeGreaterThanOrEqual(2);
  });

  it("[tel: busy, http] the forwarding fails BUSY and falls through to the markup, which runs", async () => {
    const busy = await route({ outcome: SimulatorRoute_Outcome.BUSY });
    const { project, number } = await single([`tel:${busy}`, `${handler.base}/start`]);
    serve({ "/start": xml("<Say>one two three four five</Say>") });
    // Synthesized before the call (then served from the engine's cache): synthesis takes real
    // time, during which the harness moves call time on.
    const five = await spokenSeconds("one two three four five");
    const res = await simulator.injectIncomingCall({ to: number, from: CALLER });
    const ended = await runToEnd(res.call);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.errorCode).toBe("");
    expect(ended.bridged).toBe(false);
    expect(ended.answerTime).toBeDefined();
    // The speech engine's audio of the five words, then the document ends.
    expect(secondsOf(ended.answerDuration)).toBeCloseTo(five, 2);

    const child = await onlyChildOf(project, res.call);
    expectForwardingOf(child, ended, busy);
    expect(child.state).toBe(Call_State.BUSY);
    expect(child.errorCode).toBe("BUSY");
    expect(child.bridged).toBe(false);
    expect(child.answerTime).toBeUndefined();

    expect(handler.requests.map((r) => r.path)).toEqual(["/start"]);
    const request = fromJsonString(CallRequestSchema, handler.requests[0]!.body);
    expect(request.call?.name).toBe(res.call);
    // The caller still rings when the markup is asked for.
    expect(request.call?.state).toBe(Call_State.RINGING);
    expect(request.call?.answerTime).toBeUndefined();
  });

  it("[tel: busy] alone: the caller is refused BUSY", async () => {
    const busy = await route({ outcome: SimulatorRoute_Outcome.BUSY });
    const { project, number } = await single([`tel:${busy}`]);
    const res = await simulator.injectIncomingCall({ to: number, from: CALLER });
    const ended = await runToEnd(res.call);
    expect(ended.state).toBe(Call_State.BUSY);
    expect(ended.errorCode).toBe("BUSY");
    expect(ended.bridged).toBe(false);
    expect(ended.answerTime).toBeUndefined();
    expect(ended.answerDuration).toBeUndefined();
    const child = await onlyChildOf(project, res.call);
    expectForwardingOf(child, ended, busy);
    expect(child.state).toBe(Call_State.BUSY);
    expect(child.errorCode).toBe("BUSY");
    expect(handler.requests).toEqual([]);
  });

  it("<Reject/> first refuses the ringing caller REJECTED; Reason=busy BUSY; never answered", async () => {
    const { project, number } = await single([`${handler.base}/reject`]);
    serve({ "/reject": xml("<Reject/><Say>Never</Say>") });
    const rejected = await runToEnd((await simulator.injectIncomingCall({ to: number, from: CALLER })).call);
    expect(rejected.state).toBe(Call_State.REJECTED);
    expect(rejected.errorCode).toBe("REJECTED");
    expect(rejected.answerTime).toBeUndefined();
    expect(rejected.answerDuration).toBeUndefined();
    expect(rejected.endTime).toBeDefined();

    serve({ "/reject": xml('<Reject Reason="busy"/>') });
    const busy = await runToEnd((await simulator.injectIncomingCall({ to: number, from: CALLER })).call);
    expect(busy.state).toBe(Call_State.BUSY);
    expect(busy.errorCode).toBe("BUSY");
    expect(busy.answerTime).toBeUndefined();
    expect(busy.answerDuration).toBeUndefined();
    // No child calls.
    expect(await callsOf(project)).toHaveLength(2);
  });

  it("<Say> first answers the caller (IN_PROGRESS) before speaking", async () => {
    const { number } = await single([`${handler.base}/say`]);
    serve({
      "/say": xml("<Say>one two three four five</Say><Redirect>/next</Redirect>"),
      "/next": xml("<Say>Bye</Say>"),
    });
    // Synthesized first (see above).
    const five = await spokenSeconds("one two three four five");
    const bye = await spokenSeconds("Bye");
    const res = await simulator.injectIncomingCall({ to: number, from: CALLER });
    const ended = await runToEnd(res.call);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.answerTime).toBeDefined();
    expect(handler.requests.map((r) => r.path)).toEqual(["/say", "/next"]);
    const first = fromJsonString(CallRequestSchema, handler.requests[0]!.body);
    expect(first.call?.state).toBe(Call_State.RINGING);
    const next = fromJsonString(CallRequestSchema, handler.requests[1]!.body);
    expect(next.call?.state).toBe(Call_State.IN_PROGRESS);
    expect(secondsOf(next.call?.answerTime)).toBeCloseTo(secondsOf(ended.answerTime), 3);
    // Both prompts were spoken to the answered caller, as long as their speech at least (the
    // redirect took call time too).
    expect(secondsOf(ended.answerDuration)).toBeGreaterThanOrEqual(five + bye - 0.001);

    // Without the redirect the call lasts exactly the speech: answered first, then all of it.
    serve({ "/say": xml("<Say>one two three four five</Say>") });
    const exact = await runToEnd((await simulator.injectIncomingCall({ to: number, from: CALLER })).call);
    expect(exact.state).toBe(Call_State.COMPLETED);
    expect(secondsOf(exact.answerDuration)).toBeCloseTo(five, 2);
  });

  it("<Call> in markup: the ringing caller is answered only when the endpoint answers", async () => {
    const agent = await route({ ringSeconds: 3, talkSeconds: 4 });
    const { project, number } = await single([`${handler.base}/call`]);
    serve({
      "/call": xml(`<Call NextUri="/after"><Endpoint>${agent}</Endpoint></Call>`),
      "/after": xml("<Say>Bye</Say>"),
    });
    const res = await simulator.injectIncomingCall({ to: number, from: CALLER });
    const ended = await runToEnd(res.call);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.bridged).toBe(true);
    const child = await onlyChildOf(project, res.call);
    expect(child.createMethod).toBe(Call_CreateMethod.PARENT_CALL);
    expect(child.originatingCall).toBe(res.call);
    // Without CallerId the caller's number is presented.
    expect(child.from).toBe(CALLER);
    expect(child.to).toBe(agent);
    expect(child.state).toBe(Call_State.COMPLETED);
    expect(child.bridged).toBe(true);
    expect(secondsOf(child.answerDuration)).toBeCloseTo(4, 3);
    expect(between(child.answerTime, ended.answerTime)).toBeCloseTo(0, 3);
    expect(between(child.ringTime, child.answerTime)).toBeCloseTo(3, 3);
    const after = fromJsonString(CallRequestSchema, handler.requests.find((r) => r.path === "/after")!.body);
    expect(after.call?.state).toBe(Call_State.IN_PROGRESS);
    expect(after.parameters).toEqual({
      action: "CALL",
      call: child.name,
      callState: "COMPLETED",
      errorCode: "",
      answerDurationSeconds: "4",
    });
  });

  it("<Call> in markup that does not connect leaves the caller ringing: the NextUri can still refuse it", async () => {
    const busy = await route({ outcome: SimulatorRoute_Outcome.BUSY });
    const { project, number } = await single([`${handler.base}/call`]);
    serve({
      "/call": xml(`<Call NextUri="/after"><Endpoint>${busy}</Endpoint></Call>`),
      "/after": xml('<Reject Reason="busy"/>'),
    });
    const res = await simulator.injectIncomingCall({ to: number, from: CALLER });
    const ended = await runToEnd(res.call);
    expect(ended.state).toBe(Call_State.BUSY);
    expect(ended.errorCode).toBe("BUSY");
    expect(ended.answerTime).toBeUndefined();
    const child = await onlyChildOf(project, res.call);
    expect(child.state).toBe(Call_State.BUSY);
    expect(child.originatingCall).toBe(res.call);
    const after = fromJsonString(CallRequestSchema, handler.requests.find((r) => r.path === "/after")!.body);
    expect(after.call?.state).toBe(Call_State.RINGING);
    expect(after.parameters).toMatchObject({ callState: "BUSY", errorCode: "BUSY", call: child.name });
  });
});
