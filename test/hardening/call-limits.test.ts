/**
 * The cap on a project's calls in flight (CALL_CONCURRENCY_LIMIT, here 2)
 * and idempotent CreateCall, on both databases: the third call is
 * RESOURCE_EXHAUSTED CONCURRENT_CALL_LIMIT until one ends; concurrent
 * creates admit exactly the limit (PostgreSQL: real concurrent
 * transactions); a keyed retry replays without starting a second call, also
 * when the project is at its cap.
 */
import { Code } from "@connectrpc/connect";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { Calls } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { calls } from "../../src/db/schema/index.js";
import { errorReason, expectCode } from "../support/app.js";
import { callHarness, sleep } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

describe.each(testDatabases())("calls in flight on $name", (backend) => {
  const database = useTestDatabase(backend);
  const harness = callHarness(database, { env: { CALL_CONCURRENCY_LIMIT: "2" }, drain: true });

  const callsOf = async (project: string) =>
    database.db
      .select()
      .from(calls)
      .where(eq(calls.projectId, project.split("/")[1]!));

  it("refuses a third call while two are in flight, and admits one again once a call ended", async () => {
    const { project, from } = await harness.owner();
    const to = await harness.route({ ringSeconds: 60 });
    const first = await harness.createCall(project, from, to);
    await harness.createCall(project, from, to);
    const e = await expectCode(harness.createCall(project, from, to), Code.ResourceExhausted);
    expect(errorReason(e)).toBe("CONCURRENT_CALL_LIMIT");
    expect(e.findDetails(ErrorInfoSchema)[0]?.metadata).toMatchObject({ limit: "2", project });
    expect(await callsOf(project)).toHaveLength(2);
    await harness.runToEnd(first.name);
    await harness.createCall(project, from, to);
    expect(await callsOf(project)).toHaveLength(3);
  });

  it("admits exactly the limit among concurrent creates", async () => {
    const { project, from } = await harness.owner();
    const to = await harness.route({ ringSeconds: 60 });
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, () => harness.createCall(project, from, to)),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(2);
    for (const r of results) {
      if (r.status === "rejected") expect(errorReason(r.reason)).toBe("CONCURRENT_CALL_LIMIT");
    }
    expect(await callsOf(project)).toHaveLength(2);
    // The refused creates' state updates were to be leased to the worker: each lease was given
    // back, and the admitted calls' updates delivered, so the worker holds nothing once idle.
    const worker = harness.app.webhooks!;
    for (let i = 0; i < 500 && worker.held > 0; i++) await sleep(10);
    expect(worker.held).toBe(0);
    expect(worker.taken.enqueue).toBeGreaterThan(0);
  });

  it("replays a keyed CreateCall without a second call, also at the cap", async () => {
    const { project, from } = await harness.owner();
    const to = await harness.route({ ringSeconds: 60 });
    const request = {
      parent: project,
      call: { to, from, options: { handlerUris: [`${harness.handler.base}/start`] } },
    };
    const headers = { "idempotency-key": "call-key-1" };
    const first = await harness.connect.createCall(request, { headers });
    await harness.createCall(project, from, to); // the project is at its cap now
    const again = await harness.connect.createCall(request, { headers });
    expect(again).toEqual(first);
    const grpc = harness.client(Calls, "grpc");
    expect((await grpc.createCall(request, { headers })).name).toBe(first.name);
    expect(await callsOf(project)).toHaveLength(2);
    expect(harness.app.engine.activeCount).toBe(2);
  });
});
