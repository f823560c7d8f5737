/**
 * The SIP signalling of one call leg, as the network saw it: the messages
 * with when they were sent and between which addresses. The carrier
 * simulator derives them from what it did to the leg
 * (../simulator/sip-dialogue.ts); a SIP trunk adapter would record the
 * messages it really sent and received.
 */

/** An IP address (IPv4, or IPv6 for real traffic) and port. */
export interface SipEndpoint {
  ip: string;
  port: number;
}

/** One SIP message as sent (over UDP, or for real traffic over UDP, TCP or TLS). */
export interface SipPacket {
  /** When it was sent. */
  time: Date;
  source: SipEndpoint;
  destination: SipEndpoint;
  /** The request's method, or for a response the method of its CSeq. */
  method: string;
  /** The start line, without CRLF. */
  startLine: string;
  /** The whole message: start line, headers (CRLF-separated), blank line and body. */
  data: string;
  /** The message's exact bytes when known (captured traffic); otherwise `data` in UTF-8. */
  bytes?: Buffer;
}

/** What a leg's dialogue is derived from: the facts the call engine recorded about the call. */
export interface SipLegFacts {
  /** The call's id (tags and branches are derived from it). */
  callId: string;
  /** The `Call-ID` header. */
  sipCallId: string;
  /** INCOMING: the network sent us the INVITE; OUTGOING: we sent it. */
  direction: "INCOMING" | "OUTGOING";
  /** The call's `to`: a SIP URI for outgoing calls, `sip:{user}@{fqdn}` for incoming ones. */
  to: string;
  /** The call's `from`: E.164, a SIP URI, or empty (withheld). */
  from: string;
  /** Incoming calls: the address the INVITE came from. */
  sourceIp: string | undefined;
  /** The final state, or the current one while in flight. */
  state: string;
  /** When the INVITE was sent: start_time for outgoing calls, create_time for incoming ones; undefined when never. */
  inviteTime: Date | undefined;
  ringTime: Date | undefined;
  answerTime: Date | undefined;
  endTime: Date | undefined;
  /** Who ended the call (LOCAL: the service; REMOTE: the network); undefined while in flight. */
  endedBy: "LOCAL" | "REMOTE" | undefined;
}
