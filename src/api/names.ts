/**
 * Resource names (AIP-122): `projects/{project}` parents,
 * `projects/{project}/{collection}/{id}` resources, and a call's children
 * `projects/{project}/calls/{call}/{collection}/{id}` (recordings,
 * transcriptions), listed under a project or one call, and a SIP domain's
 * children `projects/{project}/sipDomains/{sip_domain}/{collection}/{id}`
 * (users). Projects are not
 * checked for existence yet: any `projects/{id}` is accepted.
 */
import { badField } from "./errors.js";

export interface ResourceRef {
  projectId: string;
  id: string;
}

const SEGMENT = /^[^/]+$/;

/** The project id of a `projects/{project}` parent; INVALID_ARGUMENT naming `field` otherwise. */
export function parseParent(parent: string, field = "parent"): string {
  const parts = parent.split("/");
  if (parts.length !== 2 || parts[0] !== "projects" || !SEGMENT.test(parts[1]!)) {
    throw badField(field, "must be a project name of the form projects/{project}", "name.format");
  }
  return parts[1]!;
}

/**
 * The parts of `projects/{project}/{collection}/{id}`; INVALID_ARGUMENT
 * naming `field` when the name has another shape.
 */
export function parseResourceName(name: string, collection: string, field: string): ResourceRef {
  const parts = name.split("/");
  if (
    parts.length !== 4 ||
    parts[0] !== "projects" ||
    parts[2] !== collection ||
    !SEGMENT.test(parts[1]!) ||
    !SEGMENT.test(parts[3]!)
  ) {
    throw badField(
      field,
      `must be a resource name of the form projects/{project}/${collection}/{id}`,
      "name.format",
    );
  }
  return { projectId: parts[1]!, id: parts[3]! };
}

export function projectName(projectId: string): string {
  return `projects/${projectId}`;
}

export function resourceName(collection: string, ref: ResourceRef): string {
  return `projects/${ref.projectId}/${collection}/${ref.id}`;
}

/** A resource under a call: `projects/{projectId}/calls/{callId}/{collection}/{id}`. */
export interface CallChildRef {
  projectId: string;
  callId: string;
  id: string;
}

export function callChildName(collection: string, ref: CallChildRef): string {
  return `projects/${ref.projectId}/calls/${ref.callId}/${collection}/${ref.id}`;
}

/**
 * The parts of `projects/{project}/calls/{call}/{collection}/{id}`;
 * INVALID_ARGUMENT naming `field` otherwise (the id called `{idLabel}`).
 */
export function parseCallChildName(
  name: string,
  collection: string,
  idLabel: string,
  field = "name",
): CallChildRef {
  const parts = name.split("/");
  if (
    parts.length !== 6 ||
    parts[0] !== "projects" ||
    parts[2] !== "calls" ||
    parts[4] !== collection ||
    ![parts[1], parts[3], parts[5]].every((p) => SEGMENT.test(p ?? ""))
  ) {
    throw badField(
      field,
      `must be a resource name of the form projects/{project}/calls/{call}/${collection}/{${idLabel}}`,
      "name.format",
    );
  }
  return { projectId: parts[1]!, callId: parts[3]!, id: parts[5]! };
}

/** The parent of a List of a call's children: `projects/{p}` or `projects/{p}/calls/{c}`; INVALID_ARGUMENT naming `parent` otherwise. */
export function parseCallChildrenParent(parent: string): { projectId: string; callId: string | undefined } {
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

/** The name `parseCallChildrenParent` reads: the project's, or its call's. */
export function callChildrenParentName(projectId: string, callId: string | undefined): string {
  return callId === undefined ? projectName(projectId) : `${projectName(projectId)}/calls/${callId}`;
}

/** A SIP domain: `projects/{projectId}/sipDomains/{sipDomainId}`. */
export interface SipDomainRef {
  projectId: string;
  sipDomainId: string;
}

/** A resource under a SIP domain: `projects/{projectId}/sipDomains/{sipDomainId}/{collection}/{id}`. */
export interface SipDomainChildRef extends SipDomainRef {
  id: string;
}

/** `projects/{project}/sipDomains/{sip_domain}`; INVALID_ARGUMENT naming `field` otherwise. */
export function parseSipDomainName(name: string, field = "parent"): SipDomainRef {
  const parts = name.split("/");
  if (
    parts.length !== 4 ||
    parts[0] !== "projects" ||
    parts[2] !== "sipDomains" ||
    !SEGMENT.test(parts[1]!) ||
    !SEGMENT.test(parts[3]!)
  ) {
    throw badField(
      field,
      "must be a SIP domain name of the form projects/{project}/sipDomains/{sip_domain}",
      "name.format",
    );
  }
  return { projectId: parts[1]!, sipDomainId: parts[3]! };
}

/**
 * The parts of `projects/{project}/sipDomains/{sip_domain}/{collection}/{id}`;
 * INVALID_ARGUMENT naming `field` otherwise (the id called `{idLabel}`).
 */
export function parseSipDomainChildName(
  name: string,
  collection: string,
  idLabel: string,
  field = "name",
): SipDomainChildRef {
  const parts = name.split("/");
  if (
    parts.length !== 6 ||
    parts[0] !== "projects" ||
    parts[2] !== "sipDomains" ||
    parts[4] !== collection ||
    ![parts[1], parts[3], parts[5]].every((p) => SEGMENT.test(p ?? ""))
  ) {
    throw badField(
      field,
      `must be a resource name of the form projects/{project}/sipDomains/{sip_domain}/${collection}/{${idLabel}}`,
      "name.format",
    );
  }
  return { projectId: parts[1]!, sipDomainId: parts[3]!, id: parts[5]! };
}
