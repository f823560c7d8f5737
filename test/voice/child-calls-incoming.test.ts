/**
 * Child calls of incoming calls end to end: forwarding (`tel:` handler URIs)
 * with fall-through, and how markup answers or refuses the ringing caller.
 * The real app (build()) listening on 127.0.0.1, the carrier simulator on a
 * ManualScheduler, real HTTP receivers as the customer's call handlers; the
 * operator injects calls through SimulatorAdmin (Connect JSON).
 */
import { fromJsonString } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CallRequestSchema } from "../../gen/enfonica/voice/v1beta1/call_request_pb.js";
import {
  type Call,
  Call_CreateMethod,
  Call_Direction,
  Call_State,
  Call_Transport,
  Calls,
} from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { SimulatorAdmin, SimulatorRoute_Outcome } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { type App, build } from "../../src/server.js";
import { addBlock, blockAllocator, numberingClients } from "../numbering/support.js";
import { bearer, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { ManualScheduler } from "../support/scheduler.js";

const T0 = "2026-03-01T00:00:00.000Z";
/** The caller: no route matches it, so once answered it talks the default 30 s. */
const CALLER = "+61491570156";
const TERMINAL = new Set([
  Call_State.COMPLETED,
  Call_State.FAILED,
  Call_State.NOT_ANSWERED,
  Call_State.BUSY,
  Call_State.REJECTED,
]);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?><Response>${body}</Response>`;
const secondsOf = (d: { seconds: bigint; nanos: number } | undefined): number =>
  d === undefined ? Number.NaN : Number(d.seconds) + d.nanos / 1e9;
const between = (
  a: { seconds: bigint; nanos: number } | undefined,
  b: { seconds: bigint; nanos: number } | undefined,
): number => secondsOf(b) - secondsOf(a);

describe.each(testDatabases())("child calls of incoming calls on $name", (backend) => {
  const database = useTestDatabase(backend);
  const scheduler = new ManualScheduler(new TestClock(T0));
  const nextBlock = blockAllocator();
  let app: App;
  let callsClient: Client<typeof Calls>;
  let simulator: Client<typeof SimulatorAdmin>;
  let handler: Receiver;
  let destination = 0;

  beforeAll(async () => {
    app = await build({
      db: database.db,
      clock: scheduler.clock,
      scheduler,
      config: testConfig({
        WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
        WEBHOOKS_TIMEOUT_MS: "2000",
        WEBHOOKS_POLL_INTERVAL_MS: "20",
      }),
    });
    const address = await app.listen(0, "127.0.0.1");
    const transport = createConnectTransport({
      baseUrl: `http://127.0.0.1:${address.port}`,
      httpVersion: "1.1",
      interceptors: [bearer(TEST_OPERATOR_TOKEN)],
    });
    callsClient = createClient(Calls, transport);
    simulator = createClient(SimulatorAdmin, transport);
    handler = await startReceiver();
  });
  afterAll(async () => {
    await app?.close();
    await handler?.close();
  });
  afterEach(() => {
    handler.requests.length = 0;
    handler.handle((_req, res) => res.end("ok"));
  });

  function serve(documents: Record<string, string | number>): void {
    handler.handle((req, res) => {
      const doc = documents[req.path.split("?")[0]!];
      if (doc === undefined) {
        res.statusCode = 404;
        res.end("no");
      } else if (typeof doc === "number") {
        res.statusCode = doc;
        res.end("error");
      } else {
        res.setHeader("content-type", "application/xml");
        res.end(doc);
      }
    });
  }

  /** A destination of its own with a simulator route. */
  async function route(init: {
    outcome?: SimulatorRoute_Outcome;
    ringSeconds?: number;
    talkSeconds?: number;
  }): Promise<string> {
    destination++;
    const to = `+614915703${String(destination).padStart(2, "0")}`;
    await simulator.createRoute({ route: { prefix: to, ...init } });
    return to;
  }

  /** A project with an ACTIVE single-number instance handled by `uris`. */
  async function single(uris: string[]): Promise<{ project: string; number: string }> {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, scheduler.clock);
    const number = await addBlock(c, nextBlock(), 10);
    await c.instances.createPhoneNumberInstance({
      parent: project,
      phoneNumberInstance: { phoneNumber: { phoneNumber: number }, incomingCallHandlerUris: uris },
    });
    return { project, number };
  }

  async function runToEnd(name: string, maxSeconds = 600): Promise<Call> {
    for (let t = 0; t < maxSeconds * 10; t++) {
      const call = await callsClient.getCall({ name });
      if (TERMINAL.has(call.state) && app.engine.activeCount === 0) return call;
      await scheduler.advance(0.1);
      await sleep(1);
    }
    throw new Error(`call ${name} did not end within ${maxSeconds} s of call time`);
  }

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
    const res = await simulator.injectIncomingCall({ to: number, from: CALLER });
    const ended = await runToEnd(res.call);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.errorCode).toBe("");
    expect(ended.bridged).toBe(false);
    expect(ended.answerTime).toBeDefined();
    // Five words: 2 s of speech, then the document ends.
    expect(secondsOf(ended.answerDuration)).toBeCloseTo(2, 3);

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
    // Both prompts were spoken to the answered caller: 2 s + 0.5 s at least (the redirect took call time too).
    expect(secondsOf(ended.answerDuration)).toBeGreaterThanOrEqual(2.5);

    // Without the redirect the call lasts exactly the speech: answered first, then 2 s of it.
    serve({ "/say": xml("<Say>one two three four five</Say>") });
    const exact = await runToEnd((await simulator.injectIncomingCall({ to: number, from: CALLER })).call);
    expect(exact.state).toBe(Call_State.COMPLETED);
    expect(secondsOf(exact.answerDuration)).toBeCloseTo(2, 3);
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
