/** Call states: their names and which are final. */
import { Call_State as State } from "../../../gen/enfonica/voice/v1beta1/calls_pb.js";

export const STATES = [
  State.QUEUED,
  State.STARTING,
  State.RINGING,
  State.IN_PROGRESS,
  State.COMPLETED,
  State.FAILED,
  State.NOT_ANSWERED,
  State.BUSY,
  State.REJECTED,
];

const FINAL = new Set([State.COMPLETED, State.FAILED, State.NOT_ANSWERED, State.BUSY, State.REJECTED]);

export function isFinal(state: State): boolean {
  return FINAL.has(state);
}

/** How often live views poll (the API has no watch streams). */
export const POLL_MS = 1000;
