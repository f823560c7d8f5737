/**
 * Call lifecycle in the log: created, answered and ended (with state and
 * error; FAILED at warn), each with the call's name and project.
 */
import { describe, expect, it } from "vitest";
import type { CallRow } from "../../src/db/schema/index.js";
import { observeCallStarted, observeCallState } from "../../src/observability/calls.js";
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
  it("logs created, answered and ended with the call's name", () => {
    const { lines, logger } = captureLog("info");
    observeCallStarted(logger, row());
    observeCallState(logger, row({ state: "RINGING" }), { state: "RINGING" });
    observeCallState(logger, row({ state: "IN_PROGRESS" }), { state: "IN_PROGRESS" });
    observeCallState(logger, row({ state: "COMPLETED", answerDurationMs: 30000 }), { state: "COMPLETED" });
    expect(lines.map((l) => [l.level, l.msg, l.call, l.project])).toEqual([
      [30, "call created", "projects/p1/calls/c1", "p1"],
      [30, "call answered", "projects/p1/calls/c1", "p1"],
      [30, "call ended", "projects/p1/calls/c1", "p1"],
    ]);
    expect(lines[2]).toMatchObject({ state: "COMPLETED", answerMs: 30000 });
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
