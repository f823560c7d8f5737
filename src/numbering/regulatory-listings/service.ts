/**
 * The RegulatoryListings service: maps proto requests to the domain and
 * domain listings back to protos. Rules live in domain.ts; protovalidate has
 * already checked each request against its `buf.validate` rules.
 */
import { create } from "@bufbuild/protobuf";
import { EmptySchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { PhoneNumber_PhoneNumberType } from "../../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import {
  type GenericAddress,
  type RegulatoryListing as RegulatoryListingProto,
  RegulatoryListingSchema,
  type RegulatoryListings,
} from "../../../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { badField } from "../../api/errors.js";
import { parseParent, parseResourceName } from "../../api/names.js";
import { applyUpdateMask, checkUpdateMask } from "../../api/update-mask.js";
import {
  type Address,
  COLLECTION,
  type Entity,
  type NumberType,
  type RegulatoryListing,
  type RegulatoryListingsDomain,
} from "./domain.js";

function addressFromProto(address: GenericAddress | undefined): Address | undefined {
  if (address === undefined) return undefined;
  return {
    addressLines: [...address.addressLines],
    locality: address.locality,
    administrativeArea: address.administrativeArea,
    postalCode: address.postalCode,
    regionCode: address.regionCode,
  };
}

function entityFromProto(listing: RegulatoryListingProto): Entity | undefined {
  switch (listing.entity.case) {
    case "person":
      return {
        kind: "person",
        givenName: listing.entity.value.givenName,
        familyName: listing.entity.value.familyName,
      };
    case "business":
      return { kind: "business", business: listing.entity.value.business };
    default:
      return undefined;
  }
}

export function listingToProto(listing: RegulatoryListing): RegulatoryListingProto {
  const entity = listing.entity;
  return create(RegulatoryListingSchema, {
    name: listing.name,
    displayName: listing.displayName,
    address: { ...listing.address, addressLines: [...listing.address.addressLines] },
    entity:
      entity.kind === "person"
        ? { case: "person", value: { givenName: entity.givenName, familyName: entity.familyName } }
        : { case: "business", value: { business: entity.business } },
    createTime: timestampFromDate(listing.createTime),
    valid: listing.valid,
    verified: listing.verified,
  });
}

const NUMBER_TYPES: Readonly<Partial<Record<PhoneNumber_PhoneNumberType, NumberType>>> = {
  [PhoneNumber_PhoneNumberType.LOCAL]: "LOCAL",
  [PhoneNumber_PhoneNumberType.NATIONAL]: "NATIONAL",
  [PhoneNumber_PhoneNumberType.MOBILE]: "MOBILE",
  [PhoneNumber_PhoneNumberType.TOLL_FREE]: "TOLL_FREE",
  [PhoneNumber_PhoneNumberType.SHARED_RATE]: "SHARED_RATE",
};

export function regulatoryListingsService(
  domain: RegulatoryListingsDomain,
): ServiceImpl<typeof RegulatoryListings> {
  return {
    async createRegulatoryListing(req) {
      const listing = req.regulatoryListing!;
      const created = await domain.create(parseParent(req.parent), {
        displayName: listing.displayName,
        address: addressFromProto(listing.address),
        entity: entityFromProto(listing),
      });
      return listingToProto(created);
    },

    async getRegulatoryListing(req) {
      return listingToProto(await domain.get(parseResourceName(req.name, COLLECTION, "name")));
    },

    async listRegulatoryListings(req) {
      const page = await domain.list(parseParent(req.parent), {
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return { regulatoryListings: page.items.map(listingToProto), nextPageToken: page.nextPageToken };
    },

    async updateRegulatoryListing(req) {
      const patch = req.regulatoryListing!;
      const ref = parseResourceName(patch.name, COLLECTION, "regulatory_listing.name");
      checkUpdateMask(RegulatoryListingSchema, req.updateMask);
      const current = await domain.get(ref);
      const { resource, applied } = applyUpdateMask({
        schema: RegulatoryListingSchema,
        current: listingToProto(current),
        patch,
        mask: req.updateMask,
        resourceField: "regulatory_listing",
      });
      if (applied.length === 0) return listingToProto(current);
      return listingToProto(await domain.update(ref, { displayName: resource.displayName }));
    },

    async deleteRegulatoryListing(req) {
      await domain.delete(parseResourceName(req.name, COLLECTION, "name"));
      return create(EmptySchema);
    },

    async searchRegulatoryListings(req) {
      // protovalidate admits only defined, non-zero number types; this is a second guard.
      const numberType = NUMBER_TYPES[req.numberType];
      if (numberType === undefined) throw badField("number_type", "a number type is required", "required");
      const page = await domain.search(parseParent(req.parent), req.regionCode, numberType, {
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return { regulatoryListings: page.items.map(listingToProto), nextPageToken: page.nextPageToken };
    },
  };
}
