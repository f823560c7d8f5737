/**
 * The Messages service: reading recorded messages. Rules live in domain.ts;
 * CreateMessage (sending) is not built yet and answers UNIMPLEMENTED.
 */
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  Message_Direction,
  Message_MessageEncoding,
  Message_Status,
  type Message as MessageProto,
  MessageSchema,
  type Messages,
} from "../../../gen/enfonica/messaging/v1/messages_pb.js";
import { unimplemented } from "../../api/errors.js";
import { parseParent, parseResourceName } from "../../api/names.js";
import { COLLECTION, type Message, type MessagesDomain } from "./domain.js";

export function messageToProto(message: Message): MessageProto {
  return create(MessageSchema, {
    name: message.name,
    to: message.to,
    from: message.from,
    body: message.body,
    direction: Message_Direction[message.direction],
    status: Message_Status[message.status],
    encoding: Message_MessageEncoding[message.encoding],
    segmentCount: message.segmentCount,
    createTime: timestampFromDate(message.createTime),
  });
}

export function messagesService(domain: MessagesDomain): ServiceImpl<typeof Messages> {
  return {
    async createMessage() {
      throw unimplemented("enfonica.messaging.v1.Messages.CreateMessage");
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
