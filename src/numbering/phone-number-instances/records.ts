/**
 * Reading an instance from its stored record: the `phone_number_instances`
 * row and the attached listing become a PhoneNumberInstance (with `range`,
 * the listing's name, and `compliant` computed from the listing as it is).
 */
import { resourceName } from "../../api/names.js";
import { capabilitiesOf } from "../inventory/domain.js";
import { COLLECTION as LISTINGS } from "../regulatory-listings/domain.js";
import { isCompliant } from "./compliance.js";
import { instanceName, type PhoneNumberInstance } from "./model.js";
import type { InstanceRecord } from "./repository.js";

export function toInstance(record: InstanceRecord): PhoneNumberInstance {
  const row = record.instance;
  const name = instanceName(row.projectId, row.id);
  const listing = record.listing;
  return {
    projectId: row.projectId,
    id: row.id,
    name,
    phoneNumber: {
      phoneNumber: row.phoneNumber,
      countryCode: row.countryCode,
      numberType: row.numberType,
      capabilities: capabilitiesOf(row),
      sku: row.sku,
      activationSku: row.activationSku,
    },
    displayName: row.displayName,
    labels: row.labels,
    incomingMessageHandlerUris: row.incomingMessageHandlerUris,
    incomingCallHandlerUris: row.incomingCallHandlerUris,
    callRecordingTrigger: row.callRecordingTrigger,
    lifecycleState: row.lifecycleState,
    createTime: row.createTime,
    activateTime: row.activateTime ?? undefined,
    deleteTime: row.deleteTime ?? undefined,
    range:
      row.rangeEnd !== null && row.rangeSize !== null
        ? {
            primaryPhoneNumberInstance: name,
            startPhoneNumber: row.phoneNumber,
            endPhoneNumber: row.rangeEnd,
            size: row.rangeSize,
          }
        : undefined,
    regulatoryListing:
      listing === null ? undefined : resourceName(LISTINGS, { projectId: listing.projectId, id: listing.id }),
    compliant: isCompliant(row, listing),
  };
}
