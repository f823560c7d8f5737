/**
 * Where an outgoing SIP call goes (the SipCarrier's `targetsOf`):
 * - `sip:user@{sipDomainId}.{SIP base domain}`: the live REGISTER bindings
 *   of that domain user (src/voice/sip-registrations/), newest first, each
 *   reached at the address its REGISTER came from (so a phone behind NAT is
 *   reached where it registered from) with its Contact as the Request-URI;
 *   none when the user has no binding (the call fails SIP_404). They are
 *   tried one after the other while one answers 408, 480 or 503 (no
 *   parallel forking).
 * - any other `sip:` URI: its host and port (default 5060; `transport=tcp`
 *   for TCP), the host resolved by A/AAAA lookup (node:dns; no SRV/NAPTR).
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import type { Peer, TransportName } from "../../sip/transport.js";
import { parseUri, type SipUri } from "../../sip/uri.js";
import type { Registrar } from "../../voice/sip-registrations/registrar.js";
import { domainIdOf } from "../sip-edge/register.js";
import type { OutboundTarget } from "./carrier.js";

function transportOf(uri: SipUri, fallback: TransportName = "UDP"): TransportName {
  const t = uri.params.get("transport");
  if (uri.scheme === "sips" || (typeof t === "string" && t.toLowerCase() === "tls")) return "TLS";
  if (typeof t === "string" && t.toLowerCase() === "tcp") return "TCP";
  return fallback;
}

/** "1.2.3.4:5060" or "[::1]:5060" as address and port. */
function addressPort(text: string): { address: string; port: number } | undefined {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(text);
  return m === null ? undefined : { address: m[1]!, port: Number(m[2]) };
}

export function outboundTargets(deps: {
  registrar: Pick<Registrar, "bindings">;
  baseDomain: string;
}): (to: string) => Promise<OutboundTarget[]> {
  return async (to) => {
    let uri: SipUri;
    try {
      uri = parseUri(to);
    } catch {
      return [];
    }
    if (uri.scheme !== "sip" && uri.scheme !== "sips") return [];
    const domainId = domainIdOf(uri.host, deps.baseDomain);
    if (domainId !== undefined) {
      if (uri.user === undefined) return [];
      const bindings = await deps.registrar.bindings(domainId, decodeURIComponent(uri.user));
      const targets: OutboundTarget[] = [];
      for (const b of bindings) {
        const source = addressPort(b.sourceAddress);
        let contact: SipUri;
        try {
          contact = parseUri(b.contactUri);
        } catch {
          continue;
        }
        const transport = (["UDP", "TCP", "TLS"] as const).find((t) => t === b.sourceTransport);
        const destination: Peer = source
          ? { transport: transport ?? transportOf(contact), ...source }
          : { transport: transportOf(contact), address: contact.host, port: contact.port ?? 5060 };
        targets.push({ uri: b.contactUri, destination });
      }
      return targets;
    }
    const host = uri.host.replace(/^\[|\]$/g, "");
    let address = host;
    if (isIP(host) === 0) {
      try {
        address = (await lookup(host)).address;
      } catch {
        return [];
      }
    }
    const transport = transportOf(uri);
    return [
      { uri: to, destination: { transport, address, port: uri.port ?? (transport === "TLS" ? 5061 : 5060) } },
    ];
  };
}
