/**
 * PhoneNumberInstance.LifecycleState and what each state allows.
 *
 *   (create from inventory) ──────────────> ACTIVE   activate_time = create_time
 *   (admin portIn) ───────────────────────> PENDING  activate_time unset
 *   PENDING  ── admin completePortIn ─────> ACTIVE   activate_time = completion time
 *   ACTIVE   ── admin suspend ────────────> SUSPENDED
 *   SUSPENDED ─ admin resume ─────────────> ACTIVE
 *   ACTIVE | SUSPENDED | PENDING ─ delete ─> DELETED delete_time set; the numbers
 *                                                    go into quarantine
 *
 * - suspend and resume are idempotent: asking for the state the instance is
 *   already in changes nothing and returns it.
 * - anything else not in the diagram is FAILED_PRECONDITION with a stable
 *   reason: INSTANCE_DELETED (a deleted instance only remains to be read),
 *   PORT_IN_PENDING (suspend/resume before the port-in completed),
 *   NOT_PENDING (completing a port-in that is not pending).
 * - update, move and splitRange work in every state but DELETED.
 */
import { failedPrecondition } from "../../api/errors.js";
import type { LifecycleStateValue } from "../../db/schema/index.js";

export type LifecycleState = LifecycleStateValue;

export type LifecycleAction = "suspend" | "resume" | "completePortIn" | "delete" | "change";

/** The state `action` leads to from `state`; throws FAILED_PRECONDITION when it is not allowed. */
export function transition(name: string, state: LifecycleState, action: LifecycleAction): LifecycleState {
  if (state === "DELETED") {
    throw failedPrecondition("INSTANCE_DELETED", `${name} is deleted`, { phone_number_instance: name });
  }
  switch (action) {
    case "change":
      return state;
    case "delete":
      return "DELETED";
    case "suspend":
    case "resume":
      if (state === "PENDING") {
        throw failedPrecondition(
          "PORT_IN_PENDING",
          `${name} is PENDING (awaiting its port-in); complete the port-in first`,
          { phone_number_instance: name },
        );
      }
      return action === "suspend" ? "SUSPENDED" : "ACTIVE";
    case "completePortIn":
      if (state !== "PENDING") {
        throw failedPrecondition("NOT_PENDING", `${name} is ${state}, not PENDING: no port-in to complete`, {
          phone_number_instance: name,
        });
      }
      return "ACTIVE";
  }
}
