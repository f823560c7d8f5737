/** Recording resource names: `projects/{p}/calls/{c}/recordings/{r}` and the List parents. */
import { badField } from "../api/errors.js";

export interface RecordingRef {
  projectId: string;
  callId: string;
  id: string;
}

export function recordingName(ref: RecordingRef): string {
  return `projects/${ref.projectId}/calls/${ref.callId}/recordings/${ref.id}`;
}

const SEGMENT = /^[^/]+$/;

/** The parts of `projects/{p}/calls/{c}/recordings/{r}`; INVALID_ARGUMENT naming `field` otherwise. */
export function parseRecordingName(name: string, field = "name"): RecordingRef {
  const parts = name.split("/");
  if (
    parts.length !== 6 ||
    parts[0] !== "projects" ||
    parts[2] !== "calls" ||
    parts[4] !== "recordings" ||
    ![parts[1], parts[3], parts[5]].every((p) => SEGMENT.test(p ?? ""))
  ) {
    throw badField(
      field,
      "must be a resource name of the form projects/{project}/calls/{call}/recordings/{recording}",
      "name.format",
    );
  }
  return { projectId: parts[1]!, callId: parts[3]!, id: parts[5]! };
}

/** `projects/{p}` or `projects/{p}/calls/{c}`; INVALID_ARGUMENT naming `parent` otherwise. */
export function parseRecordingsParent(parent: string): { projectId: string; callId: string | undefined } {
  const parts = parent.split("/");
  const ok =
    parts[0] === "projects" &&
    SEGMENT.test(parts[1] ?? "") &&
    (parts.length === 2 || (parts.length === 4 && parts[2] === "calls" && SEGMENT.test(parts[3] ?? "")));
  if (!ok) {
    throw badField(
      "parent",
      "must be a project, projects/{project}, or a call, projects/{project}/calls/{call}",
      "name.format",
    );
  }
  return { projectId: parts[1]!, callId: parts[3] };
}
