/**
 * Calls as stored ↔ the proto `Call` (and its proto3 JSON for webhooks).
 *
 * `options` is set only for calls created through the API (create_method
 * API); incoming calls and child legs created by markup (PARENT_CALL) have
 * no API options. `options.recording` echoes the stored call recording
 * (`calls.recording`): trigger, post_processing, recording_ready_uri;
 * unset when the call is not recorded by configuration.
 *
 * Incoming calls: `from_location` / `from_zone` are derived from `from` with
 * libphonenumber-js (max metadata) when it is a valid E.164 number —
 * libphonenumber-js has no geocoder or time-zone data, so `from_location`
 * carries only `region_code` (the CLDR region, `AU`) and `from_zone` is the
 * number's type as libphonenumber-js names it (`MOBILE`, `FIXED_LINE`,
 * `FIXED_LINE_OR_MOBILE`, `TOLL_FREE`, `VOIP`, ...; empty when unknown).
 * They are derived (not stored): the metadata version is pinned.
 */
import { create, toJsonString } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { parsePhoneNumberFromString } from "libphonenumber-js/max";
import {
  CallRecordingConfig_CallRecordingTrigger,
  PostProcessing,
  TranscribeOption,
} from "../../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import { CallRequestSchema } from "../../../gen/enfonica/voice/v1beta1/call_request_pb.js";
import {
  type Call,
  Call_CreateMethod,
  Call_Direction,
  Call_State,
  Call_Transport,
  CallSchema,
  type NumberLocation,
  NumberLocationSchema,
} from "../../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { MoneySchema } from "../../../gen/google/type/money_pb.js";
import type { CallRow } from "../../db/schema/index.js";
import { callName } from "./domain.js";

const ts = (d: Date | null) => (d === null ? undefined : timestampFromDate(d));

/** Where an incoming caller's number is from, as far as libphonenumber-js tells. */
export function callerOrigin(from: string): { location: NumberLocation | undefined; zone: string } {
  const parsed = from.startsWith("+") ? parsePhoneNumberFromString(from) : undefined;
  if (parsed === undefined || !parsed.isValid()) return { location: undefined, zone: "" };
  return {
    location:
      parsed.country === undefined ? undefined : create(NumberLocationSchema, { regionCode: parsed.country }),
    zone: parsed.getType() ?? "",
  };
}

/**
 * The SIP Call-ID of a SIP call: its INVITE's when it went over the SIP edge
 * (`sip_call_id`). The simulated network has no INVITE of its own, so there
 * it is derived: the call's id at the host (and port) of `to`, its domain —
 * what the SipCarrier sends as the Call-ID of an outgoing call too.
 */
export function sipCallId(row: Pick<CallRow, "id" | "to"> & { sipCallId?: string | null }): string {
  if (row.sipCallId !== undefined && row.sipCallId !== null && row.sipCallId !== "") return row.sipCallId;
  const host = (row.to.split("@")[1] ?? "").split(/[;?]/)[0]!;
  return host === "" ? row.id : `${row.id}@${host}`;
}

export function callToProto(row: CallRow): Call {
  const incoming = row.direction === "INCOMING";
  const origin = incoming && row.transport === "PSTN" ? callerOrigin(row.from) : undefined;
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
    options:
      row.createMethod !== "API"
        ? undefined
        : {
            handlerUris: row.handlerUris,
            stateUpdateUri: row.stateUpdateUri,
            timeoutSeconds: row.timeoutSeconds,
            recording:
              row.recording === null
                ? undefined
                : {
                    trigger: CallRecordingConfig_CallRecordingTrigger[row.recording.trigger],
                    postProcessing: row.recording.postProcessing.map((p) => PostProcessing[p]),
                    recordingReadyUri: row.recording.readyUri,
                    transcribe: row.recording.transcribe
                      ? TranscribeOption.DEFAULT
                      : TranscribeOption.TRANSCRIBE_OPTION_UNSPECIFIED,
                    transcriptionReadyUri: row.recording.transcriptionReadyUri ?? "",
                  },
          },
    fromLocation: origin?.location,
    fromZone: origin?.zone ?? "",
    sipCallId: row.transport === "SIP" ? sipCallId(row) : "",
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
