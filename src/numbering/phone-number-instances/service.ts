/**
 * The PhoneNumberInstances service: maps proto requests to the domain and
 * instances back to protos. Rules live in domain.ts and the files it names;
 * protovalidate has already checked each request against its `buf.validate`
 * rules.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type PhoneNumberInstance as InstanceProto,
  PhoneNumberInstance_LifecycleState as LifecycleProto,
  PhoneNumberInstanceSchema,
  type PhoneNumberInstances,
  PhoneNumberInstance_RecordingTrigger as TriggerProto,
} from "../../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { badField } from "../../api/errors.js";
import { parseParent, parseResourceName } from "../../api/names.js";
import { applyUpdateMask, checkUpdateMask } from "../../api/update-mask.js";
import { phoneNumberToProto } from "../inventory/service.js";
import type { PhoneNumberInstancesDomain } from "./domain.js";
import type { LifecycleState } from "./lifecycle.js";
import { COLLECTION, type InstanceConfig, type PhoneNumberInstance, type RecordingTrigger } from "./model.js";

const LIFECYCLE_TO_PROTO: Readonly<Record<LifecycleState, LifecycleProto>> = {
  ACTIVE: LifecycleProto.ACTIVE,
  DELETED: LifecycleProto.DELETED,
  SUSPENDED: LifecycleProto.SUSPENDED,
  PENDING: LifecycleProto.PENDING,
};

const TRIGGER_TO_PROTO: Readonly<Record<RecordingTrigger, TriggerProto>> = {
  DISABLED: TriggerProto.DISABLED,
  ANSWER: TriggerProto.ANSWER,
  BRIDGE: TriggerProto.BRIDGE,
};

/** RecordingTrigger -> ours; UNSPECIFIED (the default) is undefined, which means DISABLED. */
function triggerFromProto(trigger: TriggerProto): RecordingTrigger | undefined {
  return (Object.keys(TRIGGER_TO_PROTO) as RecordingTrigger[]).find((k) => TRIGGER_TO_PROTO[k] === trigger);
}

export function instanceToProto(i: PhoneNumberInstance): InstanceProto {
  return create(PhoneNumberInstanceSchema, {
    name: i.name,
    phoneNumber: phoneNumberToProto(i.phoneNumber),
    displayName: i.displayName,
    labels: { ...i.labels },
    incomingMessageHandlerUris: [...i.incomingMessageHandlerUris],
    incomingCallHandlerUris: [...i.incomingCallHandlerUris],
    callRecordingTrigger: TRIGGER_TO_PROTO[i.callRecordingTrigger],
    createTime: timestampFromDate(i.createTime),
    ...(i.deleteTime === undefined ? {} : { deleteTime: timestampFromDate(i.deleteTime) }),
    lifecycleState: LIFECYCLE_TO_PROTO[i.lifecycleState],
    ...(i.activateTime === undefined ? {} : { activateTime: timestampFromDate(i.activateTime) }),
    ...(i.range === undefined ? {} : { range: { ...i.range } }),
    regulatoryListing: i.regulatoryListing ?? "",
    compliant: i.compliant,
  });
}

export function phoneNumberInstancesService(
  domain: PhoneNumberInstancesDomain,
): ServiceImpl<typeof PhoneNumberInstances> {
  return {
    async createPhoneNumberInstance(req) {
      const i = req.phoneNumberInstance!;
      const created = await domain.create(parseParent(req.parent), {
        phoneNumber:
          i.phoneNumber === undefined
            ? undefined
            : { name: i.phoneNumber.name, phoneNumber: i.phoneNumber.phoneNumber },
        displayName: i.displayName,
        labels: { ...i.labels },
        incomingMessageHandlerUris: [...i.incomingMessageHandlerUris],
        incomingCallHandlerUris: [...i.incomingCallHandlerUris],
        callRecordingTrigger: triggerFromProto(i.callRecordingTrigger),
        regulatoryListing: req.regulatoryListing,
      });
      return instanceToProto(created);
    },

    async getPhoneNumberInstance(req) {
      return instanceToProto(await domain.get(parseResourceName(req.name, COLLECTION, "name")));
    },

    async listPhoneNumberInstances(req) {
      const page = await domain.list(parseParent(req.parent), {
        prefix: req.prefix,
        includeDeleted: req.includeDeleted,
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return { phoneNumberInstances: page.items.map(instanceToProto), nextPageToken: page.nextPageToken };
    },

    async updatePhoneNumberInstance(req) {
      const ref = parseResourceName(req.name, COLLECTION, "name");
      const patch = req.phoneNumberInstance!;
      if (patch.name !== "" && patch.name !== req.name) {
        throw badField("phone_number_instance.name", "must be empty or equal to name", "name.mismatch");
      }
      checkUpdateMask(PhoneNumberInstanceSchema, req.updateMask);
      const current = instanceToProto(await domain.get(ref));
      const { resource, applied } = applyUpdateMask({
        schema: PhoneNumberInstanceSchema,
        current,
        patch,
        mask: req.updateMask,
        resourceField: "phone_number_instance",
      });
      if (applied.length === 0) return current;
      const top = new Set(applied.map((p) => p.split(".")[0]));
      const changes: Partial<InstanceConfig> = {};
      if (top.has("display_name")) changes.displayName = resource.displayName;
      if (top.has("labels")) changes.labels = { ...resource.labels };
      if (top.has("incoming_message_handler_uris")) {
        changes.incomingMessageHandlerUris = [...resource.incomingMessageHandlerUris];
      }
      if (top.has("incoming_call_handler_uris")) {
        changes.incomingCallHandlerUris = [...resource.incomingCallHandlerUris];
      }
      if (top.has("call_recording_trigger")) {
        changes.callRecordingTrigger = triggerFromProto(resource.callRecordingTrigger);
      }
      return instanceToProto(await domain.update(ref, changes));
    },

    async deletePhoneNumberInstance(req) {
      return instanceToProto(await domain.delete(parseResourceName(req.name, COLLECTION, "name")));
    },

    async movePhoneNumberInstance(req) {
      const ref = parseResourceName(req.name, COLLECTION, "name");
      const destination = parseParent(req.destinationParent, "destination_parent");
      return instanceToProto(await domain.move(ref, destination));
    },

    async splitRange(req) {
      const ref = parseResourceName(req.phoneNumberInstance, COLLECTION, "phone_number_instance");
      const { first, second } = await domain.split(ref, req.size);
      return { first: instanceToProto(first), second: instanceToProto(second) };
    },
  };
}
