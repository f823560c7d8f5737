/**
 * What a number may be used for, from the capabilities it was provisioned
 * with (copied from inventory onto the instance: `phoneNumber.capabilities`).
 * Traffic a number cannot carry is refused the way a carrier would not
 * deliver it: FAILED_PRECONDITION with ErrorInfo reason
 * `NUMBER_NOT_<CAPABILITY>_CAPABLE` (`NUMBER_NOT_SMS_CAPABLE`,
 * `NUMBER_NOT_VOICE_CAPABLE`), metadata `phone_number`, `capability`,
 * `phone_number_instance` and, when a request field named the number,
 * `field`. Nothing is recorded.
 */
import type { ConnectError } from "@connectrpc/connect";
import { failedPrecondition } from "../api/errors.js";
import type { Capability } from "./inventory/domain.js";
import type { PhoneNumberInstance } from "./phone-number-instances/model.js";

/** The ErrorInfo reason of traffic `capability` a number lacks. */
export function notCapableReason(capability: Capability): string {
  return `NUMBER_NOT_${capability}_CAPABLE`;
}

/**
 * undefined when `instance` may carry `capability` traffic for
 * `phoneNumber`; otherwise the FAILED_PRECONDITION to throw.
 */
export function capabilityRefusal(
  instance: Pick<PhoneNumberInstance, "name" | "phoneNumber">,
  phoneNumber: string,
  capability: Capability,
  field?: string,
): ConnectError | undefined {
  if (instance.phoneNumber.capabilities.includes(capability)) return undefined;
  const metadata: Record<string, string> = {
    phone_number: phoneNumber,
    capability,
    phone_number_instance: instance.name,
  };
  if (field !== undefined) metadata.field = field;
  const has = instance.phoneNumber.capabilities.join(", ") || "none";
  return failedPrecondition(
    notCapableReason(capability),
    `${phoneNumber} cannot carry ${capability} traffic (its capabilities: ${has})`,
    metadata,
  );
}
