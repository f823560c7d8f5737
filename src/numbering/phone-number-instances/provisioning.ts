/**
 * Provisioning: new instances, each holding its numbers.
 *
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
 *   number of the range belongs to it (`findByNumber`, lookup.ts).
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
 * The requests are checked first (validation.ts).
 */

import { alreadyExists, failedPrecondition, invalidArgument, notFound } from "../../api/errors.js";
import { recordCreated } from "../../api/idempotency/scope.js";
import { newResourceId } from "../../api/ids.js";
import { type ResourceRef, resourceName } from "../../api/names.js";
import type { LifecycleStateValue, NewPhoneNumberInstanceRow } from "../../db/schema/index.js";
import { capabilitiesOf, defaultSkus, type InventoryNumber, PHONE_NUMBER_TYPE } from "../inventory/domain.js";
import { phoneNumberName, rangeEnd } from "../numbers.js";
import { RESOURCE_TYPE as LISTING_TYPE, COLLECTION as LISTINGS } from "../regulatory-listings/domain.js";
import type { NumberingStore } from "../store.js";
import type { InstancesContext } from "./context.js";
import { mapForeignKey } from "./foreign-keys.js";
import {
  type InstanceConfig,
  instanceName,
  type NewInstance,
  type NewPortIn,
  type NewRange,
  type PhoneNumberInstance,
  RESOURCE_TYPE,
} from "./model.js";
import { toInstance } from "./records.js";
import {
  configViolations,
  listingRef,
  requestedNumber,
  requestedPortIn,
  requestedRange,
} from "./validation.js";

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

/** Provisions one inventory number (CreatePhoneNumberInstance). */
export async function createInstance(
  ctx: InstancesContext,
  projectId: string,
  input: NewInstance,
): Promise<PhoneNumberInstance> {
  const { number, violations } = requestedNumber(input.phoneNumber);
  violations.push(...configViolations(input));
  const ref = listingRef(projectId, input.regulatoryListing, "regulatory_listing", violations);
  if (violations.length > 0 || number === undefined) throw invalidArgument(violations);
  return ctx.store.transaction(async (store) => {
    const item = await store.inventory.find(number);
    if (item === undefined) throw notFound(PHONE_NUMBER_TYPE, phoneNumberName(number));
    const created = await provision(ctx, store, {
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
      listingId: await listingId(store, ref),
    });
    // Idempotency-Key (src/api/idempotency/): committed with the instance.
    await recordCreated(store.db, created.name);
    return created;
  });
}

/** Provisions a contiguous block of inventory numbers as a range (admin). */
export async function provisionRange(
  ctx: InstancesContext,
  projectId: string,
  input: NewRange,
): Promise<PhoneNumberInstance> {
  const { end, violations } = requestedRange(input);
  const ref = listingRef(projectId, input.regulatoryListing, "regulatory_listing", violations);
  if (violations.length > 0 || end === undefined) throw invalidArgument(violations);
  const start = input.startPhoneNumber;
  return ctx.store.transaction(async (store) => {
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
    return provision(ctx, store, {
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
      listingId: await listingId(store, ref),
    });
  });
}

/** Registers a port-in of a number from another carrier (admin): PENDING until completed. */
export async function portIn(
  ctx: InstancesContext,
  projectId: string,
  input: NewPortIn,
): Promise<PhoneNumberInstance> {
  const { facts, violations } = requestedPortIn(input);
  const ref = listingRef(projectId, input.regulatoryListing, "regulatory_listing", violations);
  if (violations.length > 0 || facts === undefined) throw invalidArgument(violations);
  return ctx.store.transaction(async (store) => {
    if ((await store.inventory.find(input.phoneNumber)) !== undefined) {
      throw failedPrecondition(
        "NUMBER_IN_INVENTORY",
        `${input.phoneNumber} is in this service's inventory: provision it with CreatePhoneNumberInstance instead of porting it in`,
        { phone_number: input.phoneNumber },
      );
    }
    const skus = defaultSkus(facts.country, facts.type);
    return provision(ctx, store, {
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
      listingId: await listingId(store, ref),
    });
  });
}

/** Inserts the instance and claims its numbers, inside `store`'s transaction. */
async function provision(
  ctx: InstancesContext,
  store: NumberingStore,
  p: Provision,
): Promise<PhoneNumberInstance> {
  const now = ctx.clock.now();
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
    throw mapForeignKey(err, p.projectId);
  }
  const claimed = await store.holdings.claim(id, p.start, p.size, now);
  if (claimed < p.size) throw await whyTaken(store, p.projectId, id, p.start, end, now);
  return toInstance((await store.instances.find(p.projectId, id))!);
}

/** The error for numbers from `start` to `end` that could not all be claimed. */
async function whyTaken(
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
  return alreadyExists(PHONE_NUMBER_TYPE, phoneNumberName(number), `${number}${of} is already provisioned`, {
    phone_number: number,
  });
}

/** The id of the listing `ref` names (NOT_FOUND when it does not exist); null for none. */
async function listingId(store: NumberingStore, ref: ResourceRef | undefined): Promise<string | null> {
  if (ref === undefined) return null;
  const listing = await store.listings.find(ref.projectId, ref.id);
  if (listing === undefined) throw notFound(LISTING_TYPE, resourceName(LISTINGS, ref));
  return listing.id;
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
