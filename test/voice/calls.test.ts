/**
 * Outgoing calls end to end: the real app (build()) listening on 127.0.0.1,
 * the carrier simulator on a ManualScheduler, real HTTP receivers as the
 * customer's call handlers and state-update endpoint, signatures checked
 * with node:crypto here. Clients: connect-node (Connect JSON over HTTP/1.1,
 * gRPC over HTTP/2) and plain fetch for REST.
 */
import { create, fromJsonString } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { CallRequestSchema } from "../../gen/enfonica/voice/v1beta1/call_request_pb.js";
import {
  type Call,
  Call_CreateMethod,
  Call_Direction,
  Call_State,
  Call_Transport,
  CallSchema,
  Calls,
} from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { SimulatorRoute_Outcome } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { createLogger } from "../../src/log.js";
import { numberingDomains } from "../../src/numbering/domains.js";
import { createRecordings } from "../../src/recordings/index.js";
import type { Carrier } from "../../src/telephony/carrier.js";
import { SimulatorCarrier } from "../../src/telephony/simulator/carrier.js";
import { simulatorRoutes } from "../../src/telephony/simulator/index.js";
import { CallsDomain } from "../../src/voice/calls/domain.js";
import { CallEngine } from "../../src/voice/calls/engine.js";
import { addBlock, numberingClients, plus } from "../numbering/support.js";
import { expectCode, expectInvalid, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { callHarness, expectSigned, keyOf, sleep, xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

describe.each(testDatabases())("outgoing calls on $name", (backend) => {
  const database = useTestDatabase(backend);
  const harness = callHarness(database, {
    env: { CALL_RATES: "+61=0.05,+1=0.02", CALL_RATES_CURRENCY: "AUD" },
  });
  const {
    scheduler,
    nextBlock,
    connect,
    handler,
    states,
    owner,
    route,
    serve,
    runToEnd,
    stateUpdates,
    createCall,
  } = harness;
  const grpc = harness.client(Calls, "grpc");

  it("says, gathers digits, redirects and completes; every state update in order, signed", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 3, talkSeconds: 300, digits: "42#" });
    serve({
      "/start": xml(
        `<Say>Hello there</Say><Input NextUri="digits?step=1" TimeoutSeconds="5"><Say>Press two keys</Say></Input>`,
      ),
      "/digits": xml("<Redirect>/next</Redirect>"),
      "/next": xml("<Say>Goodbye now</Say>"),
    });
    const taken0 = { ...harness.app.webhooks!.taken };
    const created = await createCall(project, from, to);
    expect(created.state).toBe(Call_State.QUEUED);
    expect(created.direction).toBe(Call_Direction.OUTGOING);
    expect(created.transport).toBe(Call_Transport.PSTN);
    expect(created.createMethod).toBe(Call_CreateMethod.API);
    expect(created.options?.timeoutSeconds).toBe(30);
    expect(created.name).toMatch(new RegExp(`^${project}/calls/[a-z0-9]{16}$`));

    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.errorCode).toBe("");
    expect(ended.startTime).toBeDefined();
    expect(ended.ringTime).toBeDefined();
    expect(ended.answerTime).toBeDefined();
    expect(ended.endTime).toBeDefined();
    expect(ended.answerDuration).toBeDefined();
    expect(ended.price?.currencyCode).toBe("AUD");
    // Under a minute answered: one started minute at 0.05.
    expect(ended.price?.units).toBe(0n);
    expect(ended.price?.nanos).toBe(50_000_000);

    const key = await keyOf(database.db, project);
    // Call-control requests: start, digits (with the digits), next.
    expect(handler.requests.map((r) => r.path)).toEqual(["/start", "/digits?step=1", "/next"]);
    expectSigned(handler.requests[0]!, key, `${handler.base}/start`, "CALL");
    expectSigned(handler.requests[1]!, key, `${handler.base}/digits?step=1`, "CALL");
    const first = fromJsonString(CallRequestSchema, handler.requests[0]!.body);
    expect(first.call?.name).toBe(created.name);
    expect(first.call?.state).toBe(Call_State.IN_PROGRESS);
    const digits = fromJsonString(CallRequestSchema, handler.requests[1]!.body);
    expect(digits.parameters).toEqual({ digits: "42" });

    const updates = await stateUpdates(5, key, `${states.base}/state`);
    expect(updates.map((u) => Call_State[u.state])).toEqual([
      "QUEUED",
      "STARTING",
      "RINGING",
      "IN_PROGRESS",
      "COMPLETED",
    ]);
    expect(updates.every((u) => u.name === created.name)).toBe(true);
    expect(updates[4]!.price?.currencyCode).toBe("AUD");
    // The worker took each state update once, every one leased to it by its enqueue (CreateCall's
    // insert, then each transition's) and delivered from memory: no claim, no hand-over.
    const taken = harness.app.webhooks!.taken;
    expect(
      Object.fromEntries(
        Object.entries(taken).map(([how, n]) => [how, n - taken0[how as keyof typeof taken]]),
      ),
    ).toEqual({
      claim: 0,
      hand_over: 0,
      enqueue: 5,
      reclaim: 0,
    });
  });

  it.each([
    ["BUSY", SimulatorRoute_Outcome.BUSY, Call_State.BUSY, "BUSY", false],
    ["REJECT", SimulatorRoute_Outcome.REJECT, Call_State.REJECTED, "REJECTED", true],
    ["NO_ANSWER", SimulatorRoute_Outcome.NO_ANSWER, Call_State.NOT_ANSWERED, "NO_ANSWER", true],
    ["FAIL", SimulatorRoute_Outcome.FAIL, Call_State.FAILED, "CARRIER_ERROR", false],
  ])("a %s route ends the call with its state and error code", async (_n, outcome, state, code, rings) => {
    const { project, from } = await owner();
    const to = await route({ outcome, ringSeconds: 2 });
    const created = await createCall(project, from, to, "/start", { timeoutSeconds: 10 });
    const ended = await runToEnd(created.name);
    expect(Call_State[ended.state]).toBe(Call_State[state]);
    expect(ended.errorCode).toBe(code);
    expect(ended.errorMessage).not.toBe("");
    expect(ended.answerTime).toBeUndefined();
    expect(ended.answerDuration).toBeUndefined();
    expect(ended.price?.units).toBe(0n);
    expect(ended.price?.nanos).toBe(0);
    expect(handler.requests).toHaveLength(0);
    const updates = await stateUpdates(
      rings ? 4 : 3,
      await keyOf(database.db, project),
      `${states.base}/state`,
    );
    expect(updates.map((u) => Call_State[u.state])).toEqual([
      "QUEUED",
      "STARTING",
      ...(rings ? ["RINGING"] : []),
      Call_State[state],
    ]);
    if (outcome === SimulatorRoute_Outcome.NO_ANSWER) {
      const elapsed = (ended.endTime!.seconds - ended.startTime!.seconds) as bigint;
      expect(Number(elapsed)).toBeGreaterThanOrEqual(9);
    }
  });

  it("falls through to the second handler when the first answers 500", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    serve({ "/broken": 500, "/good": xml("<Say>Hi</Say>") });
    const created = await connect.createCall({
      parent: project,
      call: {
        to,
        from,
        options: { handlerUris: [`${handler.base}/broken`, `${handler.base}/good`] },
      },
    });
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(handler.requests.map((r) => r.path)).toEqual(["/broken", "/good"]);
  });

  it.each([
    ["markup that is not XML", { "/start": "<Response><Say>oops" }, "MARKUP_NOT_XML"],
    ["an unknown action", { "/start": xml("<Dance/>") }, "MARKUP_UNKNOWN_ACTION"],
    ["an unsupported action", { "/start": xml("<Label/>") }, "UNSUPPORTED_ACTION"],
    ["every handler failing", { "/start": 503 }, "HANDLER_UNAVAILABLE"],
  ])("%s ends the call FAILED", async (_n, documents, code) => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    serve(documents as Record<string, string | number>);
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.FAILED);
    expect(ended.errorCode).toBe(code);
    expect(ended.errorMessage).not.toBe("");
    expect(ended.answerTime).toBeDefined();
  });

  it("a remote hang-up during the markup ends the call COMPLETED", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 5 });
    serve({ "/start": xml('<Wait Seconds="60"/><Say>never heard</Say>') });
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
    expect(ended.errorCode).toBe("");
    const answered = Number(ended.answerDuration!.seconds);
    expect(answered).toBeGreaterThanOrEqual(4);
    expect(answered).toBeLessThanOrEqual(6);
    expect(handler.requests).toHaveLength(1);
  });

  it("Reject in the markup hangs up and ends the call", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    serve({ "/start": xml("<Reject/><Say>not reached</Say>") });
    const created = await createCall(project, from, to);
    const ended = await runToEnd(created.name);
    expect(ended.state).toBe(Call_State.COMPLETED);
  });

  describe("CreateCall validation", () => {
    it.each<[string, (c: { to: string; from: string; handlerUris: string[] }) => object, string[]]>([
      ["to missing", (c) => ({ from: c.from, options: { handlerUris: c.handlerUris } }), ["call.to"]],
      [
        "to not E.164",
        (c) => ({ to: "0491570156", from: c.from, options: { handlerUris: c.handlerUris } }),
        ["call.to"],
      ],
      ["from missing", (c) => ({ to: c.to, options: { handlerUris: c.handlerUris } }), ["call.from"]],
      [
        "from not owned",
        (c) => ({ to: c.to, from: "+61491570999", options: { handlerUris: c.handlerUris } }),
        ["call.from"],
      ],
      ["options missing", (c) => ({ to: c.to, from: c.from }), ["call.options"]],
      [
        "no handler URI",
        (c) => ({ to: c.to, from: c.from, options: { handlerUris: [] } }),
        ["call.options.handler_uris"],
      ],
      [
        "a handler URI that is not http(s)",
        (c) => ({
          to: c.to,
          from: c.from,
          options: { handlerUris: ["https://example.com/a", "ftp://example.com/b"] },
        }),
        ["call.options.handler_uris[1]"],
      ],
      [
        "six handler URIs",
        (c) => ({ to: c.to, from: c.from, options: { handlerUris: Array(6).fill("https://example.com/") } }),
        ["call.options.handler_uris"],
      ],
      [
        "timeout 601",
        (c) => ({ to: c.to, from: c.from, options: { handlerUris: c.handlerUris, timeoutSeconds: 601 } }),
        ["call.options.timeout_seconds"],
      ],
      [
        "state update URI not http(s)",
        (c) => ({
          to: c.to,
          from: c.from,
          options: { handlerUris: c.handlerUris, stateUpdateUri: "mailto:a@b.c" },
        }),
        ["call.options.state_update_uri"],
      ],
      [
        "labels over 10 kB",
        (c) => ({
          to: c.to,
          from: c.from,
          labels: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, "x".repeat(1000)])),
          options: { handlerUris: c.handlerUris },
        }),
        ["call.labels"],
      ],
    ])("%s", async (_n, make, fields) => {
      const { project, from } = await owner();
      const call = make({ to: "+61491570156", from, handlerUris: ["https://example.com/h"] });
      await expectInvalid(connect.createCall({ parent: project, call }), fields);
    });

    it("from: a number of another project or of a SUSPENDED instance is refused; a number in a range is the range's", async () => {
      const a = await owner();
      const b = await owner();
      const call = (from: string) => ({
        to: "+61491570156",
        from,
        options: { handlerUris: ["https://example.com/h"] },
      });
      await expectInvalid(connect.createCall({ parent: b.project, call: call(a.from) }), ["call.from"]);

      const c = numberingClients(database.db, scheduler.clock);
      const start = await addBlock(c, nextBlock(), 20);
      await c.admin.provisionPhoneNumberRange({ parent: b.project, startPhoneNumber: start, size: 20 });
      const inRange = plus(start, 7);
      const created = await connect.createCall({ parent: b.project, call: call(inRange) });
      expect(created.from).toBe(inRange);
      await expectInvalid(connect.createCall({ parent: a.project, call: call(inRange) }), ["call.from"]);

      const instances = await c.instances.listPhoneNumberInstances({ parent: a.project });
      await c.admin.suspendPhoneNumberInstance({ name: instances.phoneNumberInstances[0]!.name });
      await expectInvalid(connect.createCall({ parent: a.project, call: call(a.from) }), ["call.from"]);
      await runToEnd(created.name);
    });
  });

  describe("engine failures never escape", () => {
    const silent = createLogger("silent");
    function engineWith(carrier: Carrier): { engine: CallEngine; domain: CallsDomain } {
      const config = testConfig();
      const engine = new CallEngine({
        db: database.db,
        carrier,
        scheduler,
        log: silent,
        rates: config.callRates,
        delivery: { timeoutMs: 1000, allowPrivateDestinations: true },
        recordings: createRecordings({ config, clock: scheduler.clock, log: silent, db: database.db }),
      });
      const { instances } = numberingDomains(database.db, scheduler.clock, { numberQuarantineSeconds: 0 });
      return { engine, domain: new CallsDomain(database.db, scheduler.clock, instances, engine) };
    }
    const input = (from: string) => ({
      to: "+61491570156",
      from,
      labels: {},
      options: { handlerUris: [`${handler.base}/start`], stateUpdateUri: "", timeoutSeconds: 0 },
    });

    it("a carrier that throws ends the call FAILED INTERNAL_ERROR", async () => {
      const { project, from } = await owner();
      const { engine, domain } = engineWith({
        placeCall: async () => {
          throw new Error("network down");
        },
        receiveCall: async () => {
          throw new Error("network down");
        },
      });
      const row = await domain.create(project.split("/")[1]!, input(from));
      for (let i = 0; i < 200 && engine.activeCount > 0; i++) await sleep(5);
      const ended = await connect.getCall({ name: `${project}/calls/${row.id}` });
      expect(ended.state).toBe(Call_State.FAILED);
      expect(ended.errorCode).toBe("INTERNAL_ERROR");
      expect(ended.startTime).toBeDefined();
      expect(ended.endTime).toBeDefined();
    });

    it("stop() hangs up calls in flight: FAILED SERVICE_SHUTDOWN", async () => {
      const { project, from } = await owner();
      const to = await route({ ringSeconds: 1, talkSeconds: 300 });
      serve({ "/start": xml('<Wait Seconds="120"/>') });
      const carrier = new SimulatorCarrier(simulatorRoutes(database.db, scheduler.clock), scheduler);
      const { engine, domain } = engineWith(carrier);
      const row = await domain.create(project.split("/")[1]!, { ...input(from), to });
      const name = `${project}/calls/${row.id}`;
      for (let i = 0; i < 200 && (await connect.getCall({ name })).state !== Call_State.IN_PROGRESS; i++) {
        await scheduler.advance(0.5);
        await sleep(2);
      }
      await sleep(50);
      await engine.stop();
      const ended = await connect.getCall({ name });
      expect(ended.state).toBe(Call_State.FAILED);
      expect(ended.errorCode).toBe("SERVICE_SHUTDOWN");
      expect(ended.answerDuration).toBeDefined();
      expect(engine.activeCount).toBe(0);
    });
  });

  it("GetCall of an unknown call is NOT_FOUND", async () => {
    const { project } = await owner();
    await expectCode(connect.getCall({ name: `${project}/calls/nope` }), Code.NotFound);
  });

  it("ListCalls: newest first, filters, pagination bound to the filter", async () => {
    const { project, from } = await owner();
    const busy = await route({ outcome: SimulatorRoute_Outcome.BUSY });
    const answer = await route({ ringSeconds: 1, talkSeconds: 300 });
    serve({ "/start": xml("<Say>Hi</Say>") });
    const made: Call[] = [];
    for (let i = 0; i < 5; i++) {
      const c = await createCall(project, from, i % 2 === 0 ? answer : busy);
      made.push(await runToEnd(c.name));
      await scheduler.advance(1);
    }
    const names = made.map((c) => c.name).reverse();
    const all = await connect.listCalls({ parent: project });
    expect(all.calls.map((c) => c.name)).toEqual(names);

    const completed = await connect.listCalls({ parent: project, filter: "state = COMPLETED" });
    expect(completed.calls.map((c) => c.name)).toEqual(names.filter((_, i) => i % 2 === 0));
    const toBusy = await connect.listCalls({
      parent: project,
      filter: `to = "${busy}" AND direction = OUTGOING`,
    });
    expect(toBusy.calls).toHaveLength(2);
    const either = await connect.listCalls({
      parent: project,
      filter: `(state = BUSY OR state = COMPLETED) AND transport = PSTN AND from = "${from}"`,
    });
    expect(either.calls).toHaveLength(5);
    const cut = made[2]!.createTime!;
    const cutIso = new Date(Number(cut.seconds) * 1000 + cut.nanos / 1e6).toISOString();
    const after = await connect.listCalls({ parent: project, filter: `create_time > "${cutIso}"` });
    expect(after.calls.map((c) => c.name)).toEqual(names.slice(0, 2));
    const before = await connect.listCalls({ parent: project, filter: `create_time < "${cutIso}"` });
    expect(before.calls).toHaveLength(2);

    // Pagination, newest first, and the token bound to its filter.
    const p1 = await connect.listCalls({ parent: project, pageSize: 2, filter: "direction = OUTGOING" });
    expect(p1.calls.map((c) => c.name)).toEqual(names.slice(0, 2));
    const p2 = await connect.listCalls({
      parent: project,
      pageSize: 2,
      pageToken: p1.nextPageToken,
      filter: "direction = OUTGOING",
    });
    expect(p2.calls.map((c) => c.name)).toEqual(names.slice(2, 4));
    const p3 = await connect.listCalls({
      parent: project,
      pageSize: 2,
      pageToken: p2.nextPageToken,
      filter: "direction = OUTGOING",
    });
    expect(p3.calls.map((c) => c.name)).toEqual(names.slice(4));
    expect(p3.nextPageToken).toBe("");
    await expectInvalid(
      connect.listCalls({
        parent: project,
        pageSize: 2,
        pageToken: p1.nextPageToken,
        filter: "state = BUSY",
      }),
      ["page_token"],
    );

    for (const bad of [
      "state = NOPE",
      "colour = red",
      "state =",
      'to < "+61"',
      "create_time > yesterday",
      "(state = BUSY",
    ]) {
      await expectInvalid(connect.listCalls({ parent: project, filter: bad }), ["filter"]);
    }
  });

  it("REST and gRPC: create, get and list", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    serve({ "/start": xml("<Say>Hi</Say>") });
    const auth = { authorization: `Bearer ${TEST_OPERATOR_TOKEN}`, "content-type": "application/json" };
    const res = await fetch(`${harness.base}/v1beta1/${project}/calls`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({
        to,
        from,
        options: { handlerUris: [`${handler.base}/start`], timeoutSeconds: 20 },
      }),
    });
    expect(res.status).toBe(200);
    const created = (await res.json()) as { name: string; state: string; direction: string; options: object };
    expect(created.state).toBe("QUEUED");
    expect(created.direction).toBe("OUTGOING");
    expect(created.options).toMatchObject({ timeoutSeconds: 20 });

    const bad = await fetch(`${harness.base}/v1beta1/${project}/calls`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ to: "nope", from, options: { handlerUris: [`${handler.base}/start`] } }),
    });
    expect(bad.status).toBe(400);

    await runToEnd(created.name);
    const got = await fetch(`${harness.base}/v1beta1/${created.name}`, { headers: auth });
    expect(((await got.json()) as { state: string }).state).toBe("COMPLETED");
    const listed = await fetch(
      `${harness.base}/v1beta1/${project}/calls?filter=${encodeURIComponent("state = COMPLETED")}`,
      {
        headers: auth,
      },
    );
    expect(((await listed.json()) as { calls: { name: string }[] }).calls.map((c) => c.name)).toEqual([
      created.name,
    ]);

    const viaGrpc = await grpc.createCall({
      parent: project,
      call: create(CallSchema, { to, from, options: { handlerUris: [`${handler.base}/start`] } }),
    });
    expect(viaGrpc.state).toBe(Call_State.QUEUED);
    await runToEnd(viaGrpc.name);
    expect((await grpc.getCall({ name: viaGrpc.name })).state).toBe(Call_State.COMPLETED);
    const list = await grpc.listCalls({ parent: project });
    expect(list.calls.map((c) => c.name)).toEqual([viaGrpc.name, created.name]);
    await expectInvalid(grpc.listCalls({ parent: project, filter: "state = " }), ["filter"]);
  });
});
