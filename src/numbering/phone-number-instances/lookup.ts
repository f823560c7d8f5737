/**
 * Number lookup: the instance a number belongs to — the instance holding it,
 * which for a number inside a range is the range's primary instance; none
 * for a number that is not E.164 or is not held (a deleted instance's
 * numbers are not). Incoming calls and messages use it to find their
 * handlers, outgoing calls to check whose a caller ID is.
 */
import { isE164 } from "../numbers.js";
import type { NumberingStore } from "../store.js";
import type { PhoneNumberInstance } from "./model.js";
import { toInstance } from "./records.js";

/** The instance that incoming traffic to `phoneNumber` belongs to (its range's, for a number in one). */
export async function findByNumber(
  store: NumberingStore,
  phoneNumber: string,
): Promise<PhoneNumberInstance | undefined> {
  if (!isE164(phoneNumber)) return undefined;
  const record = await store.instances.holderOf(phoneNumber);
  return record === undefined ? undefined : toInstance(record);
}
