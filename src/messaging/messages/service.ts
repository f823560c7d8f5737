/**
 * The Messages service: proto <-> domain. Rules live in domain.ts (reading)
 * and outgoing.ts (sending).
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  Message_MessageClassification,
  Message_UnsubscribeContentBehavior,
  type Messages,
} from "../../../gen/enfonica/messaging/v1/messages_pb.js";
import { parseParent, parseResourceName } from "../../api/names.js";
import { principalKey } from "../../auth/interceptor.js";
import { COLLECTION, type MessagesDomain } from "./domain.js";
import type { OutgoingMessages } from "./outgoing.js";
import { messageToProto } from "./proto.js";

export { messageToProto } from "./proto.js";

/** An enum value's name; undefined for UNSPECIFIED; an unknown number as its digits (so validation names it). */
function enumName(names: Record<number, string>, value: number): string | undefined {
  if (value === 0) return undefined;
  return names[value] ?? String(value);
}

export function messagesService(
  domain: MessagesDomain,
  outgoing: OutgoingMessages,
): ServiceImpl<typeof Messages> {
  return {
    async createMessage(req, ctx) {
      const m = req.message!;
      const principal = ctx.values.get(principalKey);
      const identity =
        principal === undefined
          ? ""
          : principal.kind === "operator"
            ? "operator"
            : `apiKeys/${principal.keyId}`;
      return messageToProto(
        await outgoing.create(
          parseParent(req.parent),
          {
            to: m.to,
            from: m.from,
            body: m.body,
            statusUpdateUrl: m.statusUpdateUrl,
            replyUrl: m.replyUrl,
            validityPeriodSeconds: m.validityPeriodSeconds,
            smartEncoding: m.smartEncoding,
            labels: m.labels,
            classification: enumName(Message_MessageClassification, m.classification),
            unsubscribeContentBehavior: enumName(
              Message_UnsubscribeContentBehavior,
              m.unsubscribeContentBehavior,
            ),
          },
          identity,
        ),
      );
    },

    async getMessage(req) {
      return messageToProto(await domain.get(parseResourceName(req.name, COLLECTION, "name")));
    },

    async listMessages(req) {
      const page = await domain.list(parseParent(req.parent), {
        pageSize: req.pageSize,
        pageToken: req.pageToken,
        startTime: req.startTime === undefined ? undefined : timestampDate(req.startTime),
        endTime: req.endTime === undefined ? undefined : timestampDate(req.endTime),
        filter: req.filter,
      });
      return { messages: page.items.map(messageToProto), nextPageToken: page.nextPageToken };
    },
  };
}
