/** Messages as protos: the API's responses and the bodies of message webhooks. */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  Message_Direction,
  Message_MessageClassification,
  Message_MessageEncoding,
  Message_Status,
  Message_UnsubscribeContentBehavior,
  type Message as MessageProto,
  MessageSchema,
} from "../../../gen/enfonica/messaging/v1/messages_pb.js";
import { MoneySchema } from "../../../gen/google/type/money_pb.js";
import type { Message } from "./domain.js";

export function messageToProto(message: Message): MessageProto {
  return create(MessageSchema, {
    name: message.name,
    to: message.to,
    from: message.from,
    body: message.body,
    statusUpdateUrl: message.statusUpdateUrl,
    replyUrl: message.replyUrl,
    validityPeriodSeconds: message.validityPeriodSeconds,
    smartEncoding: message.smartEncoding,
    direction: Message_Direction[message.direction],
    errorCode: message.errorCode,
    errorMessage: message.errorMessage,
    segmentCount: message.segmentCount,
    ...(message.price === undefined
      ? {}
      : {
          price: create(MoneySchema, {
            currencyCode: message.price.currency,
            units: BigInt(message.price.units),
            nanos: message.price.nanos,
          }),
        }),
    status: Message_Status[message.status],
    createIdentity: message.createIdentity,
    createTime: timestampFromDate(message.createTime),
    ...(message.sendTime === undefined ? {} : { sendTime: timestampFromDate(message.sendTime) }),
    ...(message.deliverTime === undefined ? {} : { deliverTime: timestampFromDate(message.deliverTime) }),
    labels: message.labels,
    classification:
      message.classification === undefined ? 0 : Message_MessageClassification[message.classification],
    unsubscribeContentBehavior:
      message.unsubscribeContentBehavior === undefined
        ? 0
        : Message_UnsubscribeContentBehavior[message.unsubscribeContentBehavior],
    encoding: Message_MessageEncoding[message.encoding],
  });
}
