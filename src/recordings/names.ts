/** Recording resource names: `projects/{p}/calls/{c}/recordings/{r}` and the List parents. */
import {
  type CallChildRef,
  callChildName,
  parseCallChildName,
  parseCallChildrenParent,
} from "../api/names.js";

export type RecordingRef = CallChildRef;

export function recordingName(ref: RecordingRef): string {
  return callChildName("recordings", ref);
}

/** The parts of `projects/{p}/calls/{c}/recordings/{r}`; INVALID_ARGUMENT naming `field` otherwise. */
export function parseRecordingName(name: string, field = "name"): RecordingRef {
  return parseCallChildName(name, "recordings", "recording", field);
}

/** `projects/{p}` or `projects/{p}/calls/{c}`; INVALID_ARGUMENT naming `parent` otherwise. */
export const parseRecordingsParent = parseCallChildrenParent;
