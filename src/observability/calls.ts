/**
 * Call lifecycle in the log and the metrics: one line per call at info,
 * `call ended` with its state, error code and message and answered time
 * (warn when FAILED); `call created` when the engine starts driving a call,
 * `call answered` and the other state changes at debug. Each names the call
 * and its project.
 */
import type { CallRow } from "../db/schema/index.js";
import type { Logger } from "../log.js";
import { callsEndedTotal, callsStartedTotal } from "./metrics.js";

const TERMINAL = new Set(["COMPLETED", "FAILED", "NOT_ANSWERED", "BUSY", "REJECTED"]);

function base(row: CallRow) {
  return {
    call: `projects/${row.projectId}/calls/${row.id}`,
    project: row.projectId,
    direction: row.direction,
    ...(row.originatingCallId
      ? { originatingCall: `projects/${row.projectId}/calls/${row.originatingCallId}` }
      : {}),
  };
}

export function observeCallStarted(log: Logger, row: CallRow): void {
  callsStartedTotal.inc({ direction: row.direction });
  if (log.isLevelEnabled("debug")) log.debug({ ...base(row), state: row.state }, "call created");
}

/** After `row` took `patch` (a state change when `patch.state` is set). */
export function observeCallState(log: Logger, row: CallRow, patch: { state?: string }): void {
  const state = patch.state;
  if (state === undefined) return;
  if (TERMINAL.has(state)) {
    callsEndedTotal.inc({ state, direction: row.direction });
    const fields = {
      ...base(row),
      state,
      ...(row.errorCode ? { errorCode: row.errorCode, errorMessage: row.errorMessage } : {}),
      ...(row.answerDurationMs !== null ? { answerMs: row.answerDurationMs } : {}),
    };
    if (state === "FAILED") log.warn(fields, "call ended");
    else log.info(fields, "call ended");
  } else if (log.isLevelEnabled("debug")) {
    log.debug({ ...base(row), state }, state === "IN_PROGRESS" ? "call answered" : "call state");
  }
}
