/**
 * Regulatory listings: the end user (a person or a business at an address)
 * behind the phone numbers of a project. The rules of the interface
 * document live here; the service only maps proto <-> these types.
 *
 * Rules (violations are INVALID_ARGUMENT naming the proto field path):
 * - display name: at most 100 characters.
 * - address: required on create, then immutable. One or two non-blank lines
 *   of at most 200 characters; locality and administrative area at most 200;
 *   postal code at most 16; region code a known ISO 3166-1 alpha-2 code,
 *   capitalised (see `isRegionCode`).
 * - region-dependent address rules (`REGION_ADDRESS_RULES`): AU and NZ need a
 *   locality, an administrative area and a postcode of exactly 4 digits; US
 *   the same with exactly 5 digits.
 * - exactly one of person (given and family name, each required, at most
 *   100) or business (legal name, required, at most 200) on create, then
 *   immutable.
 * - output-only fields (name, create_time, valid, verified) are never taken
 *   from input.
 *
 * `valid` (output only): a listing is valid when its data meets every rule
 * above (`listingViolations` finds none). Creation refuses data that breaks
 * them, so a new listing starts valid; address and entity are immutable, so
 * no update changes the outcome. The value is stored because the operator's
 * review may later set it false (the interface says it "may change after
 * manual review"). `verified` starts false and only the operator sets it.
 *
 * Searching: a listing is usable for a number of some type in a region when
 * it is valid, its address is in that region, and it is verified when the
 * type requires verification (`NUMBER_TYPES_REQUIRING_VERIFICATION`,
 * `isListingUsableFor`). A phone number instance's `compliant` applies the
 * same rule to its attached listing, so search and compliance always agree.
 *
 * Review (admin API): the operator sets `valid` and/or `verified`; search
 * results and the `compliant` of instances using the listing follow at once.
 *
 * Deleting: a listing attached to a phone number instance that is not
 * deleted (ACTIVE, SUSPENDED or PENDING: each still holds its number) cannot
 * be deleted — FAILED_PRECONDITION `LISTING_IN_USE` naming the instance.
 * The check and the delete run in one transaction holding the listing's row
 * lock, so an instance attaching the listing at the same moment is either
 * seen or refused.
 */
import { getCountries } from "libphonenumber-js/max";
import {
  badField,
  type FieldViolation,
  failedPrecondition,
  invalidArgument,
  notFound,
} from "../../api/errors.js";
import { hasCreateToRecord, recordCreated } from "../../api/idempotency/scope.js";
import { newResourceId } from "../../api/ids.js";
import { charLength } from "../../api/labels.js";
import { projectName, type ResourceRef, resourceName } from "../../api/names.js";
import { type PageResult, readPage } from "../../api/pagination.js";
import type { Clock } from "../../clock.js";
import { isUniqueViolation } from "../../db/client.js";
import type { RegulatoryListingRow } from "../../db/schema/index.js";
import type { NumberingStore } from "../store.js";
import type { RegulatoryListingsRepository } from "./repository.js";

export const RESOURCE_TYPE = "numbering.api.enfonica.com/RegulatoryListing";
export const COLLECTION = "regulatoryListings";

export interface Address {
  addressLines: string[];
  locality: string;
  administrativeArea: string;
  postalCode: string;
  regionCode: string;
}

export type Entity =
  | { kind: "person"; givenName: string; familyName: string }
  | { kind: "business"; business: string };

export interface RegulatoryListing {
  projectId: string;
  id: string;
  name: string;
  displayName: string;
  address: Address;
  entity: Entity;
  valid: boolean;
  verified: boolean;
  createTime: Date;
}

export interface NewRegulatoryListing {
  displayName: string;
  address: Address | undefined;
  entity: Entity | undefined;
}

export interface ListingChanges {
  displayName: string;
}

/** Phone number types of the numbering API (PhoneNumber.PhoneNumberType without UNSPECIFIED). */
export type NumberType = "LOCAL" | "NATIONAL" | "MOBILE" | "TOLL_FREE" | "SHARED_RATE";

/**
 * Number types for which a listing must be verified by the operator before
 * numbers of that type can use it. LOCAL (geographic) numbers only need a
 * valid listing in the region; national, mobile, toll-free and shared-rate
 * numbers are not tied to a place and regulators ask for a checked identity.
 */
export const NUMBER_TYPES_REQUIRING_VERIFICATION: ReadonlySet<NumberType> = new Set<NumberType>([
  "NATIONAL",
  "MOBILE",
  "TOLL_FREE",
  "SHARED_RATE",
]);

/**
 * Whether a listing may be used for a number of `numberType` in `region`:
 * valid, addressed in that region, and verified when the type needs it.
 */
export function isListingUsableFor(
  listing: { valid: boolean; verified: boolean; regionCode: string },
  region: string,
  numberType: NumberType,
): boolean {
  return (
    listing.valid &&
    listing.regionCode === region &&
    (listing.verified || !NUMBER_TYPES_REQUIRING_VERIFICATION.has(numberType))
  );
}

/** Region-dependent address rules of the interface document. */
export const REGION_ADDRESS_RULES: Readonly<Record<string, { postalCodeDigits: number }>> = {
  AU: { postalCodeDigits: 4 },
  NZ: { postalCodeDigits: 4 },
  US: { postalCodeDigits: 5 },
};

export const LIMITS = {
  displayName: 100,
  addressLines: 2,
  addressLine: 200,
  locality: 200,
  administrativeArea: 200,
  postalCode: 16,
  personName: 100,
  business: 200,
} as const;

/**
 * Known region codes: the regions of libphonenumber-js (Google's
 * libphonenumber metadata, kept current with the ITU numbering plans). They
 * are the ISO 3166-1 alpha-2 codes of every country and territory with a
 * telephone numbering plan, plus AC (Ascension), TA (Tristan da Cunha) and
 * XK (Kosovo), which have their own plans. Uninhabited territories without
 * numbers (AQ, BV, HM, ...) are absent: no listing is needed there.
 */
const REGION_CODES: ReadonlySet<string> = new Set(getCountries());

export function isRegionCode(code: string): boolean {
  return REGION_CODES.has(code);
}

const F = {
  displayName: "regulatory_listing.display_name",
  address: "regulatory_listing.address",
  addressLines: "regulatory_listing.address.address_lines",
  locality: "regulatory_listing.address.locality",
  administrativeArea: "regulatory_listing.address.administrative_area",
  postalCode: "regulatory_listing.address.postal_code",
  regionCode: "regulatory_listing.address.region_code",
  entity: "regulatory_listing.entity",
  givenName: "regulatory_listing.person.given_name",
  familyName: "regulatory_listing.person.family_name",
  business: "regulatory_listing.business.business",
} as const;

function blank(s: string): boolean {
  return s.trim() === "";
}

function tooLong(violations: FieldViolation[], field: string, value: string, max: number): void {
  if (charLength(value) > max) {
    violations.push({ field, description: `must be at most ${max} characters`, reason: "string.max_len" });
  }
}

function required(violations: FieldViolation[], field: string, value: string, why = "is required"): void {
  if (blank(value)) violations.push({ field, description: why, reason: "required" });
}

export function displayNameViolations(displayName: string): FieldViolation[] {
  const violations: FieldViolation[] = [];
  tooLong(violations, F.displayName, displayName, LIMITS.displayName);
  return violations;
}

export function addressViolations(address: Address | undefined): FieldViolation[] {
  const violations: FieldViolation[] = [];
  if (address === undefined) {
    violations.push({ field: F.address, description: "an address is required", reason: "required" });
    return violations;
  }
  const lines = address.addressLines;
  if (lines.length < 1 || lines.length > LIMITS.addressLines) {
    violations.push({
      field: F.addressLines,
      description: `must have 1 to ${LIMITS.addressLines} lines`,
      reason: "repeated.items",
    });
  }
  lines.forEach((line, i) => {
    required(violations, `${F.addressLines}[${i}]`, line, "must not be blank");
    tooLong(violations, `${F.addressLines}[${i}]`, line, LIMITS.addressLine);
  });
  tooLong(violations, F.locality, address.locality, LIMITS.locality);
  tooLong(violations, F.administrativeArea, address.administrativeArea, LIMITS.administrativeArea);
  tooLong(violations, F.postalCode, address.postalCode, LIMITS.postalCode);
  if (!isRegionCode(address.regionCode)) {
    violations.push({
      field: F.regionCode,
      description: "must be a known ISO 3166-1 alpha-2 region code, capitalised (for example AU)",
      reason: "region_code.unknown",
    });
    return violations;
  }
  const rule = REGION_ADDRESS_RULES[address.regionCode];
  if (rule !== undefined) {
    const region = address.regionCode;
    required(violations, F.locality, address.locality, `is required in ${region}`);
    required(violations, F.administrativeArea, address.administrativeArea, `is required in ${region}`);
    const digits = new RegExp(`^[0-9]{${rule.postalCodeDigits}}$`);
    if (!digits.test(address.postalCode)) {
      violations.push({
        field: F.postalCode,
        description: `must be exactly ${rule.postalCodeDigits} digits in ${region}`,
        reason: "postal_code.format",
      });
    }
  }
  return violations;
}

export function entityViolations(entity: Entity | undefined): FieldViolation[] {
  const violations: FieldViolation[] = [];
  if (entity === undefined) {
    violations.push({
      field: F.entity,
      description: "exactly one of person or business is required",
      reason: "oneof.required",
    });
  } else if (entity.kind === "person") {
    required(violations, F.givenName, entity.givenName);
    tooLong(violations, F.givenName, entity.givenName, LIMITS.personName);
    required(violations, F.familyName, entity.familyName);
    tooLong(violations, F.familyName, entity.familyName, LIMITS.personName);
  } else {
    required(violations, F.business, entity.business);
    tooLong(violations, F.business, entity.business, LIMITS.business);
  }
  return violations;
}

/** Every rule a listing's data must meet; empty when it meets them all. */
export function listingViolations(listing: NewRegulatoryListing): FieldViolation[] {
  return [
    ...displayNameViolations(listing.displayName),
    ...addressViolations(listing.address),
    ...entityViolations(listing.entity),
  ];
}

/** The `valid` rule: the data meets every rule (see the file comment). */
export function isValidListing(listing: NewRegulatoryListing): boolean {
  return listingViolations(listing).length === 0;
}

export function toListing(row: RegulatoryListingRow): RegulatoryListing {
  const ref = { projectId: row.projectId, id: row.id };
  const entity: Entity =
    row.businessName !== null
      ? { kind: "business", business: row.businessName }
      : { kind: "person", givenName: row.personGivenName ?? "", familyName: row.personFamilyName ?? "" };
  return {
    ...ref,
    name: resourceName(COLLECTION, ref),
    displayName: row.displayName,
    address: {
      addressLines: row.addressLines,
      locality: row.locality,
      administrativeArea: row.administrativeArea,
      postalCode: row.postalCode,
      regionCode: row.regionCode,
    },
    entity,
    valid: row.valid,
    verified: row.verified,
    createTime: row.createTime,
  };
}

export interface PageParams {
  pageSize: number;
  pageToken: string;
}

const MAX_ID_ATTEMPTS = 3;

export interface ListingReview {
  valid?: boolean;
  verified?: boolean;
}

export class RegulatoryListingsDomain {
  private readonly repository: RegulatoryListingsRepository;

  constructor(
    private readonly store: NumberingStore,
    private readonly clock: Clock,
  ) {
    this.repository = store.listings;
  }

  async create(projectId: string, input: NewRegulatoryListing): Promise<RegulatoryListing> {
    const violations = listingViolations(input);
    if (violations.length > 0) throw invalidArgument(violations);
    const address = input.address!;
    const entity = input.entity!;
    const now = this.clock.now();
    for (let attempt = 1; ; attempt++) {
      try {
        const id = newResourceId();
        const values = {
          id,
          projectId,
          displayName: input.displayName,
          addressLines: address.addressLines,
          locality: address.locality,
          administrativeArea: address.administrativeArea,
          postalCode: address.postalCode,
          regionCode: address.regionCode,
          personGivenName: entity.kind === "person" ? entity.givenName : null,
          personFamilyName: entity.kind === "person" ? entity.familyName : null,
          businessName: entity.kind === "business" ? entity.business : null,
          valid: isValidListing(input),
          verified: false,
          createTime: now,
          updateTime: now,
        };
        // With an Idempotency-Key (src/api/idempotency/) the key is committed
        // with the listing; without one, the single insert is atomic by itself.
        const row = hasCreateToRecord()
          ? await this.store.transaction(async (s) => {
              const inserted = await s.listings.insert(values);
              await recordCreated(s.db, resourceName(COLLECTION, { projectId, id }));
              return inserted;
            })
          : await this.repository.insert(values);
        return toListing(row);
      } catch (err) {
        // An id collision (about 2^-82) gets a new id; anything else is a defect.
        if (attempt < MAX_ID_ATTEMPTS && isUniqueViolation(err, "regulatory_listings_pkey")) continue;
        throw err;
      }
    }
  }

  async get(ref: ResourceRef): Promise<RegulatoryListing> {
    const row = await this.repository.find(ref.projectId, ref.id);
    if (row === undefined) throw notFound(RESOURCE_TYPE, resourceName(COLLECTION, ref));
    return toListing(row);
  }

  async list(projectId: string, page: PageParams): Promise<PageResult<RegulatoryListing>> {
    const result = await readPage(
      { ...page, query: { method: "ListRegulatoryListings", parent: projectName(projectId) } },
      (after, limit) => this.repository.list(projectId, after, limit),
    );
    return { items: result.items.map(toListing), nextPageToken: result.nextPageToken };
  }

  /** Changes the mutable fields of a listing (the display name). */
  async update(ref: ResourceRef, changes: ListingChanges): Promise<RegulatoryListing> {
    const violations = displayNameViolations(changes.displayName);
    if (violations.length > 0) throw invalidArgument(violations);
    const row = await this.repository.updateDisplayName(
      ref.projectId,
      ref.id,
      changes.displayName,
      this.clock.now(),
    );
    if (row === undefined) throw notFound(RESOURCE_TYPE, resourceName(COLLECTION, ref));
    return toListing(row);
  }

  /**
   * Deletes a listing, unless a phone number instance that is not deleted
   * uses it (FAILED_PRECONDITION `LISTING_IN_USE` naming the instance).
   */
  async delete(ref: ResourceRef): Promise<void> {
    const name = resourceName(COLLECTION, ref);
    await this.store.transaction(async (store) => {
      const listing = await store.listings.lock(ref.projectId, ref.id);
      if (listing === undefined) throw notFound(RESOURCE_TYPE, name);
      const user = await store.instances.anyAttached(listing.id);
      if (user !== undefined) {
        const instance = `projects/${user.projectId}/phoneNumberInstances/${user.id}`;
        throw failedPrecondition(
          "LISTING_IN_USE",
          `${name} is attached to ${instance} (${user.lifecycleState}); delete that instance first`,
          { listing: name, phone_number_instance: instance },
        );
      }
      await store.listings.delete(ref.projectId, ref.id);
    });
  }

  /** The operator's review: sets `valid` and/or `verified` (those given). */
  async review(ref: ResourceRef, review: ListingReview): Promise<RegulatoryListing> {
    const row = await this.repository.setReview(ref.projectId, ref.id, review, this.clock.now());
    if (row === undefined) throw notFound(RESOURCE_TYPE, resourceName(COLLECTION, ref));
    return toListing(row);
  }

  /** The listings usable for numbers of `numberType` in `regionCode`, newest first. */
  async search(
    projectId: string,
    regionCode: string,
    numberType: NumberType,
    page: PageParams,
  ): Promise<PageResult<RegulatoryListing>> {
    if (!isRegionCode(regionCode)) {
      throw badField(
        "region_code",
        "must be a known ISO 3166-1 alpha-2 region code, capitalised (for example AU)",
        "region_code.unknown",
      );
    }
    const query = {
      method: "SearchRegulatoryListings",
      parent: projectName(projectId),
      region_code: regionCode,
      number_type: numberType,
    };
    const verifiedOnly = NUMBER_TYPES_REQUIRING_VERIFICATION.has(numberType);
    const result = await readPage({ ...page, query }, (after, limit) =>
      this.repository.search(projectId, { regionCode, verifiedOnly }, after, limit),
    );
    return { items: result.items.map(toListing), nextPageToken: result.nextPageToken };
  }
}
