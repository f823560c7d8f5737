/**
 * Phone numbers as the numbering area handles them: E.164 strings
 * (`+61255501234`) with arithmetic on their digits.
 *
 * - A number is written `+` followed by 2 to 15 digits, the first not 0
 *   (`isE164`). Inventory and instances store exactly this form.
 * - Ranges are contiguous in the digits: the n-th number after `start` is
 *   `start + n`, computed with BigInt (15 digits exceed 2^53). A range never
 *   changes the number of digits (`+6129999` + 1 would), so every number of
 *   a range has the same length and compares like its digits.
 * - Country facts (region, type) come from libphonenumber-js's full metadata.
 */

import type { CountryCode } from "libphonenumber-js/max";
import { getCountryCallingCode, parsePhoneNumberFromString } from "libphonenumber-js/max";
import type { NumberTypeValue } from "../db/schema/index.js";

export type NumberType = NumberTypeValue;

const E164 = /^\+[1-9][0-9]{1,14}$/;

/** Whether `s` is written in E.164: `+`, then 2 to 15 digits, the first not 0. */
export function isE164(s: string): boolean {
  return E164.test(s);
}

/** The digits of an E.164 number as a BigInt. */
function digits(e164: string): bigint {
  return BigInt(e164.slice(1));
}

/**
 * `e164` + `n`, or undefined when the result would have another number of
 * digits (or more than 15): such a range does not exist.
 */
export function addToNumber(e164: string, n: number | bigint): string | undefined {
  const sum = digits(e164) + BigInt(n);
  if (sum < 0n) return undefined;
  const out = `+${sum.toString()}`;
  return out.length === e164.length ? out : undefined;
}

/** The last number of the range of `size` numbers starting at `start`, if it exists. */
export function rangeEnd(start: string, size: number): string | undefined {
  return size >= 1 ? addToNumber(start, size - 1) : undefined;
}

/** How many numbers from `start` to `end` inclusive (both E.164 of the same length). */
export function rangeSize(start: string, end: string): bigint {
  return digits(end) - digits(start) + 1n;
}

/** Whether `number` lies in [start, end] (all E.164; lengths must agree). */
export function inRange(number: string, start: string, end: string): boolean {
  if (number.length !== start.length) return false;
  const d = digits(number);
  return d >= digits(start) && d <= digits(end);
}

/** What libphonenumber knows about a number written in E.164, when it is a valid number. */
export interface NumberFacts {
  /** Region of the number (AU, US, ...). */
  country: string;
  /** Our classification of libphonenumber's type. */
  type: NumberType;
}

/** Region and type of a valid number, or undefined when libphonenumber finds it invalid. */
export function numberFacts(e164: string): NumberFacts | undefined {
  if (!isE164(e164)) return undefined;
  const parsed = parsePhoneNumberFromString(e164, { extract: false });
  if (parsed === undefined || !parsed.isValid() || parsed.number !== e164 || parsed.country === undefined) {
    return undefined;
  }
  return { country: parsed.country, type: numberTypeOf(parsed.getType()) };
}

/** libphonenumber's number types mapped to PhoneNumber.PhoneNumberType. */
function numberTypeOf(type: string | undefined): NumberType {
  switch (type) {
    case "MOBILE":
      return "MOBILE";
    case "TOLL_FREE":
      return "TOLL_FREE";
    case "SHARED_COST":
      return "SHARED_RATE";
    case "FIXED_LINE":
    case "FIXED_LINE_OR_MOBILE":
      return "LOCAL";
    default:
      // VOIP, UAN, PERSONAL_NUMBER, PAGER, ...: not tied to a place.
      return "NATIONAL";
  }
}

/** The country calling code of a region (`AU` -> `61`). */
export function callingCode(region: string): string {
  return getCountryCallingCode(region as CountryCode);
}

/**
 * The E.164 prefix a search prefix means in `region`: an E.164 prefix
 * (`+612`) as it is; national digits (`02`, `2`) with one leading 0 (the
 * trunk prefix) stripped and the calling code put in front. Empty: none.
 */
export function searchPrefix(region: string, prefix: string): string {
  if (prefix === "" || prefix === "+") return "";
  if (prefix.startsWith("+")) return prefix;
  const national = prefix.startsWith("0") ? prefix.slice(1) : prefix;
  return `+${callingCode(region)}${national}`;
}

/** The resource name of an inventory number: `phoneNumbers/{digits}` (`phoneNumbers/61255501234`). */
export function phoneNumberName(e164: string): string {
  return `phoneNumbers/${e164.slice(1)}`;
}

/**
 * The number a `phoneNumbers/{number}` name names, in E.164, or undefined
 * when the name has another shape. `{number}` is the digits, with or
 * without the leading `+` (`%2B` in a URL).
 */
export function numberOfName(name: string): string | undefined {
  const m = /^phoneNumbers\/\+?([0-9]+)$/.exec(name);
  if (m === null) return undefined;
  const e164 = `+${m[1]!}`;
  return isE164(e164) ? e164 : undefined;
}
