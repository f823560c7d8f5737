/**
 * Foreign key violations of `phone_number_instances` as API errors: a
 * missing project (an insert, or a move to a project that does not exist)
 * is NOT_FOUND; a listing deleted between its check and the write is
 * FAILED_PRECONDITION `LISTING_DELETED`.
 */
import { failedPrecondition, notFound } from "../../api/errors.js";
import { projectName } from "../../api/names.js";

const PROJECT_TYPE = "admin.switchboard/Project";

const PROJECT_FK = "phone_number_instances_project_id_projects_id_fk";
const LISTING_FK = "phone_number_instances_regulatory_listing_id_regulatory_listings_id_fk";

/** Whether `err` (or its cause) is a foreign key violation of `constraint`. */
function isForeignKeyViolation(err: unknown, constraint: string): boolean {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === "object" && depth < 5; depth++) {
    const f = e as { code?: unknown; constraint?: unknown; constraint_name?: unknown; cause?: unknown };
    if (f.code === "23503") return f.constraint === constraint || f.constraint_name === constraint;
    e = f.cause;
  }
  return false;
}

/** The API error for `err` of a write to an instance of `projectId`; `err` itself when it is neither. */
export function mapForeignKey(err: unknown, projectId: string): unknown {
  if (isForeignKeyViolation(err, PROJECT_FK)) return notFound(PROJECT_TYPE, projectName(projectId));
  if (isForeignKeyViolation(err, LISTING_FK)) {
    return failedPrecondition("LISTING_DELETED", "the regulatory listing was deleted meanwhile");
  }
  return err;
}
