/**
 * Resource names (AIP-122): `projects/{project}` parents and
 * `projects/{project}/{collection}/{id}` resources. Projects are not checked
 * for existence yet: any `projects/{id}` is accepted.
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
