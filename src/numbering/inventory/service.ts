/**
 * The PhoneNumbers service (inventory search): maps proto requests to the
 * inventory domain and inventory numbers back to PhoneNumber protos.
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  PhoneNumber_PhoneNumberCapability as CapabilityProto,
  PhoneNumber_PhoneNumberType as NumberTypeProto,
  type PhoneNumber,
  PhoneNumberSchema,
  type PhoneNumbers,
} from "../../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { type NumberType, phoneNumberName } from "../numbers.js";
import type { Capability, InventoryDomain, InventoryNumber } from "./domain.js";

const TYPE_TO_PROTO: Readonly<Record<NumberType, NumberTypeProto>> = {
  LOCAL: NumberTypeProto.LOCAL,
  NATIONAL: NumberTypeProto.NATIONAL,
  MOBILE: NumberTypeProto.MOBILE,
  TOLL_FREE: NumberTypeProto.TOLL_FREE,
  SHARED_RATE: NumberTypeProto.SHARED_RATE,
};

const CAPABILITY_TO_PROTO: Readonly<Record<Capability, CapabilityProto>> = {
  SMS: CapabilityProto.SMS,
  MMS: CapabilityProto.MMS,
  VOICE: CapabilityProto.VOICE,
};

/** PhoneNumberType -> our value; undefined for UNSPECIFIED (or an unknown value). */
export function numberTypeFromProto(type: NumberTypeProto): NumberType | undefined {
  return (Object.keys(TYPE_TO_PROTO) as NumberType[]).find((k) => TYPE_TO_PROTO[k] === type);
}

/** PhoneNumberCapability list -> ours (UNSPECIFIED and unknown values dropped). */
export function capabilitiesFromProto(capabilities: readonly CapabilityProto[]): Capability[] {
  return (Object.keys(CAPABILITY_TO_PROTO) as Capability[]).filter((c) =>
    capabilities.includes(CAPABILITY_TO_PROTO[c]),
  );
}

export function phoneNumberToProto(n: InventoryNumber): PhoneNumber {
  return create(PhoneNumberSchema, {
    name: phoneNumberName(n.phoneNumber),
    phoneNumber: n.phoneNumber,
    capabilities: n.capabilities.map((c) => CAPABILITY_TO_PROTO[c]),
    sku: n.sku,
    activationSku: n.activationSku,
    numberType: TYPE_TO_PROTO[n.numberType],
    countryCode: n.countryCode,
  });
}

export function phoneNumbersService(domain: InventoryDomain): ServiceImpl<typeof PhoneNumbers> {
  return {
    async searchPhoneNumbers(req) {
      const page = await domain.search({
        countryCode: req.countryCode,
        numberType: numberTypeFromProto(req.numberType),
        prefix: req.prefix,
        supportsVoice: req.supportsVoice,
        supportsSms: req.supportsSms,
        supportsMms: req.supportsMms,
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return { phoneNumbers: page.items.map(phoneNumberToProto), nextPageToken: page.nextPageToken };
    },
  };
}
