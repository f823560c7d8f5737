/**
 * `compliant` (output only, "a guide only"): the service's inference that a
 * phone number instance meets number regulations. It is true when the
 * instance has a regulatory listing attached that is usable for the number
 * — the listing is valid, its address is in the number's country, and it is
 * verified when the number's type requires verification (national, mobile,
 * toll-free and shared-rate numbers; not local ones). That is exactly the
 * rule SearchRegulatoryListings applies (`isListingUsableFor`).
 *
 * It is computed whenever an instance is read, from the listing as it is
 * then, so it follows the operator's review of the listing at once. An
 * instance without a listing (never attached, or detached by a move to
 * another project) is not compliant.
 */
import type { RegulatoryListingRow } from "../../db/schema/index.js";
import type { NumberType } from "../numbers.js";
import { isListingUsableFor } from "../regulatory-listings/domain.js";

export function isCompliant(
  number: { countryCode: string; numberType: NumberType },
  listing: Pick<RegulatoryListingRow, "valid" | "verified" | "regionCode"> | null,
): boolean {
  return listing !== null && isListingUsableFor(listing, number.countryCode, number.numberType);
}
