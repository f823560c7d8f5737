/**
 * The SIP dialogue of a simulated call leg, derived from the facts the call
 * engine recorded (SipLegFacts: times, final state, who ended it) — the
 * simulator sends no real packets, so this is what it would have sent, on
 * the addresses of sip-network.ts. The network has no latency: a response
 * carries the time of what caused it, so INVITE is at start_time (outgoing)
 * or create_time (incoming), 180 at ring_time, 200 at answer_time, the
 * final exchange at end_time.
 *
 * The caller is the UAC (we, for an outgoing call; the remote party, for an
 * incoming one). Messages, in order:
 *
 * 1. INVITE (with an SDP offer), 100 Trying; 180 Ringing when it rang.
 * 2. Answered: 200 OK (SDP answer), ACK; once ended, BYE from the side that
 *    hung up (`ended_by`) and its 200 OK.
 * 3. Ended unanswered, by the final state:
 *    - BUSY: 486 Busy Here, ACK;  REJECTED: 603 Decline, ACK;
 *    - the caller gave up (outgoing NOT_ANSWERED — the ring timeout is ours —
 *      or any outgoing call we ended, ANSWERED_ELSEWHERE / CANCELLED
 *      included; an incoming call the remote caller abandoned): CANCEL,
 *      200 OK (CANCEL), 487 Request Terminated, ACK;
 *    - the network failed an outgoing call: 503 Service Unavailable, ACK;
 *    - we ended an incoming call without answering: 503 Service Unavailable
 *      when FAILED, 480 Temporarily Unavailable otherwise; ACK.
 * A call in flight has the messages so far; an outgoing call never placed
 * (no start_time) has none.
 *
 * Headers: Via (UDP, the sender's address, a branch per transaction, RFC
 * 3261 magic cookie), Max-Forwards on requests, From/To with tags, Call-ID
 * (the call's sip_call_id), CSeq, Contact on INVITE/180/200, User-Agent or
 * Server, Allow, Content-Type / Content-Length. From of an outgoing call:
 * its caller ID as `sip:{number}@{SIP_BASE_DOMAIN}`, a SIP URI as given, or
 * `anonymous@anonymous.invalid` when withheld.
 */
import type { SipEndpoint, SipLegFacts, SipPacket } from "../sip/types.js";
import { destinationOf, hash32, parseSipUri, rtpPort, SIP_EDGE, SIP_PORT } from "./sip-network.js";

const ALLOW = "INVITE, ACK, CANCEL, BYE, OPTIONS";
const LOCAL_AGENT = "Switchboard";
const REMOTE_AGENT = "Switchboard-Simulator";

const REASONS: Readonly<Record<number, string>> = {
  100: "Trying",
  180: "Ringing",
  200: "OK",
  480: "Temporarily Unavailable",
  486: "Busy Here",
  487: "Request Terminated",
  503: "Service Unavailable",
  603: "Decline",
};

/** One side of the dialogue. */
interface Party {
  address: SipEndpoint;
  /** The From (UAC) or To (UAS) header value, without tag. */
  header: string;
  tag: string;
  contact: string;
  agent: string;
  /** SDP of this side. */
  sdp: string;
}

const hex = (text: string) => hash32(text).toString(16).padStart(8, "0");

function sdp(callId: string, side: "local" | "remote", ip: string, offer: boolean): string {
  const session = hash32(`${callId}/${side}/sdp`);
  return [
    "v=0",
    `o=- ${session} ${session} IN IP4 ${ip}`,
    "s=-",
    `c=IN IP4 ${ip}`,
    "t=0 0",
    `m=audio ${rtpPort(callId, side)} RTP/AVP ${offer ? "0 8 101" : "0 101"}`,
    "a=rtpmap:0 PCMU/8000",
    ...(offer ? ["a=rtpmap:8 PCMA/8000"] : []),
    "a=rtpmap:101 telephone-event/8000",
    "a=fmtp:101 0-16",
    "a=sendrecv",
    "",
  ].join("\r\n");
}

/** The header form of a URI: `<uri>`, keeping its parameters inside the brackets. */
const angle = (uri: string) => `<${uri}>`;

/** The From of an outgoing call: its caller ID as a SIP URI. */
function outgoingFrom(from: string, baseDomain: string): { header: string; user: string } {
  if (/^sips?:/i.test(from)) return { header: angle(from), user: parseSipUri(from)?.user || "switchboard" };
  if (from === "") return { header: `"Anonymous" <sip:anonymous@anonymous.invalid>`, user: "anonymous" };
  return { header: `<sip:${from}@${baseDomain}>`, user: from };
}

function parties(facts: SipLegFacts, baseDomain: string): { uac: Party; uas: Party; requestUri: string } {
  const toUser = parseSipUri(facts.to)?.user ?? "";
  const at = (user: string, a: SipEndpoint) => `<sip:${user === "" ? "" : `${user}@`}${a.ip}:${a.port}>`;
  if (facts.direction === "OUTGOING") {
    const remote = destinationOf(facts.to);
    const from = outgoingFrom(facts.from, baseDomain);
    return {
      requestUri: facts.to,
      uac: {
        address: SIP_EDGE,
        header: from.header,
        tag: hex(`${facts.callId}/uac`),
        contact: at(from.user, SIP_EDGE),
        agent: LOCAL_AGENT,
        sdp: sdp(facts.callId, "local", SIP_EDGE.ip, true),
      },
      uas: {
        address: remote,
        header: angle(facts.to),
        tag: hex(`${facts.callId}/uas`),
        contact: at(toUser, remote),
        agent: REMOTE_AGENT,
        sdp: sdp(facts.callId, "remote", remote.ip, false),
      },
    };
  }
  const caller: SipEndpoint = { ip: facts.sourceIp ?? parseSipUri(facts.from)?.host ?? "", port: SIP_PORT };
  const fromUser = parseSipUri(facts.from)?.user ?? "";
  return {
    requestUri: facts.to,
    uac: {
      address: caller,
      header: angle(facts.from),
      tag: hex(`${facts.callId}/uac`),
      contact: at(fromUser, caller),
      agent: REMOTE_AGENT,
      sdp: sdp(facts.callId, "remote", caller.ip, true),
    },
    uas: {
      address: SIP_EDGE,
      header: angle(facts.to),
      tag: hex(`${facts.callId}/uas`),
      contact: at(toUser, SIP_EDGE),
      agent: LOCAL_AGENT,
      sdp: sdp(facts.callId, "local", SIP_EDGE.ip, false),
    },
  };
}

const contactUri = (contact: string) => contact.slice(1, -1);

/** Builds the dialogue of `facts`; `baseDomain` is SIP_BASE_DOMAIN (the host of outgoing From URIs). */
export function simulatedSipDialogue(facts: SipLegFacts, baseDomain: string): SipPacket[] {
  if (facts.inviteTime === undefined) return [];
  const { uac, uas, requestUri } = parties(facts, baseDomain);
  const out: SipPacket[] = [];
  const via = (p: Party, branch: string) =>
    `SIP/2.0/UDP ${p.address.ip}:${p.address.port};branch=z9hG4bK${hex(`${facts.callId}/${branch}`)}`;
  const fromUac = (tagged: boolean) => `${uac.header}${tagged ? `;tag=${uac.tag}` : ""}`;
  const toUas = (tagged: boolean) => `${uas.header}${tagged ? `;tag=${uas.tag}` : ""}`;

  const push = (
    time: Date,
    sender: Party,
    receiver: Party,
    method: string,
    startLine: string,
    headers: [string, string][],
    body = "",
  ) => {
    const all: [string, string][] = [...headers];
    if (body !== "") all.push(["Content-Type", "application/sdp"]);
    all.push(["Content-Length", String(Buffer.byteLength(body, "utf8"))]);
    const data = `${startLine}\r\n${all.map(([k, v]) => `${k}: ${v}`).join("\r\n")}\r\n\r\n${body}`;
    out.push({ time, source: sender.address, destination: receiver.address, method, startLine, data });
  };

  /** A request from `sender` in the dialogue's direction (UAC → UAS) or back (UAS → UAC, BYE only). */
  const request = (
    time: Date,
    method: string,
    branch: string,
    cseq: number,
    opts: { toTagged: boolean; uri?: string; body?: string; contact?: boolean; reverse?: boolean },
  ): string[] => {
    const reverse = opts.reverse === true;
    const sender = reverse ? uas : uac;
    const receiver = reverse ? uac : uas;
    const uri = opts.uri ?? requestUri;
    const viaValue = via(sender, branch);
    const from = reverse ? toUas(true) : fromUac(true);
    const to = reverse ? fromUac(true) : toUas(opts.toTagged);
    const headers: [string, string][] = [
      ["Via", viaValue],
      ["Max-Forwards", "70"],
      ["From", from],
      ["To", to],
      ["Call-ID", facts.sipCallId],
      ["CSeq", `${cseq} ${method}`],
    ];
    if (opts.contact) headers.push(["Contact", sender.contact]);
    headers.push(["User-Agent", sender.agent]);
    if (method === "INVITE") headers.push(["Allow", ALLOW]);
    push(time, sender, receiver, method, `${method} ${uri} SIP/2.0`, headers, opts.body);
    return [viaValue, from, to, `${cseq} ${method}`];
  };

  /** A response to the request whose Via/From/To/CSeq are `req`, from the receiver of that request. */
  const respond = (
    time: Date,
    req: string[],
    method: string,
    status: number,
    opts: { toTag?: string; contact?: boolean; body?: string; reverse?: boolean } = {},
  ) => {
    const [viaValue, from, to, cseq] = req as [string, string, string, string];
    const sender = opts.reverse ? uac : uas;
    const receiver = opts.reverse ? uas : uac;
    const headers: [string, string][] = [
      ["Via", viaValue],
      ["From", from],
      ["To", opts.toTag === undefined || to.includes(";tag=") ? to : `${to};tag=${opts.toTag}`],
      ["Call-ID", facts.sipCallId],
      ["CSeq", cseq],
    ];
    if (opts.contact) headers.push(["Contact", sender.contact]);
    headers.push(["Server", sender.agent]);
    if (status === 200 && method === "INVITE") headers.push(["Allow", ALLOW]);
    push(time, sender, receiver, method, `SIP/2.0 ${status} ${REASONS[status]}`, headers, opts.body);
  };

  const invite = request(facts.inviteTime, "INVITE", "invite", 1, {
    toTagged: false,
    body: uac.sdp,
    contact: true,
  });
  respond(facts.inviteTime, invite, "INVITE", 100);
  if (facts.ringTime !== undefined) {
    respond(facts.ringTime, invite, "INVITE", 180, { toTag: uas.tag, contact: true });
  }
  const localIsUac = facts.direction === "OUTGOING";
  if (facts.answerTime !== undefined) {
    respond(facts.answerTime, invite, "INVITE", 200, { toTag: uas.tag, contact: true, body: uas.sdp });
    request(facts.answerTime, "ACK", "ack", 1, { toTagged: true, uri: contactUri(uas.contact) });
    if (facts.endTime !== undefined) {
      // The side that hung up sends BYE: the UAC or the UAS.
      const uacHangsUp = (facts.endedBy === "REMOTE") !== localIsUac;
      if (uacHangsUp) {
        const bye = request(facts.endTime, "BYE", "bye", 2, { toTagged: true, uri: contactUri(uas.contact) });
        respond(facts.endTime, bye, "BYE", 200);
      } else {
        const bye = request(facts.endTime, "BYE", "bye", 1, {
          toTagged: true,
          uri: contactUri(uac.contact),
          reverse: true,
        });
        respond(facts.endTime, bye, "BYE", 200, { reverse: true });
      }
    }
    return out;
  }
  if (facts.endTime === undefined) return out;
  const end = facts.endTime;
  const final = (status: number) => {
    respond(end, invite, "INVITE", status, { toTag: uas.tag });
    // The ACK of a non-2xx final response is part of the INVITE transaction (same branch).
    request(end, "ACK", "invite", 1, { toTagged: true });
  };
  const remoteEnded = facts.endedBy === "REMOTE";
  const uacCancels = localIsUac ? !remoteEnded || facts.state === "NOT_ANSWERED" : remoteEnded;
  if (facts.state === "BUSY") {
    final(486);
  } else if (facts.state === "REJECTED") {
    final(603);
  } else if (uacCancels) {
    const cancel = request(end, "CANCEL", "invite", 1, { toTagged: false });
    respond(end, cancel, "CANCEL", 200);
    final(487);
  } else if (localIsUac) {
    final(503);
  } else {
    final(facts.state === "FAILED" ? 503 : 480);
  }
  return out;
}
