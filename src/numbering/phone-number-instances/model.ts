/**
 * The PhoneNumberInstance resource as the domain sees it: its type and
 * collection names, the instance and its range, the configurable fields,
 * and the shapes of the requests the domain takes.
 */
import { resourceName } from "../../api/names.js";
import type { RecordingTriggerValue } from "../../db/schema/index.js";
import type { InventoryNumber } from "../inventory/domain.js";
import type { LifecycleState } from "./lifecycle.js";

export const RESOURCE_TYPE = "numbering.api.enfonica.com/PhoneNumberInstance";
export const COLLECTION = "phoneNumberInstances";

export type RecordingTrigger = RecordingTriggerValue;

export interface PhoneNumberRange {
  primaryPhoneNumberInstance: string;
  startPhoneNumber: string;
  endPhoneNumber: string;
  size: number;
}

export interface PhoneNumberInstance {
  projectId: string;
  id: string;
  name: string;
  phoneNumber: InventoryNumber;
  displayName: string;
  labels: Record<string, string>;
  incomingMessageHandlerUris: string[];
  incomingCallHandlerUris: string[];
  callRecordingTrigger: RecordingTrigger;
  lifecycleState: LifecycleState;
  createTime: Date;
  activateTime: Date | undefined;
  deleteTime: Date | undefined;
  range: PhoneNumberRange | undefined;
  /** The attached listing (`projects/{project}/regulatoryListings/{id}`), if any. */
  regulatoryListing: string | undefined;
  compliant: boolean;
}

/** The configurable fields of an instance. */
export interface InstanceConfig {
  displayName: string;
  labels: Record<string, string>;
  incomingMessageHandlerUris: string[];
  incomingCallHandlerUris: string[];
  /** undefined: DISABLED. */
  callRecordingTrigger: RecordingTrigger | undefined;
}

export interface NewInstance extends InstanceConfig {
  /** The request's `phone_number` (name and/or E.164); undefined when absent. */
  phoneNumber: { name: string; phoneNumber: string } | undefined;
  /** A listing name to attach; empty for none. */
  regulatoryListing: string;
}

export interface NewRange {
  startPhoneNumber: string;
  size: number;
  regulatoryListing: string;
}

export interface NewPortIn {
  phoneNumber: string;
  regulatoryListing: string;
}

export interface ListParams {
  prefix: string;
  includeDeleted: boolean;
  pageSize: number;
  pageToken: string;
}

export function instanceName(projectId: string, id: string): string {
  return resourceName(COLLECTION, { projectId, id });
}
