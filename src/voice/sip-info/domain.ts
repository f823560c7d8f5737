/**
 * SIP info: the SIP dialogue of a call whose transport is SIP (calls to and
 * from SIP domains, and calls to `sip:` URIs), at
 * `projects/{project}/calls/{call}/sipInfo`.
 *
 * A real call (one the SIP edge's capture was attached to,
 * src/telephony/sip-edge/capture.ts) has the messages actually sent and
 * received, as stored (./repository.ts): in the order they crossed the
 * wire, with their real addresses, credentials redacted, and how many were
 * left out past the call's bound. A call the SIP edge carried over a trunk
 * has them too, whatever its transport.
 *
 * A call on the carrier simulator has nothing stored: its dialogue is
 * derived from the call's row (times, state, `to` / `from`,
 * `sip_source_ip`, `ended_by`) by the simulator's trace function
 * (src/telephony/simulator/sip-dialogue.ts).
 *
 * Either way the messages are rendered as a libpcap capture
 * (src/telephony/sip/pcap.ts). A call in flight has the messages so far.
 *
 * A call that is not SIP (PSTN) has no SIP info and never will: NOT_FOUND
 * with ErrorInfo reason `SIP_INFO_NOT_FOUND` (metadata `call`,
 * `transport`), not FAILED_PRECONDITION, which would suggest that the
 * request could succeed once the call changed. An unknown call (or one of
 * another project) is NOT_FOUND `RESOURCE_NOT_FOUND` like GetCall.
 */
import { Code } from "@connectrpc/connect";
import { and, eq } from "drizzle-orm";
import { badField, notFound, rpcError } from "../../api/errors.js";
import type { Db } from "../../db/client.js";
import type { SipCaptureMessageRow } from "../../db/schema/index.js";
import { type CallRow, calls } from "../../db/schema/index.js";
import { sipPcap } from "../../telephony/sip/pcap.js";
import type { SipLegFacts, SipPacket } from "../../telephony/sip/types.js";
import { callName } from "../calls/domain.js";
import { sipCallId } from "../calls/proto.js";
import { SipCaptureRepository } from "./repository.js";

export const SIP_INFO_TYPE = "voice.api.enfonica.com/SipInfo";

/** The network's record of a leg's signalling (the simulator's by default). */
export type SipTrace = (facts: SipLegFacts) => SipPacket[];

export interface SipInfo {
  name: string;
  sipCallId: string;
  packets: SipPacket[];
  pcap: Buffer;
  /** Messages of a captured dialogue left out past the call's bound. */
  omittedMessageCount: number;
}

const SEGMENT = /^[^/]+$/;

/** `projects/{p}/calls/{c}/sipInfo` → its project and call; INVALID_ARGUMENT naming `name` otherwise. */
export function parseSipInfoName(name: string): { projectId: string; callId: string } {
  const parts = name.split("/");
  if (
    parts.length !== 5 ||
    parts[0] !== "projects" ||
    parts[2] !== "calls" ||
    parts[4] !== "sipInfo" ||
    !SEGMENT.test(parts[1] ?? "") ||
    !SEGMENT.test(parts[3] ?? "")
  ) {
    throw badField(
      "name",
      "must be a resource name of the form projects/{project}/calls/{call}/sipInfo",
      "name.format",
    );
  }
  return { projectId: parts[1]!, callId: parts[3]! };
}

/** What the trace is derived from. */
export function legFacts(row: CallRow): SipLegFacts {
  const opt = (d: Date | null) => d ?? undefined;
  return {
    callId: row.id,
    sipCallId: sipCallId(row),
    direction: row.direction,
    to: row.to,
    from: row.from,
    sourceIp: row.sipSourceIp ?? undefined,
    state: row.state,
    inviteTime: row.direction === "INCOMING" ? row.createTime : opt(row.startTime),
    ringTime: opt(row.ringTime),
    answerTime: opt(row.answerTime),
    endTime: opt(row.endTime),
    // Calls ended by liveness (their engine died) have no side recorded: the service ended them.
    endedBy: row.endTime === null ? undefined : (row.endedBy ?? "LOCAL"),
  };
}

/** A stored message as a packet: its exact bytes for the pcap, as text for `data`. */
export function capturedPacket(row: SipCaptureMessageRow): SipPacket {
  return {
    time: row.time,
    source: { ip: row.sourceIp, port: row.sourcePort },
    destination: { ip: row.destinationIp, port: row.destinationPort },
    method: row.method,
    startLine: row.startLine,
    data: row.data.toString("utf8"),
    bytes: row.data,
  };
}

export class SipInfoDomain {
  private readonly captures: SipCaptureRepository;

  constructor(
    private readonly db: Db,
    private readonly trace: SipTrace,
  ) {
    this.captures = new SipCaptureRepository(db);
  }

  async get(name: string): Promise<SipInfo> {
    const ref = parseSipInfoName(name);
    const [row] = await this.db
      .select()
      .from(calls)
      .where(and(eq(calls.projectId, ref.projectId), eq(calls.id, ref.callId)));
    if (row === undefined) throw notFound(SIP_INFO_TYPE, name);
    const captured = await this.captures.forCall(row.id);
    if (captured !== undefined) {
      const packets = captured.messages.map(capturedPacket);
      return {
        name,
        sipCallId: captured.capture.sipCallId,
        packets,
        pcap: sipPcap(packets),
        omittedMessageCount: captured.capture.omittedMessages,
      };
    }
    if (row.transport !== "SIP") {
      throw rpcError(
        Code.NotFound,
        "SIP_INFO_NOT_FOUND",
        `${callName(row)} has no SIP info: its transport is ${row.transport}, not SIP`,
        { call: callName(row), transport: row.transport },
      );
    }
    if (row.sipCallId !== null) {
      // Delivered by the real SIP edge (its INVITE's Call-ID), with nothing
      // stored (SIP_CAPTURE=false, or the batch was lost): no messages, never
      // the simulator's made-up dialogue.
      return { name, sipCallId: row.sipCallId, packets: [], pcap: sipPcap([]), omittedMessageCount: 0 };
    }
    const packets = this.trace(legFacts(row));
    return { name, sipCallId: sipCallId(row), packets, pcap: sipPcap(packets), omittedMessageCount: 0 };
  }
}
