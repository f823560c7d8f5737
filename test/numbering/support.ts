/**
 * Helpers of the numbering tests: blocks of fictional numbers that no two
 * tests of a file share (the inventory is global, not per project), and
 * shorthands for the admin and public clients.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import {
  type PhoneNumberInstance,
  PhoneNumberInstances,
} from "../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import {
  PhoneNumber_PhoneNumberCapability as Capability,
  PhoneNumber_PhoneNumberType as NumberType,
  PhoneNumbers,
} from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import {
  type RegulatoryListing,
  type RegulatoryListingSchema,
  RegulatoryListings,
} from "../../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import {
  type NumberBlock,
  type NumberBlockSchema,
  NumberingAdmin,
} from "../../gen/switchboard/admin/v1/numbering_pb.js";
import type { Clock } from "../../src/clock.js";
import type { Db } from "../../src/db/client.js";
import { createTestClient } from "../support/app.js";

export { Capability, NumberType };

/** The AU geographic numbers ACMA reserves for fiction: (02|03|07|08) 5550 xxxx. */
const AREAS = ["2", "3", "7", "8"];

/**
 * A source of distinct 100-number blocks of fictional AU numbers
 * (`+61255501200` .. `+61255501299`), 400 in all; each block has its own
 * 10-digit prefix (`+612555012`).
 */
export function blockAllocator(): () => string {
  let k = 0;
  return () => {
    if (k >= 400) throw new Error("out of fictional test blocks");
    const area = AREAS[Math.floor(k / 100)]!;
    const start = `+61${area}5550${String(k % 100).padStart(2, "0")}00`;
    k++;
    return start;
  };
}

/** `start` + n, for E.164 numbers in tests. */
export function plus(start: string, n: number): string {
  return `+${(BigInt(start.slice(1)) + BigInt(n)).toString()}`;
}

export const AU_ADDRESS = {
  addressLines: ["Level 3, 1 George Street"],
  locality: "Sydney",
  administrativeArea: "NSW",
  postalCode: "2000",
  regionCode: "AU",
};

export const US_ADDRESS = {
  addressLines: ["1600 Pennsylvania Avenue NW"],
  locality: "Washington",
  administrativeArea: "DC",
  postalCode: "20500",
  regionCode: "US",
};

/** Plain objects to send (never a message). */
export type ListingInit = Exclude<MessageInitShape<typeof RegulatoryListingSchema>, RegulatoryListing>;
export type BlockInit = Exclude<MessageInitShape<typeof NumberBlockSchema>, NumberBlock>;

export function businessListing(address: ListingInit["address"] = AU_ADDRESS): ListingInit {
  return {
    displayName: "Example",
    address,
    entity: { case: "business", value: { business: "Example Pty Ltd" } },
  };
}

export interface NumberingClients {
  instances: Client<typeof PhoneNumberInstances>;
  numbers: Client<typeof PhoneNumbers>;
  listings: Client<typeof RegulatoryListings>;
  admin: Client<typeof NumberingAdmin>;
}

export function numberingClients(db: Db, clock: Clock): NumberingClients {
  return {
    instances: createTestClient(PhoneNumberInstances, db, clock),
    numbers: createTestClient(PhoneNumbers, db, clock),
    listings: createTestClient(RegulatoryListings, db, clock),
    admin: createTestClient(NumberingAdmin, db, clock),
  };
}

/** Adds a block of AU LOCAL voice numbers (or as `init` says) and returns its first number. */
export async function addBlock(
  c: NumberingClients,
  start: string,
  size = 100,
  init: Partial<BlockInit> = {},
): Promise<string> {
  await c.admin.createNumberBlock({
    numberBlock: {
      startPhoneNumber: start,
      size,
      numberType: NumberType.LOCAL,
      capabilities: [Capability.VOICE],
      countryCode: "AU",
      ...init,
    },
  });
  return start;
}

/** Provisions `number` to `parent` (optionally with a listing). */
export function provision(
  c: NumberingClients,
  parent: string,
  number: string,
  regulatoryListing = "",
): Promise<PhoneNumberInstance> {
  return c.instances.createPhoneNumberInstance({
    parent,
    phoneNumberInstance: { phoneNumber: { phoneNumber: number } },
    regulatoryListing,
  });
}

export function createListing(
  c: NumberingClients,
  parent: string,
  listing: ListingInit = businessListing(),
): Promise<RegulatoryListing> {
  return c.listings.createRegulatoryListing({ parent, regulatoryListing: listing });
}

/** Every free number of a search, all pages. */
export async function searchAll(
  c: NumberingClients,
  request: { countryCode: string; prefix?: string; numberType?: NumberType },
): Promise<string[]> {
  const out: string[] = [];
  let pageToken = "";
  do {
    const page = await c.numbers.searchPhoneNumbers({ ...request, pageSize: 100, pageToken });
    out.push(...page.phoneNumbers.map((n) => n.phoneNumber));
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return out;
}

/** Every instance of a project, all pages. */
export async function listAll(
  c: NumberingClients,
  parent: string,
  options: { prefix?: string; includeDeleted?: boolean } = {},
): Promise<PhoneNumberInstance[]> {
  const out: PhoneNumberInstance[] = [];
  let pageToken = "";
  do {
    const page = await c.instances.listPhoneNumberInstances({ parent, pageSize: 100, pageToken, ...options });
    out.push(...page.phoneNumberInstances);
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return out;
}
