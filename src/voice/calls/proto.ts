/** Calls as stored ↔ the proto `Call` (and its proto3 JSON for webhooks). */
import { create, toJsonString } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { CallRequestSchema } from "../../../gen/enfonica/voice/v1beta1/call_request_pb.js";
import {
  type Call,
  Call_CreateMethod,
  Call_Direction,
  Call_State,
  Call_Transport,
  CallSchema,
} from "../../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { MoneySchema } from "../../../gen/google/type/money_pb.js";
import type { CallRow } from "../../db/schema/index.js";
import { callName } from "./domain.js";

const ts = (d: Date | null) => (d === null ? undefined : timestampFromDate(d));

export function callToProto(row: CallRow): Call {
  return create(CallSchema, {
    name: callName(row),
    to: row.to,
    from: row.from,
    isPrivate: row.isPrivate,
    labels: row.labels,
    transport: Call_Transport[row.transport],
    direction: Call_Direction[row.direction],
    errorCode: row.errorCode,
    errorMessage: row.errorMessage,
    price:
      row.priceCurrency === null
        ? undefined
        : create(MoneySchema, {
            currencyCode: row.priceCurrency,
            units: BigInt(row.priceUnits ?? 0),
            nanos: row.priceNanos ?? 0,
          }),
    state: Call_State[row.state],
    createTime: timestampFromDate(row.createTime),
    startTime: ts(row.startTime),
    ringTime: ts(row.ringTime),
    answerTime: ts(row.answerTime),
    endTime: ts(row.endTime),
    bridged: row.bridged,
    originatingCall:
      row.originatingCallId === null ? "" : callName({ projectId: row.projectId, id: row.originatingCallId }),
    createMethod: Call_CreateMethod[row.createMethod],
    options: {
      handlerUris: row.handlerUris,
      stateUpdateUri: row.stateUpdateUri,
      timeoutSeconds: row.timeoutSeconds,
    },
    answerDuration: row.answerDurationMs === null ? undefined : durationFromMs(row.answerDurationMs),
  });
}

/** The body of a CALL_STATE_UPDATE webhook: the Call as proto3 JSON. */
export function callJson(row: CallRow): string {
  return toJsonString(CallSchema, callToProto(row));
}

/** The body of a call-control request (event CALL): a CallRequest as proto3 JSON. */
export function callRequestJson(row: CallRow, parameters: Record<string, string>): string {
  return toJsonString(CallRequestSchema, create(CallRequestSchema, { call: callToProto(row), parameters }));
}
