/** The inventory's numbers as the numbers page and the operator's inventory show them. */
import {
  PhoneNumber_PhoneNumberCapability as Capability,
  PhoneNumber_PhoneNumberType as NumberType,
  type PhoneNumber,
} from "../../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { enumName } from "../kit/format.js";
import type { Column } from "../kit/table.js";

/** The types a number can have, UNSPECIFIED aside. */
export const NUMBER_TYPES = [
  NumberType.LOCAL,
  NumberType.NATIONAL,
  NumberType.MOBILE,
  NumberType.TOLL_FREE,
  NumberType.SHARED_RATE,
];

/** The columns Number, Type and Capabilities. */
export const PHONE_NUMBER_COLUMNS: Column<PhoneNumber>[] = [
  { header: "Number", cell: (n) => <code>{n.phoneNumber}</code> },
  { header: "Type", cell: (n) => enumName(NumberType, n.numberType) },
  { header: "Capabilities", cell: (n) => n.capabilities.map((c) => enumName(Capability, c)).join(", ") },
];
