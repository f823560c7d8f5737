/**
 * The pcap of captured messages (src/telephony/sip/pcap.ts), read by the
 * independent reader (test/support/pcap.ts): exact bytes (not UTF-8 text)
 * as the payload, IPv6 packets for IPv6 addresses, IPv4-mapped addresses as
 * IPv4, a mixed pair as IPv6 with the IPv4 side mapped, checksums valid,
 * and a message too large for one packet refused.
 */
import { describe, expect, it } from "vitest";
import { ipv6Bytes, MAX_PCAP_PAYLOAD, sipPcap } from "../../src/telephony/sip/pcap.js";
import type { SipPacket } from "../../src/telephony/sip/types.js";
import { formatIpv6, readPcap } from "../support/pcap.js";

function packet(source: string, destination: string, bytes?: Buffer): SipPacket {
  const data = "OPTIONS sip:x SIP/2.0\r\nContent-Length: 0\r\n\r\n";
  return {
    time: new Date("2026-11-28T05:00:00.250Z"),
    source: { ip: source, port: 5062 },
    destination: { ip: destination, port: 5060 },
    method: "OPTIONS",
    startLine: "OPTIONS sip:x SIP/2.0",
    data,
    ...(bytes === undefined ? {} : { bytes }),
  };
}

describe("the SIP pcap", () => {
  it("writes the exact bytes when a packet has them", async () => {
    const bytes = Buffer.concat([
      Buffer.from('INVITE sip:x SIP/2.0\r\nFrom: "'),
      Buffer.from([0xff, 0xfe]), // not UTF-8
      Buffer.from('" <sip:a@b>\r\nContent-Length: 0\r\n\r\n'),
    ]);
    const { packets } = await readPcap(sipPcap([packet("198.51.100.1", "192.0.2.1", bytes)]));
    expect(packets[0]!.payloadBytes.equals(bytes)).toBe(true);
    expect(packets[0]!.udpChecksumOk).toBe(true);
  });

  it("writes IPv6 packets for IPv6 addresses, with a valid UDP checksum", async () => {
    const { packets } = await readPcap(sipPcap([packet("2001:db8::7", "2001:db8:0:1::1")]));
    const [p] = packets;
    expect([p!.etherType, p!.ipVersion, p!.ipProtocol]).toEqual([0x86dd, 6, 17]);
    expect([p!.sourceIp, p!.sourcePort, p!.destinationIp, p!.destinationPort]).toEqual([
      "2001:db8::7",
      5062,
      "2001:db8:0:1::1",
      5060,
    ]);
    expect(p!.udpChecksumOk).toBe(true);
    expect(p!.timeMs).toBe(Date.parse("2026-11-28T05:00:00.250Z"));
  });

  it("writes IPv4-mapped addresses as IPv4, and maps the IPv4 side of a mixed pair", async () => {
    const { packets } = await readPcap(
      sipPcap([packet("::ffff:198.51.100.1", "::ffff:192.0.2.1"), packet("198.51.100.1", "::1")]),
    );
    expect([packets[0]!.ipVersion, packets[0]!.sourceIp, packets[0]!.destinationIp]).toEqual([
      4,
      "198.51.100.1",
      "192.0.2.1",
    ]);
    expect([packets[1]!.ipVersion, packets[1]!.sourceIp, packets[1]!.destinationIp]).toEqual([
      6,
      "::ffff:c633:6401",
      "::1",
    ]);
    expect(packets.every((p) => p.udpChecksumOk && p.ipHeaderChecksumOk)).toBe(true);
  });

  it("writes a host name, which has no address, as 0.0.0.0", async () => {
    const { packets } = await readPcap(sipPcap([packet("198.51.100.1", "sip.example.com")]));
    expect([packets[0]!.ipVersion, packets[0]!.destinationIp, packets[0]!.udpChecksumOk]).toEqual([
      4,
      "0.0.0.0",
      true,
    ]);
  });

  it("reads IPv6 addresses in every form", () => {
    const cases: Array<[string, string]> = [
      ["::", "::"],
      ["::1", "::1"],
      ["2001:DB8::", "2001:db8::"],
      ["fe80::1%eth0", "fe80::1"],
      ["[2001:db8::1]", "2001:db8::1"],
      ["1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"],
      ["::ffff:192.0.2.1", "::ffff:c000:201"],
      ["64:ff9b::192.0.2.33", "64:ff9b::c000:221"],
    ];
    for (const [input, expected] of cases) expect(formatIpv6(Buffer.from(ipv6Bytes(input)))).toBe(expected);
    for (const bad of ["1::2::3", "1:2:3:4:5:6:7:8:9", "12345::", "g::1", "1:2:3:4:5:6:7"]) {
      expect(() => ipv6Bytes(bad), bad).toThrow(/not an IPv6 address/);
    }
  });

  it("refuses a message too large for one packet", () => {
    const big = Buffer.alloc(MAX_PCAP_PAYLOAD + 1, 0x61);
    expect(() => sipPcap([packet("198.51.100.1", "192.0.2.1", big)])).toThrow(/too large/);
    expect(() => sipPcap([packet("198.51.100.1", "192.0.2.1", big.subarray(1))])).not.toThrow();
  });
});
