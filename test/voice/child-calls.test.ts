/**
 * Child calls of outgoing calls (<Call>: strategies, MaxDurationSeconds,
 * CallerId, the parent hanging up, state updates) end to end: the real app
 * (build()) listening on 127.0.0.1, the carrier simulator on a
 * ManualScheduler (call time is exact), real HTTP receivers as the
 * customer's call handlers and state-update endpoint, signatures checked
 * with node:crypto here. Client: connect-node (Connect JSON over HTTP/1.1).
 * Incoming calls' children: child-calls-incoming.test.ts.
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
  CallSchema,
} from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { SimulatorRoute_Outcome } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { numberingClients, plus, provision } from "../numbering/support.js";
import { between, callHarness, expectSigned, keyOf, secondsOf, sleep, xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

describe.each(testDatabases())("child calls (<Call>) on $name", (backend) => {
  const database = useTestDatabase(backend);
  const harness = callHarness(database, {
    env: { CALL_RATES: "+61=0.05,+1=0.02", CALL_RATES_CURRENCY: "AUD" },
  });
  const { scheduler, connect, handler, states, owner, route, serve, runToEnd, createCall } = harness;

  /** The calls of a project, oldest first. */
  async function callsOf(project: string): Promise<Call[]> {
    const res = await connect.listCalls({ parent: project, pageSize: 100 });
    return [...res.calls].reverse();
  }

  /** The CallRequest parameters the handler received at `path`. */
  function parametersAt(path: string): Record<string, string> {
    const req = handler.requests.find((r) => r.path === path);
    expect(req, `no request to ${path}`).toBeDefined();
    return fromJsonString(CallRequestSchema, req!.body).parameters;
  }

  /** Expects `child` to be a PARENT_CALL child of `parent` to `to`, presenting `from`. */
  function expectChildOf(child: Call, parent: string, to: string, from: string): void {
    expect(child.createMethod).toBe(Call_CreateMethod.PARENT_CALL);
    expect(child.originatingCall).toBe(parent);
    expect(child.direction).toBe(Call_Direction.OUTGOING);
    expect(child.transport).toBe(Call_Transport.PSTN);
    expect(child.to).toBe(to);
    expect(child.from).toBe(from);
    expect(child.options).toBeUndefined();
  }

  it("a two-leg call via <Call>: a child call PARENT_CALL, both bridged, NextUri gets the result", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    const agent = await route({ ringSeconds: 2, talkSeconds: 20 });
    serve({
      "/start": xml(
        `<Say>Connecting you</Say><Call NextUri="/after" TimeoutSeconds="10"><Endpoint>${agent}</Endpoint></Call>`,
      ),
      "/after": xml("<Say>The agent hung up</Say>"),
    });
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.bridged).toBe(true);
    const all = await callsOf(project);
    expect(all).toHaveLength(2);
    const child = all[1]!;
    expect(child.createMethod).toBe(Call_CreateMethod.PARENT_CALL);
    expect(child.originatingCall).toBe(created.name);
    expect(child.direction).toBe(Call_Direction.OUTGOING);
    expect(child.to).toBe(agent);
    expect(child.from).toBe(from);
    expect(child.bridged).toBe(true);
    expect(child.state).toBe(Call_State.COMPLETED);
    expect(child.options).toBeUndefined();
    // The agent talked 20 s after answering; the parent lasted longer (say + ring + after).
    expect(Number(child.answerDuration?.seconds)).toBe(20);
    expect(Number(ended.answerDuration?.seconds)).toBeGreaterThan(22);
    const after = handler.requests.find((r) => r.path === "/after");
    const request = fromJsonString(CallRequestSchema, after!.body);
    expect(request.parameters).toEqual({
      action: "CALL",
      call: child.name,
      callState: "COMPLETED",
      errorCode: "",
      answerDurationSeconds: "20",
    });
  });

  it("linear: busy, then not answered, then answered — three children in order, the third bridged", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    const busy = await route({ outcome: SimulatorRoute_Outcome.BUSY });
    const silent = await route({ outcome: SimulatorRoute_Outcome.NO_ANSWER });
    const agent = await route({ ringSeconds: 1, talkSeconds: 5 });
    serve({
      "/start": xml(
        `<Call Strategy="linear" TimeoutSeconds="3" NextUri="/after"><Endpoint>${busy}</Endpoint><Endpoint>tel:${silent}</Endpoint><Endpoint>${agent}</Endpoint></Call>`,
      ),
      "/after": xml("<Say>Bye</Say>"),
    });
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.errorCode).toBe("");
    expect(ended.bridged).toBe(true);

    const all = await callsOf(project);
    expect(all.map((c) => c.to)).toEqual([to, busy, silent, agent]);
    const [, first, second, third] = all as [Call, Call, Call, Call];
    for (const [child, target] of [
      [first, busy],
      [second, silent],
      [third, agent],
    ] as const) {
      expectChildOf(child, created.name, target, from);
    }
    // One after the other: each created once the previous ended.
    expect(secondsOf(second.createTime)).toBeGreaterThanOrEqual(secondsOf(first.endTime));
    expect(secondsOf(third.createTime)).toBeGreaterThanOrEqual(secondsOf(second.endTime));

    expect(first.state).toBe(Call_State.BUSY);
    expect(first.errorCode).toBe("BUSY");
    expect(first.bridged).toBe(false);
    expect(first.ringTime).toBeUndefined();
    expect(first.answerTime).toBeUndefined();

    expect(second.state).toBe(Call_State.NOT_ANSWERED);
    expect(second.errorCode).toBe("NO_ANSWER");
    expect(second.bridged).toBe(false);
    expect(second.answerTime).toBeUndefined();
    // Rang from setup (0.1 s) to TimeoutSeconds (3 s).
    expect(between(second.ringTime, second.endTime)).toBeCloseTo(2.9, 3);

    expect(third.state).toBe(Call_State.COMPLETED);
    expect(third.errorCode).toBe("");
    expect(third.bridged).toBe(true);
    expect(secondsOf(third.answerDuration)).toBeCloseTo(5, 3);

    expect(handler.requests.map((r) => r.path)).toEqual(["/start", "/after"]);
    expect(parametersAt("/after")).toEqual({
      action: "CALL",
      call: third.name,
      callState: "COMPLETED",
      errorCode: "",
      answerDurationSeconds: "5",
    });
  });

  it("failover: a FAILED endpoint moves on to the next one", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    const broken = await route({ outcome: SimulatorRoute_Outcome.FAIL, errorCode: "NETWORK_DOWN" });
    const agent = await route({ ringSeconds: 1, talkSeconds: 4 });
    serve({
      "/start": xml(
        `<Call Strategy="failover" NextUri="/after"><Endpoint>${broken}</Endpoint><Endpoint>${agent}</Endpoint></Call>`,
      ),
      "/after": xml("<Say>Bye</Say>"),
    });
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.bridged).toBe(true);
    const [, first, second, ...rest] = (await callsOf(project)) as [Call, Call, Call];
    expect(rest).toEqual([]);
    expectChildOf(first, created.name, broken, from);
    expectChildOf(second, created.name, agent, from);
    expect(first.state).toBe(Call_State.FAILED);
    expect(first.errorCode).toBe("NETWORK_DOWN");
    expect(first.bridged).toBe(false);
    expect(second.state).toBe(Call_State.COMPLETED);
    expect(second.bridged).toBe(true);
    expect(secondsOf(second.answerDuration)).toBeCloseTo(4, 3);
    expect(parametersAt("/after")).toEqual({
      action: "CALL",
      call: second.name,
      callState: "COMPLETED",
      errorCode: "",
      answerDurationSeconds: "4",
    });
  });

  it("failover: a BUSY endpoint stops there; without NextUri the document goes on", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    const busy = await route({ outcome: SimulatorRoute_Outcome.BUSY });
    const agent = await route({ ringSeconds: 1, talkSeconds: 4 });
    const endpoints = `<Endpoint>${busy}</Endpoint><Endpoint>${agent}</Endpoint>`;
    serve({
      // The second <Call> runs only if the document went on after the first.
      "/start": xml(
        `<Call Strategy="failover">${endpoints}</Call><Call Strategy="failover" NextUri="/after">${endpoints}</Call>`,
      ),
      "/after": xml("<Say>Bye</Say>"),
    });
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.bridged).toBe(false);
    const all = await callsOf(project);
    // Two <Call>s, one child each: the agent was never called.
    expect(all.map((c) => c.to)).toEqual([to, busy, busy]);
    for (const child of all.slice(1)) {
      expectChildOf(child, created.name, busy, from);
      expect(child.state).toBe(Call_State.BUSY);
      expect(child.errorCode).toBe("BUSY");
      expect(child.bridged).toBe(false);
    }
    expect(handler.requests.map((r) => r.path)).toEqual(["/start", "/after"]);
    expect(parametersAt("/after")).toEqual({
      action: "CALL",
      call: all[2]!.name,
      callState: "BUSY",
      errorCode: "BUSY",
      answerDurationSeconds: "0",
    });
  });

  it("simultaneous: the first to answer is bridged, the others end ANSWERED_ELSEWHERE", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    const slow = await route({ ringSeconds: 3, talkSeconds: 60 });
    const fast = await route({ ringSeconds: 1, talkSeconds: 6 });
    const middle = await route({ ringSeconds: 2, talkSeconds: 60 });
    serve({
      "/start": xml(
        `<Call Strategy="simultaneous" NextUri="/after"><Endpoint>${slow}</Endpoint><Endpoint>${fast}</Endpoint><Endpoint>${middle}</Endpoint></Call>`,
      ),
      "/after": xml("<Say>Bye</Say>"),
    });
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.bridged).toBe(true);
    const children = (await callsOf(project)).slice(1);
    expect(children.map((c) => c.to).sort()).toEqual([slow, fast, middle].sort());
    const byTo = (n: string) => children.find((c) => c.to === n)!;
    for (const n of [slow, fast, middle]) expectChildOf(byTo(n), created.name, n, from);

    const winner = byTo(fast);
    expect(winner.state).toBe(Call_State.COMPLETED);
    expect(winner.errorCode).toBe("");
    expect(winner.bridged).toBe(true);
    expect(secondsOf(winner.answerDuration)).toBeCloseTo(6, 3);
    for (const n of [slow, middle]) {
      const loser = byTo(n);
      expect(loser.state).toBe(Call_State.NOT_ANSWERED);
      expect(loser.errorCode).toBe("ANSWERED_ELSEWHERE");
      expect(loser.bridged).toBe(false);
      expect(loser.answerTime).toBeUndefined();
      expect(loser.ringTime).toBeDefined();
      // Hung up the moment the winner answered.
      expect(between(winner.answerTime, loser.endTime)).toBeCloseTo(0, 3);
    }
    expect(parametersAt("/after")).toEqual({
      action: "CALL",
      call: winner.name,
      callState: "COMPLETED",
      errorCode: "",
      answerDurationSeconds: "6",
    });
  });

  it("MaxDurationSeconds hangs the child up; the parent's document goes on", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    const agent = await route({ ringSeconds: 1, talkSeconds: 60 });
    serve({
      "/start": xml(
        `<Call MaxDurationSeconds="5"><Endpoint>${agent}</Endpoint></Call><Redirect>/after</Redirect>`,
      ),
      "/after": xml("<Say>Time is up</Say>"),
    });
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.bridged).toBe(true);
    const [, child, ...rest] = (await callsOf(project)) as [Call, Call];
    expect(rest).toEqual([]);
    expectChildOf(child, created.name, agent, from);
    expect(child.state).toBe(Call_State.COMPLETED);
    expect(child.errorCode).toBe("");
    expect(child.bridged).toBe(true);
    expect(secondsOf(child.answerDuration)).toBeCloseTo(5, 3);
    // The parent outlived the child: the document went on after the bridge.
    expect(secondsOf(ended.endTime)).toBeGreaterThan(secondsOf(child.endTime));
    expect(handler.requests.map((r) => r.path)).toEqual(["/start", "/after"]);
  });

  it("the parent hanging up while a child rings: the child ends NOT_ANSWERED CANCELLED", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 4 });
    const agent = await route({ ringSeconds: 20, talkSeconds: 60 });
    serve({
      "/start": xml(`<Call TimeoutSeconds="30" NextUri="/after"><Endpoint>${agent}</Endpoint></Call>`),
      "/after": xml("<Say>Never</Say>"),
    });
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.errorCode).toBe("");
    expect(ended.bridged).toBe(false);
    expect(secondsOf(ended.answerDuration)).toBeCloseTo(4, 3);
    const [, child, ...rest] = (await callsOf(project)) as [Call, Call];
    expect(rest).toEqual([]);
    expectChildOf(child, created.name, agent, from);
    expect(child.state).toBe(Call_State.NOT_ANSWERED);
    expect(child.errorCode).toBe("CANCELLED");
    expect(child.ringTime).toBeDefined();
    expect(child.answerTime).toBeUndefined();
    expect(child.bridged).toBe(false);
    expect(between(ended.endTime, child.endTime)).toBeCloseTo(0, 3);
    // The call is over: no NextUri request.
    expect(handler.requests.map((r) => r.path)).toEqual(["/start"]);
  });

  it("the parent hanging up while bridged: the child ends COMPLETED with it", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 6 });
    const agent = await route({ ringSeconds: 1, talkSeconds: 60 });
    serve({
      "/start": xml(`<Call NextUri="/after"><Endpoint>${agent}</Endpoint></Call>`),
      "/after": xml("<Say>Never</Say>"),
    });
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.bridged).toBe(true);
    expect(secondsOf(ended.answerDuration)).toBeCloseTo(6, 3);
    const [, child, ...rest] = (await callsOf(project)) as [Call, Call];
    expect(rest).toEqual([]);
    expectChildOf(child, created.name, agent, from);
    expect(child.state).toBe(Call_State.COMPLETED);
    expect(child.errorCode).toBe("");
    expect(child.bridged).toBe(true);
    expect(between(ended.endTime, child.endTime)).toBeCloseTo(0, 3);
    expect(between(child.answerTime, child.endTime)).toBeCloseTo(secondsOf(child.answerDuration), 3);
    expect(secondsOf(child.answerDuration)).toBeLessThan(6);
    expect(secondsOf(child.answerDuration)).toBeGreaterThan(0);
    expect(handler.requests.map((r) => r.path)).toEqual(["/start"]);
  });

  it("CallerId: another project's number fails the call; the project's own other number is presented", async () => {
    const other = await owner();
    const { project, from } = await owner();
    const c = numberingClients(database.db, scheduler.clock);
    const second = plus(from, 1);
    await provision(c, project, second);
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    const agent = await route({ ringSeconds: 1, talkSeconds: 3 });
    serve({
      "/foreign": xml(`<Call CallerId="${other.from}"><Endpoint>${agent}</Endpoint></Call><Say>Never</Say>`),
      "/own": xml(`<Call CallerId="${second}"><Endpoint>${agent}</Endpoint></Call>`),
    });
    const refused = await createCall(project, from, to, "/foreign");
    const failed = await runToEnd(refused.name);
    expect(failed.state).toBe(Call_State.FAILED);
    expect(failed.errorCode).toBe("CALLER_ID_NOT_ALLOWED");
    expect(failed.bridged).toBe(false);
    expect((await callsOf(project)).map((x) => x.name)).toEqual([refused.name]);
    expect((await callsOf(other.project)).length).toBe(0);

    const accepted = await createCall(project, from, to, "/own");
    const ended = await runToEnd(accepted.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.bridged).toBe(true);
    const all = await callsOf(project);
    expect(all.map((x) => x.name).slice(0, 2)).toEqual([refused.name, accepted.name]);
    expect(all).toHaveLength(3);
    const child = all[2]!;
    expectChildOf(child, accepted.name, agent, second);
    expect(child.state).toBe(Call_State.COMPLETED);
  });

  it("the child's state updates go to the parent's state_update_uri, in order, signed", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    const agent = await route({ ringSeconds: 1, talkSeconds: 3 });
    serve({ "/start": xml(`<Call><Endpoint>${agent}</Endpoint></Call>`) });
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    const child = (await callsOf(project))[1]!;
    expectChildOf(child, created.name, agent, from);

    // Only this call's updates (an earlier test's may still be on their way).
    const key = await keyOf(database.db, project);
    const mine = () =>
      states.requests.filter((r) => {
        const name = fromJsonString(CallSchema, r.body).name;
        return name === created.name || name === child.name;
      });
    for (let i = 0; i < 500 && mine().length < 10; i++) await sleep(10);
    await sleep(50);
    const updates = mine().map((r) => {
      expectSigned(r, key, `${states.base}/state`, "CALL_STATE_UPDATE");
      return fromJsonString(CallSchema, r.body);
    });
    expect(updates).toHaveLength(10);
    const of = (name: string) => updates.filter((u) => u.name === name);
    const lifecycle = [
      Call_State.QUEUED,
      Call_State.STARTING,
      Call_State.RINGING,
      Call_State.IN_PROGRESS,
      Call_State.COMPLETED,
    ];
    expect(of(created.name).map((u) => u.state)).toEqual(lifecycle);
    const childUpdates = of(child.name);
    expect(childUpdates.map((u) => u.state)).toEqual(lifecycle);
    for (const u of childUpdates) {
      expect(u.createMethod).toBe(Call_CreateMethod.PARENT_CALL);
      expect(u.originatingCall).toBe(created.name);
      expect(u.to).toBe(agent);
      expect(u.from).toBe(from);
    }
    expect(childUpdates[0]!.startTime).toBeUndefined();
    expect(childUpdates[1]!.startTime).toBeDefined();
    expect(childUpdates[2]!.ringTime).toBeDefined();
    expect(childUpdates[3]!.answerTime).toBeDefined();
    const last = childUpdates[4]!;
    expect(last.bridged).toBe(true);
    expect(secondsOf(last.answerDuration)).toBeCloseTo(3, 3);
    expect(last).toEqual(child);
  });

  it("linear: when no endpoint connects, NextUri gets the last attempt's state and error code", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    const busy = await route({ outcome: SimulatorRoute_Outcome.BUSY });
    const refusing = await route({ outcome: SimulatorRoute_Outcome.REJECT, ringSeconds: 1 });
    serve({
      "/start": xml(
        `<Call NextUri="/after"><Endpoint>${busy}</Endpoint><Endpoint>${refusing}</Endpoint></Call>`,
      ),
      "/after": xml("<Say>Nobody</Say>"),
    });
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.bridged).toBe(false);
    const [, first, second, ...rest] = (await callsOf(project)) as [Call, Call, Call];
    expect(rest).toEqual([]);
    expectChildOf(first, created.name, busy, from);
    expectChildOf(second, created.name, refusing, from);
    expect(first.state).toBe(Call_State.BUSY);
    expect(second.state).toBe(Call_State.REJECTED);
    expect(second.errorCode).toBe("REJECTED");
    expect(parametersAt("/after")).toEqual({
      action: "CALL",
      call: second.name,
      callState: "REJECTED",
      errorCode: "REJECTED",
      answerDurationSeconds: "0",
    });
  });
});
