/**
 * Phone number instances: numbers, or contiguous ranges of numbers,
 * provisioned to a project, with their handlers for incoming calls and
 * messages. PhoneNumberInstancesDomain is what the services call (they only
 * map protos to these calls); the rules of the interface document live in
 * the files beside this one, one job each:
 *
 * - model.ts: the resource, its configuration and the request shapes
 * - validation.ts: checks of create and update requests (configuration rules)
 * - provisioning.ts: create, ranges (admin) and port-ins (admin); uniqueness
 * - changes.ts: update, suspend, resume, complete port-in, and delete with
 *   the quarantine of the numbers
 * - split.ts (with ranges.ts): SplitRange
 * - move.ts: moves between projects
 * - queries.ts: get and list; lookup.ts: the instance a number belongs to
 * - records.ts: stored records to instances; foreign-keys.ts: storage errors
 * - lifecycle.ts, handler-uris.ts, compliance.ts: states, handler URIs,
 *   `compliant`
 */
import type { ResourceRef } from "../../api/names.js";
import type { PageResult } from "../../api/pagination.js";
import type { Clock } from "../../clock.js";
import type { NumberingStore } from "../store.js";
import {
  completePortIn,
  deleteInstance,
  resumeInstance,
  suspendInstance,
  updateInstance,
} from "./changes.js";
import type { InstancesContext, InstancesOptions } from "./context.js";
import { findByNumber } from "./lookup.js";
import type {
  InstanceConfig,
  ListParams,
  NewInstance,
  NewPortIn,
  NewRange,
  PhoneNumberInstance,
} from "./model.js";
import { moveInstance } from "./move.js";
import { createInstance, portIn, provisionRange } from "./provisioning.js";
import { getInstance, listInstances } from "./queries.js";
import { splitRange } from "./split.js";

export class PhoneNumberInstancesDomain {
  private readonly ctx: InstancesContext;

  constructor(store: NumberingStore, clock: Clock, options: InstancesOptions) {
    this.ctx = { store, clock, options };
  }

  /** Provisions one inventory number (CreatePhoneNumberInstance). */
  create(projectId: string, input: NewInstance): Promise<PhoneNumberInstance> {
    return createInstance(this.ctx, projectId, input);
  }

  /** Provisions a contiguous block of inventory numbers as a range (admin). */
  provisionRange(projectId: string, input: NewRange): Promise<PhoneNumberInstance> {
    return provisionRange(this.ctx, projectId, input);
  }

  /** Registers a port-in of a number from another carrier (admin): PENDING until completed. */
  portIn(projectId: string, input: NewPortIn): Promise<PhoneNumberInstance> {
    return portIn(this.ctx, projectId, input);
  }

  get(ref: ResourceRef): Promise<PhoneNumberInstance> {
    return getInstance(this.ctx.store, ref);
  }

  list(projectId: string, params: ListParams): Promise<PageResult<PhoneNumberInstance>> {
    return listInstances(this.ctx.store, projectId, params);
  }

  /** Changes configuration fields (those given); not on a deleted instance. */
  update(ref: ResourceRef, changes: Partial<InstanceConfig>): Promise<PhoneNumberInstance> {
    return updateInstance(this.ctx, ref, changes);
  }

  /** Disconnects the instance: DELETED, and its numbers into quarantine. */
  delete(ref: ResourceRef): Promise<PhoneNumberInstance> {
    return deleteInstance(this.ctx, ref);
  }

  suspend(ref: ResourceRef): Promise<PhoneNumberInstance> {
    return suspendInstance(this.ctx, ref);
  }

  resume(ref: ResourceRef): Promise<PhoneNumberInstance> {
    return resumeInstance(this.ctx, ref);
  }

  /** Completes a pending port-in: ACTIVE, activate_time now. */
  completePortIn(ref: ResourceRef): Promise<PhoneNumberInstance> {
    return completePortIn(this.ctx, ref);
  }

  /** Splits a range: the first `size` numbers stay, the rest form a new range. */
  split(
    ref: ResourceRef,
    size: number,
  ): Promise<{ first: PhoneNumberInstance; second: PhoneNumberInstance }> {
    return splitRange(this.ctx, ref, size);
  }

  /** Moves the instance (a range whole) to `destinationProjectId`. */
  move(ref: ResourceRef, destinationProjectId: string): Promise<PhoneNumberInstance> {
    return moveInstance(this.ctx, ref, destinationProjectId);
  }

  /** The instance that incoming traffic to `phoneNumber` belongs to (its range's, for a number in one). */
  findByNumber(phoneNumber: string): Promise<PhoneNumberInstance | undefined> {
    return findByNumber(this.ctx.store, phoneNumber);
  }
}
