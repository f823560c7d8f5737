/**
 * The admin NumberingAdmin service: the operator's numbering actions,
 * proto <-> the numbering domains (inventory, phone number instances,
 * regulatory listings). The rules live in those domains.
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type NumberBlock,
  NumberBlockSchema,
  type NumberingAdmin,
} from "../../gen/switchboard/admin/v1/numbering_pb.js";
import { parseParent, parseResourceName } from "../api/names.js";
import type { Block, InventoryDomain } from "../numbering/inventory/domain.js";
import {
  capabilitiesFromProto,
  numberTypeFromProto,
  phoneNumberToProto,
} from "../numbering/inventory/service.js";
import type { PhoneNumberInstancesDomain } from "../numbering/phone-number-instances/domain.js";
import { COLLECTION as INSTANCES } from "../numbering/phone-number-instances/model.js";
import { instanceToProto } from "../numbering/phone-number-instances/service.js";
import {
  COLLECTION as LISTINGS,
  type ListingReview,
  type RegulatoryListingsDomain,
} from "../numbering/regulatory-listings/domain.js";
import { listingToProto } from "../numbering/regulatory-listings/service.js";

function blockToProto(block: Block): NumberBlock {
  const first = phoneNumberToProto(block);
  return create(NumberBlockSchema, {
    startPhoneNumber: block.phoneNumber,
    endPhoneNumber: block.endPhoneNumber,
    size: block.size,
    numberType: first.numberType,
    capabilities: first.capabilities,
    countryCode: block.countryCode,
    sku: block.sku,
    activationSku: block.activationSku,
  });
}

export interface NumberingAdminDeps {
  inventory: InventoryDomain;
  instances: PhoneNumberInstancesDomain;
  listings: RegulatoryListingsDomain;
}

export function numberingAdminService(deps: NumberingAdminDeps): ServiceImpl<typeof NumberingAdmin> {
  const { inventory, instances, listings } = deps;
  const instance = (name: string) => parseResourceName(name, INSTANCES, "name");
  return {
    async createNumberBlock(req) {
      const b = req.numberBlock!;
      const block = await inventory.addBlock({
        startPhoneNumber: b.startPhoneNumber,
        size: b.size,
        countryCode: b.countryCode,
        numberType: numberTypeFromProto(b.numberType),
        capabilities: capabilitiesFromProto(b.capabilities),
        sku: b.sku,
        activationSku: b.activationSku,
      });
      return blockToProto(block);
    },

    async provisionPhoneNumberRange(req) {
      const created = await instances.provisionRange(parseParent(req.parent), {
        startPhoneNumber: req.startPhoneNumber,
        size: req.size,
        regulatoryListing: req.regulatoryListing,
      });
      return instanceToProto(created);
    },

    async portInPhoneNumber(req) {
      const created = await instances.portIn(parseParent(req.parent), {
        phoneNumber: req.phoneNumber,
        regulatoryListing: req.regulatoryListing,
      });
      return instanceToProto(created);
    },

    async completePortIn(req) {
      return instanceToProto(await instances.completePortIn(instance(req.name)));
    },

    async suspendPhoneNumberInstance(req) {
      return instanceToProto(await instances.suspend(instance(req.name)));
    },

    async resumePhoneNumberInstance(req) {
      return instanceToProto(await instances.resume(instance(req.name)));
    },

    async reviewRegulatoryListing(req) {
      const review: ListingReview = {};
      if (req.valid !== undefined) review.valid = req.valid;
      if (req.verified !== undefined) review.verified = req.verified;
      const listing = await listings.review(parseResourceName(req.name, LISTINGS, "name"), review);
      return listingToProto(listing);
    },
  };
}
