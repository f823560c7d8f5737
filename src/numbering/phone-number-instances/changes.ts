/**
 * Changes to an instance in place, each under its row lock and checked
 * against its lifecycle state (lifecycle.ts): configuration updates,
 * suspend, resume, completing a port-in, and delete.
 *
 * Update (UpdatePhoneNumberInstance) changes the configuration fields given,
 * checked as validation.ts says; a present but undefined
 * call_recording_trigger goes back to DISABLED.
 *
 * Delete: the instance becomes DELETED with delete_time set (it can still
 * be read, and listed with include_deleted); its numbers enter a quarantine
 * of `quarantineSeconds` (configuration NUMBER_QUARANTINE_SECONDS, measured
 * with the injected clock) and then return to inventory search. A ported-in
 * number is not inventory: after the quarantine it may be ported in again.
 */
import { invalidArgument, notFound } from "../../api/errors.js";
import { type ResourceRef, resourceName } from "../../api/names.js";
import type { PhoneNumberInstanceRow } from "../../db/schema/index.js";
import type { NumberingStore } from "../store.js";
import type { InstancesContext } from "./context.js";
import { type LifecycleAction, transition } from "./lifecycle.js";
import { COLLECTION, type InstanceConfig, type PhoneNumberInstance, RESOURCE_TYPE } from "./model.js";
import { toInstance } from "./records.js";
import { configViolations } from "./validation.js";

/** Changes configuration fields (those given); not on a deleted instance. */
export async function updateInstance(
  ctx: InstancesContext,
  ref: ResourceRef,
  changes: Partial<InstanceConfig>,
): Promise<PhoneNumberInstance> {
  const violations = configViolations(changes);
  if (violations.length > 0) throw invalidArgument(violations);
  return change(ctx, ref, "change", (_row, now) => ({
    ...definedOnly({
      displayName: changes.displayName,
      labels: changes.labels,
      incomingMessageHandlerUris: changes.incomingMessageHandlerUris,
      incomingCallHandlerUris: changes.incomingCallHandlerUris,
    }),
    // Present but undefined: back to the default.
    ...("callRecordingTrigger" in changes
      ? { callRecordingTrigger: changes.callRecordingTrigger ?? "DISABLED" }
      : {}),
    updateTime: now,
  }));
}

/** Disconnects the instance: DELETED, and its numbers into quarantine. */
export async function deleteInstance(ctx: InstancesContext, ref: ResourceRef): Promise<PhoneNumberInstance> {
  return change(
    ctx,
    ref,
    "delete",
    (_row, now) => ({ deleteTime: now, updateTime: now }),
    async (store, row, now) => {
      await store.holdings.release(row.id, new Date(now.getTime() + ctx.options.quarantineSeconds * 1000));
    },
  );
}

export async function suspendInstance(ctx: InstancesContext, ref: ResourceRef): Promise<PhoneNumberInstance> {
  return change(ctx, ref, "suspend", (_row, now) => ({ updateTime: now }));
}

export async function resumeInstance(ctx: InstancesContext, ref: ResourceRef): Promise<PhoneNumberInstance> {
  return change(ctx, ref, "resume", (_row, now) => ({ updateTime: now }));
}

/** Completes a pending port-in: ACTIVE, activate_time now. */
export async function completePortIn(ctx: InstancesContext, ref: ResourceRef): Promise<PhoneNumberInstance> {
  return change(ctx, ref, "completePortIn", (_row, now) => ({ activateTime: now, updateTime: now }));
}

/**
 * Locks the instance, checks `action` against its state, writes the new
 * state plus `changes`, runs `also` — one transaction. An action leaving
 * the state as it is (suspending a suspended instance) writes nothing.
 */
function change(
  ctx: InstancesContext,
  ref: ResourceRef,
  action: LifecycleAction,
  changes: (row: PhoneNumberInstanceRow, now: Date) => Parameters<NumberingStore["instances"]["update"]>[1],
  also?: (store: NumberingStore, row: PhoneNumberInstanceRow, now: Date) => Promise<void>,
): Promise<PhoneNumberInstance> {
  const name = resourceName(COLLECTION, ref);
  return ctx.store.transaction(async (store) => {
    const row = await store.instances.lock(ref.projectId, ref.id);
    if (row === undefined) throw notFound(RESOURCE_TYPE, name);
    const state = transition(name, row.lifecycleState, action);
    const idempotent = (action === "suspend" || action === "resume") && state === row.lifecycleState;
    if (!idempotent) {
      const now = ctx.clock.now();
      await store.instances.update(row.id, { ...changes(row, now), lifecycleState: state });
      await also?.(store, row, now);
    }
    return toInstance((await store.instances.find(ref.projectId, ref.id))!);
  });
}

function definedOnly<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
