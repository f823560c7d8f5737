/**
 * The Unsubscribers service: maps proto requests to the domain and domain
 * unsubscribers back to protos. Rules live in domain.ts; protovalidate has
 * already checked each request against its `buf.validate` rules.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  Unsubscriber_UnsubscribeMethod,
  type Unsubscriber as UnsubscriberProto,
  UnsubscriberSchema,
  type Unsubscribers,
} from "../../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { parseParent, parseResourceName } from "../../api/names.js";
import { applyUpdateMask, checkUpdateMask } from "../../api/update-mask.js";
import { COLLECTION, type UnsubscribeMethod, type Unsubscriber, type UnsubscribersDomain } from "./domain.js";

const METHOD_FROM_PROTO: Readonly<Partial<Record<Unsubscriber_UnsubscribeMethod, UnsubscribeMethod>>> = {
  [Unsubscriber_UnsubscribeMethod.URL]: "URL",
  [Unsubscriber_UnsubscribeMethod.MESSAGE]: "MESSAGE",
  [Unsubscriber_UnsubscribeMethod.MANUAL]: "MANUAL",
};

const METHOD_TO_PROTO: Readonly<Record<UnsubscribeMethod, Unsubscriber_UnsubscribeMethod>> = {
  URL: Unsubscriber_UnsubscribeMethod.URL,
  MESSAGE: Unsubscriber_UnsubscribeMethod.MESSAGE,
  MANUAL: Unsubscriber_UnsubscribeMethod.MANUAL,
};

export function unsubscriberToProto(unsubscriber: Unsubscriber): UnsubscriberProto {
  return create(UnsubscriberSchema, {
    name: unsubscriber.name,
    phone: unsubscriber.phone,
    unsubscribeMethod: METHOD_TO_PROTO[unsubscriber.unsubscribeMethod],
    labels: { ...unsubscriber.labels },
    createTime: timestampFromDate(unsubscriber.createTime),
  });
}

export function unsubscribersService(domain: UnsubscribersDomain): ServiceImpl<typeof Unsubscribers> {
  return {
    async createUnsubscriber(req) {
      const unsubscriber = req.unsubscriber!;
      const created = await domain.create(parseParent(req.parent), {
        phone: unsubscriber.phone,
        // UNSPECIFIED (absent) becomes the domain's default.
        unsubscribeMethod: METHOD_FROM_PROTO[unsubscriber.unsubscribeMethod],
        labels: { ...unsubscriber.labels },
      });
      return unsubscriberToProto(created);
    },

    async getUnsubscriber(req) {
      return unsubscriberToProto(await domain.get(parseResourceName(req.name, COLLECTION, "name")));
    },

    async listUnsubscribers(req) {
      const page = await domain.list(parseParent(req.parent), req.phone, {
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return { unsubscribers: page.items.map(unsubscriberToProto), nextPageToken: page.nextPageToken };
    },

    async updateUnsubscriber(req) {
      const patch = req.unsubscriber!;
      const ref = parseResourceName(patch.name, COLLECTION, "unsubscriber.name");
      checkUpdateMask(UnsubscriberSchema, req.updateMask);
      const current = await domain.get(ref);
      const { resource, applied } = applyUpdateMask({
        schema: UnsubscriberSchema,
        current: unsubscriberToProto(current),
        patch,
        mask: req.updateMask,
        resourceField: "unsubscriber",
      });
      if (applied.length === 0) return unsubscriberToProto(current);
      return unsubscriberToProto(await domain.update(ref, { labels: { ...resource.labels } }));
    },

    async deleteUnsubscriber(req) {
      return unsubscriberToProto(await domain.delete(parseResourceName(req.name, COLLECTION, "name")));
    },
  };
}
