/** The SipInfoService: GetSipInfo, mapping the domain's SipInfo to the proto. */
import { create } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type SipInfo as SipInfoProto,
  SipInfoSchema,
  type SipInfoService,
  SipMessageSchema,
} from "../../../gen/enfonica/voice/v1beta1/sip_info_pb.js";
import type { SipInfo, SipInfoDomain } from "./domain.js";

export function sipInfoToProto(info: SipInfo): SipInfoProto {
  const first = info.packets[0]?.time;
  const last = info.packets.at(-1)?.time;
  return create(SipInfoSchema, {
    name: info.name,
    startTime: first === undefined ? undefined : timestampFromDate(first),
    endTime: last === undefined ? undefined : timestampFromDate(last),
    sipCallId: info.sipCallId,
    pcap: info.pcap,
    omittedMessageCount: info.omittedMessageCount,
    messages: info.packets.map((p) =>
      create(SipMessageSchema, {
        offsetDuration: durationFromMs(p.time.getTime() - (first?.getTime() ?? 0)),
        sourceIp: p.source.ip,
        sourcePort: p.source.port,
        destinationIp: p.destination.ip,
        destinationPort: p.destination.port,
        method: p.method,
        requestLine: p.startLine,
        data: p.data,
      }),
    ),
  });
}

export function sipInfoService(domain: SipInfoDomain): ServiceImpl<typeof SipInfoService> {
  return {
    async getSipInfo(req) {
      return sipInfoToProto(await domain.get(req.name));
    },
  };
}
