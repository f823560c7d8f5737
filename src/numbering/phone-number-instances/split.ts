/**
 * Split (SplitRange): see ranges.ts for how a range splits. One transaction
 * holding the range's row lock: the original shrinks, a new instance (same
 * configuration, state, activate_time and listing; create_time now) takes
 * the rest, and the holdings of those numbers move to it. Concurrent splits
 * of one range run one after the other; a failure changes nothing.
 */
import { notFound } from "../../api/errors.js";
import { newResourceId } from "../../api/ids.js";
import { type ResourceRef, resourceName } from "../../api/names.js";
import type { InstancesContext } from "./context.js";
import { transition } from "./lifecycle.js";
import { COLLECTION, type PhoneNumberInstance, RESOURCE_TYPE } from "./model.js";
import { planSplit } from "./ranges.js";
import { toInstance } from "./records.js";

/** Splits a range: the first `size` numbers stay, the rest form a new range. */
export async function splitRange(
  ctx: InstancesContext,
  ref: ResourceRef,
  size: number,
): Promise<{ first: PhoneNumberInstance; second: PhoneNumberInstance }> {
  const name = resourceName(COLLECTION, ref);
  return ctx.store.transaction(async (store) => {
    const row = await store.instances.lock(ref.projectId, ref.id);
    if (row === undefined) throw notFound(RESOURCE_TYPE, name);
    transition(name, row.lifecycleState, "change");
    const span =
      row.rangeEnd !== null && row.rangeSize !== null
        ? { start: row.phoneNumber, end: row.rangeEnd, size: row.rangeSize }
        : undefined;
    const plan = planSplit(name, span, size);
    const now = ctx.clock.now();
    const secondId = newResourceId();
    const { id: _id, ...rest } = row;
    await store.instances.insert({
      ...rest,
      id: secondId,
      phoneNumber: plan.second.start,
      rangeEnd: plan.second.end,
      rangeSize: plan.second.size,
      createTime: now,
      updateTime: now,
    });
    await store.instances.update(row.id, {
      rangeEnd: plan.first.end,
      rangeSize: plan.first.size,
      updateTime: now,
    });
    await store.holdings.transfer(row.id, secondId, plan.second.start);
    const first = (await store.instances.find(ref.projectId, row.id))!;
    const second = (await store.instances.find(ref.projectId, secondId))!;
    return { first: toInstance(first), second: toInstance(second) };
  });
}
