/** A credential's binding to a project with a role: the form's fields and the list's cell. */
import { useState } from "react";
import { useSession } from "../app.js";
import { SelectField, TextField } from "../kit/fields.js";
import { lastSegment } from "../kit/format.js";

export const ROLES = [
  "roles/owner",
  "roles/viewer",
  "roles/numbering.admin",
  "roles/voice.admin",
  "roles/messaging.admin",
  "roles/webhooks.verifier",
];

/** The binding being made: the project's ID (the open project's to start with) and a role. */
export function useBinding() {
  const { session } = useSession();
  const [projectId, setProjectId] = useState(session.project === "" ? "" : lastSegment(session.project));
  const [role, setRole] = useState(ROLES[0]!);
  return {
    projectId,
    setProjectId,
    role,
    setRole,
    bindings: [{ project: `projects/${projectId}`, roles: [role] }],
  };
}

/** The Project ID and Role fields, their ids `${idPrefix}-project` and `${idPrefix}-role`. */
export function BindingFields({
  idPrefix,
  binding,
}: {
  idPrefix: string;
  binding: ReturnType<typeof useBinding>;
}) {
  return (
    <>
      <TextField
        label="Project ID"
        id={`${idPrefix}-project`}
        required
        value={binding.projectId}
        onChange={binding.setProjectId}
      />
      <SelectField
        label="Role"
        id={`${idPrefix}-role`}
        options={ROLES}
        value={binding.role}
        onChange={binding.setRole}
      />
    </>
  );
}

/** `projects/p: roles/owner, ...; projects/q: ...` */
export function bindingsText(
  bindings: { project: string; roles: string[]; permissions: string[] }[],
): string {
  return bindings.map((b) => `${b.project}: ${[...b.roles, ...b.permissions].join(", ")}`).join("; ");
}
