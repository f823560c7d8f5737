/**
 * Move (MovePhoneNumberInstance): the instance — a range whole — leaves its
 * project for `destination_parent` under the same id, keeping its
 * configuration, state and times. Handler URIs are kept, but flows and SIP
 * domains must be reconfigured in the destination and programmable handlers
 * must accept the destination project's signing key. The regulatory listing
 * belongs to the source project, so it is detached (the instance is not
 * compliant until a listing of the destination is attached). The
 * destination must differ from the source. One transaction with the row lock.
 */
import { badField, notFound } from "../../api/errors.js";
import { projectName, type ResourceRef, resourceName } from "../../api/names.js";
import type { InstancesContext } from "./context.js";
import { mapForeignKey } from "./foreign-keys.js";
import { transition } from "./lifecycle.js";
import { COLLECTION, type PhoneNumberInstance, RESOURCE_TYPE } from "./model.js";
import { toInstance } from "./records.js";

/** Moves the instance (a range whole) to `destinationProjectId`. */
export async function moveInstance(
  ctx: InstancesContext,
  ref: ResourceRef,
  destinationProjectId: string,
): Promise<PhoneNumberInstance> {
  if (destinationProjectId === ref.projectId) {
    throw badField(
      "destination_parent",
      `the instance is already in ${projectName(ref.projectId)}; name another project`,
      "move.same_project",
    );
  }
  const name = resourceName(COLLECTION, ref);
  return ctx.store.transaction(async (store) => {
    const row = await store.instances.lock(ref.projectId, ref.id);
    if (row === undefined) throw notFound(RESOURCE_TYPE, name);
    transition(name, row.lifecycleState, "change");
    try {
      await store.instances.update(row.id, {
        projectId: destinationProjectId,
        regulatoryListingId: null,
        updateTime: ctx.clock.now(),
      });
    } catch (err) {
      throw mapForeignKey(err, destinationProjectId);
    }
    return toInstance((await store.instances.find(destinationProjectId, row.id))!);
  });
}
