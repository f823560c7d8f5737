/**
 * Where an outgoing call to a number goes (issue 27 item 4): through the
 * enabled carrier trunks (src/voice/sip-trunks/routing.ts), lowest priority
 * first, one after the other (the SipCarrier fails over on 408, 5xx, a
 * trunk silent for TRUNK_NO_RESPONSE_SECONDS, or credentials refused).
 *
 * - The destination: `+E164` or `tel:+E164` (visual separators and
 *   parameters of a `tel:` URI dropped); anything else: no target (the
 *   call fails SIP_404).
 * - Request-URI and To: `sip:+E164@{trunk host[:port]};user=phone` (RFC
 *   3261 §19.1.6, what carriers and LiveKit's SIP service send), with
 *   `transport=tcp` / `transport=tls` for those trunks.
 * - The next hop: the trunk's address (its host resolved by A/AAAA lookup,
 *   no SRV/NAPTR), port as given or 5060 (5061 for TLS), over its
 *   transport. TLS uses the SIP transport's client TLS (the system's CAs
 *   and SIP_TLS_CA_FILE's), connecting to the host by name so its
 *   certificate is checked against that name (test/sip-trunks/tls.test.ts).
 * - Digest: a DigestClient with the trunk's username and password (readable
 *   through secret-box.ts) when a password is stored; otherwise challenges
 *   go unanswered and the next trunk is tried.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { DigestClient } from "../../sip/client-digest.js";
import type { TransportName } from "../../sip/transport.js";
import type { RoutedTrunk } from "../../voice/sip-trunks/routing.js";
import type { OutboundTarget } from "./carrier.js";

/** `+E164` of a `+E164` or `tel:+E164` destination, undefined for anything else. */
export function e164Of(to: string): string | undefined {
  let text = to.trim();
  if (/^tel:/i.test(text))
    text = text
      .slice(4)
      .split(";")[0]!
      .replace(/[-.()\s]/g, "");
  return /^\+[1-9][0-9]{1,14}$/.test(text) ? text : undefined;
}

/** A trunk's `host[:port]` as host and port. */
export function trunkHostPort(address: string, transport: TransportName): { host: string; port: number } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(address);
  const fallback = transport === "TLS" ? 5061 : 5060;
  if (v6 !== null) return { host: v6[1]!, port: v6[2] === undefined ? fallback : Number(v6[2]) };
  const [host, port] = address.split(":");
  return { host: host!, port: port === undefined ? fallback : Number(port) };
}

export function trunkTargets(deps: {
  trunks(): Promise<RoutedTrunk[]>;
}): (to: string) => Promise<OutboundTarget[]> {
  return async (to) => {
    const number = e164Of(to);
    if (number === undefined) return [];
    const targets: OutboundTarget[] = [];
    for (const trunk of await deps.trunks()) {
      const transport = trunk.transport as TransportName;
      const { host, port } = trunkHostPort(trunk.address, transport);
      let address = host;
      // TLS connects to the name itself, so the certificate is checked against it.
      if (isIP(host) === 0 && transport !== "TLS") {
        try {
          address = (await lookup(host)).address;
        } catch {
          continue; // a trunk whose name does not resolve is skipped
        }
      }
      const hostPart = `${isIP(host) === 6 ? `[${host}]` : host}${trunk.address.match(/:\d+$/) ? `:${port}` : ""}`;
      const params = transport === "UDP" ? ";user=phone" : `;transport=${transport.toLowerCase()};user=phone`;
      const uri = `sip:${number}@${hostPart}${params}`;
      targets.push({
        uri,
        to: uri,
        destination: { transport, address, port },
        trunk: {
          id: trunk.id,
          digest:
            trunk.password === undefined
              ? undefined
              : new DigestClient({ username: trunk.username, password: trunk.password }),
        },
      });
    }
    return targets;
  };
}
