/**
 * The destination guard: webhooks never reach private, loopback,
 * link-local, unique-local, multicast, reserved or unspecified addresses
 * unless configuration allows it (WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS=true,
 * for tests and local development).
 *
 * The check runs inside the DNS lookup of the connection itself (the
 * `lookup` option of node:http), so the address checked is the address
 * connected to: a name that resolves to a public address when checked and
 * to a private one when connecting (DNS rebinding) cannot slip through.
 * Every redirect hop goes through the same lookup. IP literals, which Node
 * connects to without a lookup, are checked before the request.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";

/** A destination refused by the guard; the message says why (recorded on the attempt). */
export class DestinationRefusedError extends Error {
  override name = "DestinationRefusedError";
}

const blocked = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local (cloud metadata services live here)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 128], // unspecified
  ["::1", 128], // loopback
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["ff00::", 8], // multicast
  ["64:ff9b::", 96], // NAT64 (may embed any IPv4 address)
  ["2001:db8::", 32], // documentation
] as const) {
  blocked.addSubnet(net, prefix, "ipv6");
}

/** Whether `address` (an IP literal) may be a webhook destination when private ones are not allowed. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !blocked.check(address, "ipv4");
  if (family === 6) {
    // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible addresses: judge the IPv4 address.
    const mapped = /^(?:::ffff:|::)(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return !blocked.check(mapped[1]!, "ipv4");
    const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
    if (hex) {
      const hi = Number.parseInt(hex[1]!, 16);
      const lo = Number.parseInt(hex[2]!, 16);
      return !blocked.check(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, "ipv4");
    }
    return !blocked.check(address, "ipv6");
  }
  return false;
}

function refusal(host: string, address: string): DestinationRefusedError {
  const shown = host === address ? address : `${host} (${address})`;
  return new DestinationRefusedError(
    `destination ${shown} is a private, loopback, link-local or reserved address; ` +
      "set WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS=true to allow it",
  );
}

/** The host of a URL without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1");
}

/** Refuses an IP-literal host that is not public (names are checked at lookup). */
export function checkLiteralHost(url: URL): void {
  const host = hostOf(url);
  if (isIP(host) !== 0 && !isPublicAddress(host)) throw refusal(host, host);
}

/** A `lookup` for node:http that fails when any address of the name is not public. */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, options, (err, address: string | LookupAddress[], family?: number) => {
    if (err) {
      callback(err, "", 0);
      return;
    }
    const addresses = Array.isArray(address) ? address.map((a) => a.address) : [address];
    const bad = addresses.find((a) => !isPublicAddress(a));
    if (bad !== undefined) {
      callback(refusal(hostname, bad) as NodeJS.ErrnoException, "", 0);
      return;
    }
    // biome-ignore lint/suspicious/noExplicitAny: passes the lookup result through in whichever shape was asked
    (callback as any)(null, address, family);
  });
};
