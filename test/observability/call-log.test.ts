/**
 * Call lifecycle in the log: one line per call at info, ended (with state
 * and error; FAILED at warn); created, answered and the other states at
 * debug; each with the call's name and project.
 */
import { describe, expect, it } from "vitest";
import type { CallRow } from "../../src/db/schema/index.js";
import { observeCallStarted, observeCallState } from "../../src/observability/calls.js";
import { callHarness, xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { captureLog } from "./support.js";

const row = (patch: Partial<CallRow> = {}): CallRow =>
  ({
    id: "c1",
    projectId: "p1",
    direction: "OUTGOING",
    state: "QUEUED",
    errorCode: "",
    errorMessage: "",
    answerDurationMs: null,
    originatingCallId: null,
    ...patch,
  }) as CallRow;

describe("Call lifecycle log", () => {
  const lifecycle = (level: "info" | "debug") => {
    const { lines, logger } = captureLog(level);
    observeCallStarted(logger, row());
    observeCallState(logger, row({ state: "RINGING" }), { state: "RINGING" });
    observeCallState(logger, row({ state: "IN_PROGRESS" }), { state: "IN_PROGRESS" });
    observeCallState(logger, row({ state: "COMPLETED", answerDurationMs: 30000 }), { state: "COMPLETED" });
    return lines;
  };

  it("logs one line per call at info: ended, with the call's name, state and answered time", () => {
    const lines = lifecycle("info");
    expect(lines.map((l) => [l.level, l.msg, l.call, l.project])).toEqual([
      [30, "call ended", "projects/p1/calls/c1", "p1"],
    ]);
    expect(lines[0]).toMatchObject({ state: "COMPLETED", answerMs: 30000 });
  });

  it("logs created, every state change and answered at debug", () => {
    const lines = lifecycle("debug");
    expect(lines.map((l) => [l.level, l.msg, l.call, l.state ?? null])).toEqual([
      [20, "call created", "projects/p1/calls/c1", "QUEUED"],
      [20, "call state", "projects/p1/calls/c1", "RINGING"],
      [20, "call answered", "projects/p1/calls/c1", "IN_PROGRESS"],
      [30, "call ended", "projects/p1/calls/c1", "COMPLETED"],
    ]);
  });

  it("logs a FAILED end at warn with its error, e.g. a refused handler", () => {
    const { lines, logger } = captureLog("info");
    const failed = row({
      state: "FAILED",
      errorCode: "HANDLER_UNAVAILABLE",
      errorMessage: "No call handler answered: http://127.0.0.1/x -> destination 127.0.0.1 is a private ...",
    });
    observeCallState(logger, failed, { state: "FAILED" });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 40,
      msg: "call ended",
      call: "projects/p1/calls/c1",
      state: "FAILED",
      errorCode: "HANDLER_UNAVAILABLE",
    });
    expect(String(lines[0]!.errorMessage)).toContain("private");
  });
});

describe.each(testDatabases())("Call lifecycle log of a real call with a child leg on $name", (backend) => {
  const database = useTestDatabase(backend);
  const captured = captureLog("debug");
  const { owner, route, serve, runToEnd, createCall } = callHarness(database, { log: captured.logger });

  it("logs created, answered and ended for the parent and its <Call> child, the child naming its parent", async () => {
    const { project, from } = await owner();
    const to = await route({ ringSeconds: 1, talkSeconds: 300 });
    const agent = await route({ ringSeconds: 1, talkSeconds: 5 });
    serve({ "/start": xml(`<Call TimeoutSeconds="10"><Endpoint>${agent}</Endpoint></Call>`) });
    const created = await createCall(project, from, to);
    expect((await runToEnd(created.name)).state).toBeDefined();
    const lifecycle = new Set(["call created", "call answered", "call ended"]);
    const ofCall = (name: string) =>
      captured.lines
        .filter((l) => l.call === name && lifecycle.has(String(l.msg)))
        .map((l) => [l.msg, l.state ?? null]);
    const childCreated = captured.lines.find(
      (l) => l.msg === "call created" && l.originatingCall === created.name,
    );
    expect(childCreated).toBeDefined();
    const child = String(childCreated!.call);
    expect(ofCall(created.name)).toEqual([
      ["call created", "QUEUED"],
      ["call answered", "IN_PROGRESS"],
      ["call ended", "COMPLETED"],
    ]);
    expect(ofCall(child)).toEqual([
      ["call created", "QUEUED"],
      ["call answered", "IN_PROGRESS"],
      ["call ended", "COMPLETED"],
    ]);
  });
});
