/**
 * Phone number instances: numbers, or contiguous ranges of numbers,
 * provisioned to a project, with their handlers for incoming calls and
 * messages. The rules of the interface document live here (and in the
 * files beside this one, one job each: handler URIs, lifecycle, ranges,
 * compliance); the services only map protos to these calls.
 *
 * Provisioning
 * - CreatePhoneNumberInstance provisions one inventory number, named by
 *   `phone_number.phone_number` (E.164) or `phone_number.name`
 *   (`phoneNumbers/61255501234`; both may be given if they agree). The
 *   instance is ACTIVE with activate_time = create_time. A number not in
 *   inventory is NOT_FOUND; one held by an instance (any project) is
 *   ALREADY_EXISTS — the holder is named only when it is in the same project;
 *   one in quarantine after a delete is FAILED_PRECONDITION
 *   `NUMBER_IN_QUARANTINE` (with the time it becomes free).
 * - The operator provisions a range (admin ProvisionPhoneNumberRange): every
 *   number of it must be in inventory (FAILED_PRECONDITION
 *   `NUMBERS_NOT_IN_INVENTORY` naming the first missing one) with one country
 *   and type (`MIXED_RANGE`), at most MAX_RANGE_SIZE numbers; the result is
 *   one instance, the primary, with `range` set. Incoming traffic to any
 *   number of the range belongs to it (`findByNumber`).
 * - The operator registers a port-in (admin PortInPhoneNumber) of a valid
 *   number that is not in inventory (`NUMBER_IN_INVENTORY` otherwise): a
 *   PENDING instance without activate_time, until CompletePortIn.
 * - Uniqueness is the database's: `number_holdings` has one row per number
 *   held, keyed by the number, claimed in one statement (see
 *   holdings-repository.ts), so of concurrent provisioning of a number
 *   exactly one succeeds and the others get ALREADY_EXISTS.
 * - `regulatory_listing` (a request field; the resource field is output
 *   only) attaches a listing of the same project: INVALID_ARGUMENT naming
 *   `regulatory_listing` for another project's, NOT_FOUND for a missing one.
 *
 * Configuration (INVALID_ARGUMENT naming `phone_number_instance.<field>`):
 * display_name at most 100 characters; labels at most 50, keys 1 to 100
 * characters, values at most 1000; the handler lists as handler-uris.ts
 * says; call_recording_trigger UNSPECIFIED means DISABLED (the default).
 * `phone_number` is immutable; output-only fields are ignored.
 *
 * Split (SplitRange): see ranges.ts. One transaction holding the range's row
 * lock: the original shrinks, a new instance (same configuration, state,
 * activate_time and listing; create_time now) takes the rest, and the
 * holdings of those numbers move to it. Concurrent splits of one range run
 * one after the other; a failure changes nothing.
 *
 * Move (MovePhoneNumberInstance): the instance — a range whole — leaves its
 * project for `destination_parent` under the same id, keeping its
 * configuration, state and times. Handler URIs are kept, but flows and SIP
 * domains must be reconfigured in the destination and programmable handlers
 * must accept the destination project's signing key. The regulatory listing
 * belongs to the source project, so it is detached (the instance is not
 * compliant until a listing of the destination is attached). The
 * destination must differ from the source. One transaction with the row lock.
 *
 * Delete: the instance becomes DELETED with delete_time set (it can still
 * be read, and listed with include_deleted); its numbers enter a quarantine
 * of `quarantineSeconds` (configuration NUMBER_QUARANTINE_SECONDS, measured
 * with the injected clock) and then return to inventory search. A ported-in
 * number is not inventory: after the quarantine it may be ported in again.
 *
 * List: newest first, deleted instances hidden unless `include_deleted`;
 * `prefix` (E.164, the `+` optional) matches instances holding at least one
 * number that starts with it — for a range, any number of it.
 */
import {
  alreadyExists,
  badField,
  type FieldViolation,
  failedPrecondition,
  invalidArgument,
  notFound,
} from "../../api/errors.js";
import { newResourceId } from "../../api/ids.js";
import { charLength, labelViolations } from "../../api/labels.js";
import { projectName, type ResourceRef, resourceName } from "../../api/names.js";
import { type PageResult, readPage } from "../../api/pagination.js";
import type { Clock } from "../../clock.js";
import type {
  LifecycleStateValue,
  NewPhoneNumberInstanceRow,
  PhoneNumberInstanceRow,
  RecordingTriggerValue,
} from "../../db/schema/index.js";
import { capabilitiesOf, defaultSkus, type InventoryNumber, PHONE_NUMBER_TYPE } from "../inventory/domain.js";
import { isE164, numberFacts, numberOfName, phoneNumberName, rangeEnd } from "../numbers.js";
import { RESOURCE_TYPE as LISTING_TYPE, COLLECTION as LISTINGS } from "../regulatory-listings/domain.js";
import type { NumberingStore } from "../store.js";
import { isCompliant } from "./compliance.js";
import { handlerUriViolations } from "./handler-uris.js";
import { type LifecycleAction, type LifecycleState, transition } from "./lifecycle.js";
import { MAX_RANGE_SIZE, planSplit } from "./ranges.js";
import type { InstanceRecord } from "./repository.js";

export const RESOURCE_TYPE = "numbering.api.enfonica.com/PhoneNumberInstance";
export const COLLECTION = "phoneNumberInstances";
const PROJECT_TYPE = "admin.switchboard/Project";

export const MAX_DISPLAY_NAME = 100;

export type RecordingTrigger = RecordingTriggerValue;

export interface PhoneNumberRange {
  primaryPhoneNumberInstance: string;
  startPhoneNumber: string;
  endPhoneNumber: string;
  size: number;
}

export interface PhoneNumberInstance {
  projectId: string;
  id: string;
  name: string;
  phoneNumber: InventoryNumber;
  displayName: string;
  labels: Record<string, string>;
  incomingMessageHandlerUris: string[];
  incomingCallHandlerUris: string[];
  callRecordingTrigger: RecordingTrigger;
  lifecycleState: LifecycleState;
  createTime: Date;
  activateTime: Date | undefined;
  deleteTime: Date | undefined;
  range: PhoneNumberRange | undefined;
  /** The attached listing (`projects/{project}/regulatoryListings/{id}`), if any. */
  regulatoryListing: string | undefined;
  compliant: boolean;
}

/** The configurable fields of an instance. */
export interface InstanceConfig {
  displayName: string;
  labels: Record<string, string>;
  incomingMessageHandlerUris: string[];
  incomingCallHandlerUris: string[];
  /** undefined: DISABLED. */
  callRecordingTrigger: RecordingTrigger | undefined;
}

export interface NewInstance extends InstanceConfig {
  /** The request's `phone_number` (name and/or E.164); undefined when absent. */
  phoneNumber: { name: string; phoneNumber: string } | undefined;
  /** A listing name to attach; empty for none. */
  regulatoryListing: string;
}

export interface NewRange {
  startPhoneNumber: string;
  size: number;
  regulatoryListing: string;
}

export interface NewPortIn {
  phoneNumber: string;
  regulatoryListing: string;
}

export interface ListParams {
  prefix: string;
  includeDeleted: boolean;
  pageSize: number;
  pageToken: string;
}

export interface InstancesOptions {
  /** How long a deleted instance's numbers stay out of inventory, in seconds. */
  quarantineSeconds: number;
}

const RESOURCE_FIELD = "phone_number_instance";

/** The configuration rules (see the file comment), for the fields present in `config`. */
export function configViolations(
  config: Partial<InstanceConfig>,
  resourceField: string = RESOURCE_FIELD,
): FieldViolation[] {
  const violations: FieldViolation[] = [];
  if (config.displayName !== undefined && charLength(config.displayName) > MAX_DISPLAY_NAME) {
    violations.push({
      field: `${resourceField}.display_name`,
      description: `must be at most ${MAX_DISPLAY_NAME} characters`,
      reason: "string.max_len",
    });
  }
  if (config.labels !== undefined)
    violations.push(...labelViolations(config.labels, `${resourceField}.labels`));
  if (config.incomingMessageHandlerUris !== undefined) {
    violations.push(
      ...handlerUriViolations(
        "incoming_message_handler_uris",
        config.incomingMessageHandlerUris,
        resourceField,
      ),
    );
  }
  if (config.incomingCallHandlerUris !== undefined) {
    violations.push(
      ...handlerUriViolations("incoming_call_handler_uris", config.incomingCallHandlerUris, resourceField),
    );
  }
  return violations;
}

function instanceName(projectId: string, id: string): string {
  return resourceName(COLLECTION, { projectId, id });
}

export function toInstance(record: InstanceRecord): PhoneNumberInstance {
  const row = record.instance;
  const name = instanceName(row.projectId, row.id);
  const listing = record.listing;
  return {
    projectId: row.projectId,
    id: row.id,
    name,
    phoneNumber: {
      phoneNumber: row.phoneNumber,
      countryCode: row.countryCode,
      numberType: row.numberType,
      capabilities: capabilitiesOf(row),
      sku: row.sku,
      activationSku: row.activationSku,
    },
    displayName: row.displayName,
    labels: row.labels,
    incomingMessageHandlerUris: row.incomingMessageHandlerUris,
    incomingCallHandlerUris: row.incomingCallHandlerUris,
    callRecordingTrigger: row.callRecordingTrigger,
    lifecycleState: row.lifecycleState,
    createTime: row.createTime,
    activateTime: row.activateTime ?? undefined,
    deleteTime: row.deleteTime ?? undefined,
    range:
      row.rangeEnd !== null && row.rangeSize !== null
        ? {
            primaryPhoneNumberInstance: name,
            startPhoneNumber: row.phoneNumber,
            endPhoneNumber: row.rangeEnd,
            size: row.rangeSize,
          }
        : undefined,
    regulatoryListing:
      listing === null ? undefined : resourceName(LISTINGS, { projectId: listing.projectId, id: listing.id }),
    compliant: isCompliant(row, listing),
  };
}

/** The number a create request names, or the violations saying why it names none. */
function requestedNumber(input: NewInstance["phoneNumber"]): {
  number?: string;
  violations: FieldViolation[];
} {
  const field = `${RESOURCE_FIELD}.phone_number`;
  if (input === undefined || (input.name === "" && input.phoneNumber === "")) {
    return {
      violations: [
        {
          field,
          description: "is required: name the number by phone_number (E.164) or name (phoneNumbers/{number})",
          reason: "required",
        },
      ],
    };
  }
  const violations: FieldViolation[] = [];
  let fromName: string | undefined;
  if (input.name !== "") {
    fromName = numberOfName(input.name);
    if (fromName === undefined) {
      violations.push({
        field: `${field}.name`,
        description: "must be phoneNumbers/{number}, the number's E.164 digits (phoneNumbers/61255501234)",
        reason: "name.format",
      });
    }
  }
  if (input.phoneNumber !== "" && !isE164(input.phoneNumber)) {
    violations.push({
      field: `${field}.phone_number`,
      description: "must be a phone number in E.164 format, for example +61255501234",
      reason: "phone.e164",
    });
  }
  if (violations.length > 0) return { violations };
  if (fromName !== undefined && input.phoneNumber !== "" && fromName !== input.phoneNumber) {
    return {
      violations: [
        {
          field: `${field}.phone_number`,
          description: `does not match name (${input.name}); give one, or both naming the same number`,
          reason: "phone.mismatch",
        },
      ],
    };
  }
  return { number: input.phoneNumber !== "" ? input.phoneNumber : fromName!, violations: [] };
}

/** Whether `err` (or its cause) is a foreign key violation of `constraint`. */
function isForeignKeyViolation(err: unknown, constraint: string): boolean {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === "object" && depth < 5; depth++) {
    const f = e as { code?: unknown; constraint?: unknown; constraint_name?: unknown; cause?: unknown };
    if (f.code === "23503") return f.constraint === constraint || f.constraint_name === constraint;
    e = f.cause;
  }
  return false;
}

const PROJECT_FK = "phone_number_instances_project_id_projects_id_fk";
const LISTING_FK = "phone_number_instances_regulatory_listing_id_regulatory_listings_id_fk";

interface Provision {
  projectId: string;
  start: string;
  /** Numbers held: 1 for a single number. */
  size: number;
  isRange: boolean;
  number: Omit<InventoryNumber, "phoneNumber">;
  state: LifecycleStateValue;
  config: InstanceConfig;
  listingId: string | null;
}

export class PhoneNumberInstancesDomain {
  constructor(
    private readonly store: NumberingStore,
    private readonly clock: Clock,
    private readonly options: InstancesOptions,
  ) {}

  /** Provisions one inventory number (CreatePhoneNumberInstance). */
  async create(projectId: string, input: NewInstance): Promise<PhoneNumberInstance> {
    const { number, violations } = requestedNumber(input.phoneNumber);
    violations.push(...configViolations(input));
    const listingRef = this.listingRef(projectId, input.regulatoryListing, "regulatory_listing", violations);
    if (violations.length > 0 || number === undefined) throw invalidArgument(violations);
    return this.store.transaction(async (store) => {
      const item = await store.inventory.find(number);
      if (item === undefined) throw notFound(PHONE_NUMBER_TYPE, phoneNumberName(number));
      return this.provision(store, {
        projectId,
        start: number,
        size: 1,
        isRange: false,
        number: {
          countryCode: item.countryCode,
          numberType: item.numberType,
          capabilities: capabilitiesOf(item),
          sku: item.sku,
          activationSku: item.activationSku,
        },
        state: "ACTIVE",
        config: input,
        listingId: await this.listingId(store, listingRef),
      });
    });
  }

  /** Provisions a contiguous block of inventory numbers as a range (admin). */
  async provisionRange(projectId: string, input: NewRange): Promise<PhoneNumberInstance> {
    const violations: FieldViolation[] = [];
    if (!isE164(input.startPhoneNumber)) {
      violations.push({
        field: "start_phone_number",
        description: "must be a phone number in E.164 format, for example +61255501000",
        reason: "phone.e164",
      });
    }
    const end = isE164(input.startPhoneNumber) ? rangeEnd(input.startPhoneNumber, input.size) : undefined;
    if (!Number.isInteger(input.size) || input.size < 1 || input.size > MAX_RANGE_SIZE) {
      violations.push({
        field: "size",
        description: `must be 1 to ${MAX_RANGE_SIZE}`,
        reason: "int32.range",
      });
    } else if (isE164(input.startPhoneNumber) && end === undefined) {
      violations.push({
        field: "size",
        description: "the range would change the number of digits; no such range exists",
        reason: "range.end",
      });
    }
    const listingRef = this.listingRef(projectId, input.regulatoryListing, "regulatory_listing", violations);
    if (violations.length > 0 || end === undefined) throw invalidArgument(violations);
    const start = input.startPhoneNumber;
    return this.store.transaction(async (store) => {
      const summary = await store.inventory.summarize(start, end);
      if (summary.firstMissing !== undefined) {
        throw failedPrecondition(
          "NUMBERS_NOT_IN_INVENTORY",
          `${input.size - summary.count} of the ${input.size} numbers from ${start} to ${end} are not in inventory (the first is ${summary.firstMissing}); add them with CreateNumberBlock`,
          { start_phone_number: start, end_phone_number: end, first_missing: summary.firstMissing },
        );
      }
      if (summary.countries > 1 || summary.types > 1) {
        throw failedPrecondition(
          "MIXED_RANGE",
          `the numbers from ${start} to ${end} are not all of one country and type; a range must be`,
          { start_phone_number: start, end_phone_number: end },
        );
      }
      const first = (await store.inventory.find(start))!;
      return this.provision(store, {
        projectId,
        start,
        size: input.size,
        isRange: true,
        number: {
          countryCode: first.countryCode,
          numberType: first.numberType,
          capabilities: capabilitiesOf(first),
          sku: first.sku,
          activationSku: first.activationSku,
        },
        state: "ACTIVE",
        config: emptyConfig(),
        listingId: await this.listingId(store, listingRef),
      });
    });
  }

  /** Registers a port-in of a number from another carrier (admin): PENDING until completed. */
  async portIn(projectId: string, input: NewPortIn): Promise<PhoneNumberInstance> {
    const violations: FieldViolation[] = [];
    const facts = numberFacts(input.phoneNumber);
    if (facts === undefined) {
      violations.push({
        field: "phone_number",
        description: "must be a valid phone number in E.164 format, for example +61491570156",
        reason: "phone.e164",
      });
    }
    const listingRef = this.listingRef(projectId, input.regulatoryListing, "regulatory_listing", violations);
    if (violations.length > 0 || facts === undefined) throw invalidArgument(violations);
    return this.store.transaction(async (store) => {
      if ((await store.inventory.find(input.phoneNumber)) !== undefined) {
        throw failedPrecondition(
          "NUMBER_IN_INVENTORY",
          `${input.phoneNumber} is in this service's inventory: provision it with CreatePhoneNumberInstance instead of porting it in`,
          { phone_number: input.phoneNumber },
        );
      }
      const skus = defaultSkus(facts.country, facts.type);
      return this.provision(store, {
        projectId,
        start: input.phoneNumber,
        size: 1,
        isRange: false,
        number: {
          countryCode: facts.country,
          numberType: facts.type,
          capabilities: facts.type === "MOBILE" ? ["SMS", "VOICE"] : ["VOICE"],
          sku: skus.sku,
          activationSku: skus.activationSku.replace(/-ACTIVATION$/, "-PORT-IN"),
        },
        state: "PENDING",
        config: emptyConfig(),
        listingId: await this.listingId(store, listingRef),
      });
    });
  }

  /** Inserts the instance and claims its numbers, inside `store`'s transaction. */
  private async provision(store: NumberingStore, p: Provision): Promise<PhoneNumberInstance> {
    const now = this.clock.now();
    const id = newResourceId();
    const end = rangeEnd(p.start, p.size)!;
    const row: NewPhoneNumberInstanceRow = {
      id,
      projectId: p.projectId,
      phoneNumber: p.start,
      rangeEnd: p.isRange ? end : null,
      rangeSize: p.isRange ? p.size : null,
      countryCode: p.number.countryCode,
      numberType: p.number.numberType,
      voice: p.number.capabilities.includes("VOICE"),
      sms: p.number.capabilities.includes("SMS"),
      mms: p.number.capabilities.includes("MMS"),
      sku: p.number.sku,
      activationSku: p.number.activationSku,
      displayName: p.config.displayName,
      labels: p.config.labels,
      incomingMessageHandlerUris: p.config.incomingMessageHandlerUris,
      incomingCallHandlerUris: p.config.incomingCallHandlerUris,
      callRecordingTrigger: p.config.callRecordingTrigger ?? "DISABLED",
      lifecycleState: p.state,
      regulatoryListingId: p.listingId,
      createTime: now,
      updateTime: now,
      activateTime: p.state === "ACTIVE" ? now : null,
      deleteTime: null,
    };
    try {
      await store.instances.insert(row);
    } catch (err) {
      throw this.mapForeignKey(err, p.projectId);
    }
    const claimed = await store.holdings.claim(id, p.start, p.size, now);
    if (claimed < p.size) throw await this.whyTaken(store, p.projectId, id, p.start, end, now);
    return toInstance((await store.instances.find(p.projectId, id))!);
  }

  /** The error for numbers from `start` to `end` that could not all be claimed. */
  private async whyTaken(
    store: NumberingStore,
    projectId: string,
    claimant: string,
    start: string,
    end: string,
    now: Date,
  ) {
    const [blocker] = await store.holdings.blocking(start, end, now, claimant, 1);
    if (blocker !== undefined && blocker.releaseTime !== null) {
      const free = blocker.releaseTime.toISOString();
      return failedPrecondition(
        "NUMBER_IN_QUARANTINE",
        `${blocker.phoneNumber} was recently disconnected and is in quarantine until ${free}`,
        { phone_number: blocker.phoneNumber, release_time: free },
      );
    }
    const number = blocker?.phoneNumber ?? start;
    const holder = await store.instances.holderOf(number);
    const of = start === end ? "" : ` (in the range ${start} to ${end})`;
    if (holder !== undefined && holder.instance.projectId === projectId) {
      const name = instanceName(projectId, holder.instance.id);
      return alreadyExists(
        RESOURCE_TYPE,
        name,
        `${number}${of} is already provisioned to this project as ${name}`,
        {
          phone_number: number,
        },
      );
    }
    // Held by another project: say so without naming its instance.
    return alreadyExists(
      PHONE_NUMBER_TYPE,
      phoneNumberName(number),
      `${number}${of} is already provisioned`,
      {
        phone_number: number,
      },
    );
  }

  private mapForeignKey(err: unknown, projectId: string): unknown {
    if (isForeignKeyViolation(err, PROJECT_FK)) return notFound(PROJECT_TYPE, projectName(projectId));
    if (isForeignKeyViolation(err, LISTING_FK)) {
      return failedPrecondition("LISTING_DELETED", "the regulatory listing was deleted meanwhile");
    }
    return err;
  }

  /** Checks a listing name of a request; pushes a violation for another project's. */
  private listingRef(
    projectId: string,
    name: string,
    field: string,
    violations: FieldViolation[],
  ): ResourceRef | undefined {
    if (name === "") return undefined;
    const m = /^projects\/([^/]+)\/regulatoryListings\/([^/]+)$/.exec(name);
    if (m === null) {
      violations.push({
        field,
        description: "must be a listing name, projects/{project}/regulatoryListings/{regulatory_listing}",
        reason: "name.format",
      });
      return undefined;
    }
    if (m[1] !== projectId) {
      violations.push({
        field,
        description: `must be a listing of ${projectName(projectId)}, the instance's project`,
        reason: "listing.project",
      });
      return undefined;
    }
    return { projectId, id: m[2]! };
  }

  /** The id of the listing `ref` names (NOT_FOUND when it does not exist); null for none. */
  private async listingId(store: NumberingStore, ref: ResourceRef | undefined): Promise<string | null> {
    if (ref === undefined) return null;
    const listing = await store.listings.find(ref.projectId, ref.id);
    if (listing === undefined) throw notFound(LISTING_TYPE, resourceName(LISTINGS, ref));
    return listing.id;
  }

  async get(ref: ResourceRef): Promise<PhoneNumberInstance> {
    const record = await this.store.instances.find(ref.projectId, ref.id);
    if (record === undefined) throw notFound(RESOURCE_TYPE, resourceName(COLLECTION, ref));
    return toInstance(record);
  }

  async list(projectId: string, params: ListParams): Promise<PageResult<PhoneNumberInstance>> {
    const prefix =
      params.prefix === "" || params.prefix === "+" ? "" : `+${params.prefix.replace(/^\+/, "")}`;
    if (prefix !== "" && !/^\+[0-9]{1,15}$/.test(prefix)) {
      throw badField("prefix", "must be the start of an E.164 number, for example +6125550", "prefix.format");
    }
    const filter = { prefix, includeDeleted: params.includeDeleted };
    const query = {
      method: "ListPhoneNumberInstances",
      parent: projectName(projectId),
      prefix,
      include_deleted: params.includeDeleted,
    };
    const result = await readPage(
      { pageSize: params.pageSize, pageToken: params.pageToken, query },
      async (after, limit) =>
        (await this.store.instances.list(projectId, filter, after, limit)).map((r) => ({
          record: r,
          createTime: r.instance.createTime,
          id: r.instance.id,
        })),
    );
    return { items: result.items.map((r) => toInstance(r.record)), nextPageToken: result.nextPageToken };
  }

  /** Changes configuration fields (those given); not on a deleted instance. */
  async update(ref: ResourceRef, changes: Partial<InstanceConfig>): Promise<PhoneNumberInstance> {
    const violations = configViolations(changes);
    if (violations.length > 0) throw invalidArgument(violations);
    return this.change(ref, "change", (_row, now) => ({
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
  async delete(ref: ResourceRef): Promise<PhoneNumberInstance> {
    return this.change(
      ref,
      "delete",
      (_row, now) => ({ deleteTime: now, updateTime: now }),
      async (store, row, now) => {
        await store.holdings.release(row.id, new Date(now.getTime() + this.options.quarantineSeconds * 1000));
      },
    );
  }

  async suspend(ref: ResourceRef): Promise<PhoneNumberInstance> {
    return this.change(ref, "suspend", (_row, now) => ({ updateTime: now }));
  }

  async resume(ref: ResourceRef): Promise<PhoneNumberInstance> {
    return this.change(ref, "resume", (_row, now) => ({ updateTime: now }));
  }

  /** Completes a pending port-in: ACTIVE, activate_time now. */
  async completePortIn(ref: ResourceRef): Promise<PhoneNumberInstance> {
    return this.change(ref, "completePortIn", (_row, now) => ({ activateTime: now, updateTime: now }));
  }

  /**
   * Locks the instance, checks `action` against its state, writes the new
   * state plus `changes`, runs `also` — one transaction. An action leaving
   * the state as it is (suspending a suspended instance) writes nothing.
   */
  private change(
    ref: ResourceRef,
    action: LifecycleAction,
    changes: (row: PhoneNumberInstanceRow, now: Date) => Parameters<NumberingStore["instances"]["update"]>[1],
    also?: (store: NumberingStore, row: PhoneNumberInstanceRow, now: Date) => Promise<void>,
  ): Promise<PhoneNumberInstance> {
    const name = resourceName(COLLECTION, ref);
    return this.store.transaction(async (store) => {
      const row = await store.instances.lock(ref.projectId, ref.id);
      if (row === undefined) throw notFound(RESOURCE_TYPE, name);
      const state = transition(name, row.lifecycleState, action);
      const idempotent = (action === "suspend" || action === "resume") && state === row.lifecycleState;
      if (!idempotent) {
        const now = this.clock.now();
        await store.instances.update(row.id, { ...changes(row, now), lifecycleState: state });
        await also?.(store, row, now);
      }
      return toInstance((await store.instances.find(ref.projectId, ref.id))!);
    });
  }

  /** Splits a range: the first `size` numbers stay, the rest form a new range. */
  async split(
    ref: ResourceRef,
    size: number,
  ): Promise<{ first: PhoneNumberInstance; second: PhoneNumberInstance }> {
    const name = resourceName(COLLECTION, ref);
    return this.store.transaction(async (store) => {
      const row = await store.instances.lock(ref.projectId, ref.id);
      if (row === undefined) throw notFound(RESOURCE_TYPE, name);
      transition(name, row.lifecycleState, "change");
      const span =
        row.rangeEnd !== null && row.rangeSize !== null
          ? { start: row.phoneNumber, end: row.rangeEnd, size: row.rangeSize }
          : undefined;
      const plan = planSplit(name, span, size);
      const now = this.clock.now();
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

  /** Moves the instance (a range whole) to `destinationProjectId`. */
  async move(ref: ResourceRef, destinationProjectId: string): Promise<PhoneNumberInstance> {
    if (destinationProjectId === ref.projectId) {
      throw badField(
        "destination_parent",
        `the instance is already in ${projectName(ref.projectId)}; name another project`,
        "move.same_project",
      );
    }
    const name = resourceName(COLLECTION, ref);
    return this.store.transaction(async (store) => {
      const row = await store.instances.lock(ref.projectId, ref.id);
      if (row === undefined) throw notFound(RESOURCE_TYPE, name);
      transition(name, row.lifecycleState, "change");
      try {
        await store.instances.update(row.id, {
          projectId: destinationProjectId,
          regulatoryListingId: null,
          updateTime: this.clock.now(),
        });
      } catch (err) {
        throw this.mapForeignKey(err, destinationProjectId);
      }
      return toInstance((await store.instances.find(destinationProjectId, row.id))!);
    });
  }

  /** The instance that incoming traffic to `phoneNumber` belongs to (its range's, for a number in one). */
  async findByNumber(phoneNumber: string): Promise<PhoneNumberInstance | undefined> {
    if (!isE164(phoneNumber)) return undefined;
    const record = await this.store.instances.holderOf(phoneNumber);
    return record === undefined ? undefined : toInstance(record);
  }
}

function emptyConfig(): InstanceConfig {
  return {
    displayName: "",
    labels: {},
    incomingMessageHandlerUris: [],
    incomingCallHandlerUris: [],
    callRecordingTrigger: undefined,
  };
}

function definedOnly<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
