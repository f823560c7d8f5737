/**
 * Permission bindings: what a credential may do, per project. API keys and
 * service accounts share them — the proto message (`Binding`), these rules,
 * and the way authentication expands them (src/auth/permissions.ts):
 * - at most one binding per project;
 * - every role is one of ROLES, every permission one of ALL_PERMISSIONS,
 *   and a binding grants at least one of them;
 * - every bound project exists (deleting a project deletes its bindings).
 */
import { create } from "@bufbuild/protobuf";
import { type Binding as BindingProto, BindingSchema } from "../../gen/switchboard/admin/v1/api_keys_pb.js";
import { type FieldViolation, invalidArgument } from "../api/errors.js";
import { ALL_PERMISSIONS, ROLES } from "../auth/permissions.js";
import type { ProjectsRepository } from "./projects-repository.js";

/** A binding as stored. */
export interface Binding {
  projectId: string;
  roles: string[];
  permissions: string[];
}

/** A binding as a request gives it. */
export interface BindingInput {
  project: string;
  roles: string[];
  permissions: string[];
}

/** Checks bindings and maps them to storage; `field` is their request path (`api_key.bindings`). */
export async function checkBindings(
  inputs: BindingInput[],
  field: string,
  projects: ProjectsRepository,
): Promise<Binding[]> {
  const violations: FieldViolation[] = [];
  const seen = new Set<string>();
  const out: Binding[] = [];
  inputs.forEach((b, i) => {
    const at = `${field}[${i}]`;
    const m = /^projects\/([^/]+)$/.exec(b.project);
    if (!m) {
      violations.push({ field: `${at}.project`, description: "must be projects/{project}" });
      return;
    }
    const projectId = m[1]!;
    if (seen.has(projectId)) {
      violations.push({
        field: `${at}.project`,
        description: `${b.project} is bound twice; merge the bindings`,
      });
    }
    seen.add(projectId);
    b.roles.forEach((r, j) => {
      if (!(r in ROLES)) {
        violations.push({
          field: `${at}.roles[${j}]`,
          description: `unknown role ${r}; known roles: ${Object.keys(ROLES).join(", ")}`,
        });
      }
    });
    b.permissions.forEach((p, j) => {
      if (!ALL_PERMISSIONS.includes(p)) {
        violations.push({ field: `${at}.permissions[${j}]`, description: `unknown permission ${p}` });
      }
    });
    if (b.roles.length === 0 && b.permissions.length === 0) {
      violations.push({ field: at, description: "a binding needs at least one role or permission" });
    }
    out.push({ projectId, roles: [...new Set(b.roles)], permissions: [...new Set(b.permissions)] });
  });
  if (violations.length === 0) {
    const missing = await projects.missing(out.map((b) => b.projectId));
    out.forEach((b, i) => {
      if (missing.includes(b.projectId)) {
        violations.push({
          field: `${field}[${i}].project`,
          description: `projects/${b.projectId} does not exist`,
        });
      }
    });
  }
  if (violations.length > 0) throw invalidArgument(violations);
  return out;
}

export function bindingToProto(b: Binding): BindingProto {
  return create(BindingSchema, {
    project: `projects/${b.projectId}`,
    roles: b.roles,
    permissions: b.permissions,
  });
}

export function bindingFromProto(b: BindingProto): BindingInput {
  return { project: b.project, roles: b.roles, permissions: b.permissions };
}
