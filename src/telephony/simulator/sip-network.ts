/**
 * The addresses of the simulated SIP network. They come from the
 * documentation ranges of RFC 5737, so they stand for real hosts and route
 * nowhere:
 *
 * | who                                   | address                                          | UDP port |
 * | ------------------------------------- | ------------------------------------------------ | -------- |
 * | the service's SIP edge                | 192.0.2.10 (TEST-NET-1)                           | 5060     |
 * | a caller into a SIP domain            | the call's `source_ip`                            | 5060     |
 * | an outgoing `sip:` destination        | its host when an IPv4 literal, otherwise          | its port |
 * |                                       | 198.51.100.{1..254} (TEST-NET-2), chosen by a     | or 5060  |
 * |                                       | hash of the host name (the simulator has no DNS)  |          |
 *
 * RTP (announced in the SDP bodies only; no media packets are captured)
 * uses an even port from 10000 to 19998 chosen by a hash of the call id.
 */
import { createHash } from "node:crypto";
import type { SipEndpoint } from "../sip/types.js";

/** The service's SIP edge. */
export const SIP_EDGE: SipEndpoint = { ip: "192.0.2.10", port: 5060 };

/** The SIP port of callers and of destinations that name none. */
export const SIP_PORT = 5060;

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

export function isIpv4(value: string): boolean {
  return IPV4.test(value);
}

/** Small deterministic number from `text`: the first 4 bytes of its SHA-256. */
export function hash32(text: string): number {
  return createHash("sha256").update(text).digest().readUInt32BE(0);
}

/** The parts of a `sip:` / `sips:` URI the network needs. */
export interface SipUriParts {
  user: string;
  host: string;
  /** The port in the URI; undefined when none. */
  port: number | undefined;
}

/** `sip:user@host:port;params` → its user, host and port; undefined when it is not a SIP URI. */
export function parseSipUri(uri: string): SipUriParts | undefined {
  const m = /^sips?:(?:([^@;]*)@)?(\[[^\]]+\]|[^:;?]+)(?::(\d{1,5}))?/i.exec(uri);
  if (m === null) return undefined;
  const port = m[3] === undefined ? undefined : Number(m[3]);
  return {
    user: m[1] ?? "",
    host: m[2]!.toLowerCase(),
    port: port !== undefined && port > 0 && port < 65536 ? port : undefined,
  };
}

/** Where the simulator sends an INVITE for `uri`. */
export function destinationOf(uri: string): SipEndpoint {
  const parts = parseSipUri(uri);
  const host = parts?.host ?? "";
  const ip = isIpv4(host) ? host : `198.51.100.${(hash32(host) % 254) + 1}`;
  return { ip, port: parts?.port ?? SIP_PORT };
}

/** The RTP port announced for one side of a call. */
export function rtpPort(callId: string, side: "local" | "remote"): number {
  return 10_000 + 2 * (hash32(`${callId}/${side}`) % 5000);
}
