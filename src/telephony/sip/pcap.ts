/**
 * SIP packets as a libpcap capture file (the classic `.pcap` format that
 * tcpdump, Wireshark and tshark read): a little-endian global header
 * (magic 0xa1b2c3d4, version 2.4, microsecond timestamps, snaplen 65535,
 * link type 1 = Ethernet), then one record per packet: an Ethernet II frame
 * (locally administered MAC addresses 02:00:{last four bytes of the IP
 * address}) holding an IPv4 header (no options, DF, TTL 64, protocol UDP,
 * an identification counting from 1, header checksum) — or, when either
 * address is IPv6, an IPv6 header (hop limit 64, IPv4 addresses written as
 * IPv4-mapped `::ffff:a.b.c.d`) — and a UDP datagram (checksum over the
 * RFC 768 / RFC 8200 pseudo-header) whose payload is the message's bytes
 * (`bytes` when the packet has them, else `data` in UTF-8). IPv4-mapped
 * IPv6 addresses count as IPv4; an address that is not an IP address (a
 * host name) is written as 0.0.0.0. Record timestamps are the packets' times.
 * A payload above MAX_PCAP_PAYLOAD bytes does not fit one record.
 */
import { isIP } from "node:net";
import type { SipPacket } from "./types.js";

const LINKTYPE_ETHERNET = 1;
const SNAPLEN = 65_535;
const ETHERNET_HEADER = 14;
const IPV4_HEADER = 20;
const IPV6_HEADER = 40;
const UDP_HEADER = 8;

/** The largest message one packet can carry here (the snaplen less the Ethernet, IPv6 and UDP headers). */
export const MAX_PCAP_PAYLOAD = SNAPLEN - ETHERNET_HEADER - IPV6_HEADER - UDP_HEADER;

const MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

function ipv4Bytes(ip: string): number[] {
  const parts = ip.split(".").map(Number);
  if (
    parts.length !== 4 ||
    parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255) ||
    !/^[\d.]+$/.test(ip)
  ) {
    throw new Error(`not an IPv4 address: ${ip}`);
  }
  return parts;
}

/** The 16 bytes of an IPv6 address (a zone `%...` is dropped; an IPv4 address becomes IPv4-mapped). */
export function ipv6Bytes(ip: string): number[] {
  const address = ip.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (!address.includes(":")) return [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...ipv4Bytes(address)];
  const bad = () => new Error(`not an IPv6 address: ${ip}`);
  let text = address;
  let tail: number[] = [];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4 !== null) {
    const b = ipv4Bytes(v4[1]!);
    tail = [(b[0]! << 8) | b[1]!, (b[2]! << 8) | b[3]!];
    text = text.slice(0, -v4[1]!.length);
    if (text.endsWith(":") && !text.endsWith("::")) text = text.slice(0, -1);
  }
  const halves = text.split("::");
  if (halves.length > 2) throw bad();
  const words = (part: string) => (part === "" ? [] : part.split(":"));
  const hex = (w: string) => {
    if (!/^[0-9a-f]{1,4}$/i.test(w)) throw bad();
    return Number.parseInt(w, 16);
  };
  const head = words(halves[0]!).map(hex);
  const rest = halves.length === 2 ? words(halves[1]!).map(hex) : [];
  const given = head.length + rest.length + tail.length;
  if (halves.length === 1 ? given !== 8 : given > 7) throw bad();
  const all = [...head, ...new Array<number>(8 - given).fill(0), ...rest, ...tail];
  return all.flatMap((w) => [w >> 8, w & 0xff]);
}

/** Whether an address is written as IPv6 in a packet (IPv4-mapped addresses are IPv4). */
function isIpv6(ip: string): boolean {
  return isIP(ip.replace(/%.*$/, "")) === 6 && !MAPPED.test(ip);
}

function ipv4Of(ip: string): number[] {
  const address = MAPPED.exec(ip)?.[1] ?? ip;
  // A host name (a peer given by name, resolved by the socket) has no address to write.
  return isIP(address) === 0 ? [0, 0, 0, 0] : ipv4Bytes(address);
}

/** The 16-bit one's complement of the one's complement sum of `bytes` (RFC 1071). */
export function internetChecksum(bytes: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < bytes.length; i += 2) {
    sum += (bytes[i]! << 8) | (i + 1 < bytes.length ? bytes[i + 1]! : 0);
  }
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** The UDP header and payload of `packet` with its checksum over `pseudo` (the pseudo-header, without the datagram). */
function udpDatagram(packet: SipPacket, payload: Buffer, pseudo: Buffer): Buffer {
  const udp = Buffer.alloc(UDP_HEADER + payload.length);
  udp.writeUInt16BE(packet.source.port, 0);
  udp.writeUInt16BE(packet.destination.port, 2);
  udp.writeUInt16BE(udp.length, 4);
  payload.copy(udp, UDP_HEADER);
  const checksum = internetChecksum(Buffer.concat([pseudo, udp]));
  udp.writeUInt16BE(checksum === 0 ? 0xffff : checksum, 6);
  return udp;
}

function ethernet(src: number[], dst: number[], etherType: number): Buffer {
  const out = Buffer.alloc(ETHERNET_HEADER);
  Buffer.from([0x02, 0x00, ...dst.slice(-4)]).copy(out, 0);
  Buffer.from([0x02, 0x00, ...src.slice(-4)]).copy(out, 6);
  out.writeUInt16BE(etherType, 12);
  return out;
}

/** One Ethernet frame carrying `packet` over IPv4/UDP, or IPv6/UDP when an address is IPv6. */
function frame(packet: SipPacket, identification: number): Buffer {
  const payload = packet.bytes ?? Buffer.from(packet.data, "utf8");
  if (payload.length > MAX_PCAP_PAYLOAD) throw new Error("SIP message too large for one packet");
  const udpLength = UDP_HEADER + payload.length;
  if (isIpv6(packet.source.ip) || isIpv6(packet.destination.ip)) {
    const src = ipv6Bytes(MAPPED.test(packet.source.ip) ? packet.source.ip.slice(7) : packet.source.ip);
    const dst = ipv6Bytes(
      MAPPED.test(packet.destination.ip) ? packet.destination.ip.slice(7) : packet.destination.ip,
    );
    const ip = Buffer.alloc(IPV6_HEADER);
    ip.writeUInt32BE(0x60000000, 0); // version 6, traffic class 0, flow label 0
    ip.writeUInt16BE(udpLength, 4);
    ip.writeUInt8(17, 6); // next header: UDP
    ip.writeUInt8(64, 7); // hop limit
    Buffer.from(src).copy(ip, 8);
    Buffer.from(dst).copy(ip, 24);
    const pseudo = Buffer.alloc(40);
    Buffer.from(src).copy(pseudo, 0);
    Buffer.from(dst).copy(pseudo, 16);
    pseudo.writeUInt32BE(udpLength, 32);
    pseudo.writeUInt8(17, 39);
    return Buffer.concat([ethernet(src, dst, 0x86dd), ip, udpDatagram(packet, payload, pseudo)]);
  }
  const src = ipv4Of(packet.source.ip);
  const dst = ipv4Of(packet.destination.ip);
  const ipLength = IPV4_HEADER + udpLength;
  const ip = Buffer.alloc(IPV4_HEADER);
  ip.writeUInt8(0x45, 0); // version 4, IHL 5
  ip.writeUInt8(0, 1); // DSCP/ECN
  ip.writeUInt16BE(ipLength, 2);
  ip.writeUInt16BE(identification & 0xffff, 4);
  ip.writeUInt16BE(0x4000, 6); // DF, offset 0
  ip.writeUInt8(64, 8); // TTL
  ip.writeUInt8(17, 9); // UDP
  Buffer.from(src).copy(ip, 12);
  Buffer.from(dst).copy(ip, 16);
  ip.writeUInt16BE(internetChecksum(ip), 10);
  const pseudo = Buffer.alloc(12);
  Buffer.from(src).copy(pseudo, 0);
  Buffer.from(dst).copy(pseudo, 4);
  pseudo.writeUInt8(17, 9);
  pseudo.writeUInt16BE(udpLength, 10);
  return Buffer.concat([ethernet(src, dst, 0x0800), ip, udpDatagram(packet, payload, pseudo)]);
}

/** The capture file of `packets`, in their order. */
export function sipPcap(packets: readonly SipPacket[]): Buffer {
  const header = Buffer.alloc(24);
  header.writeUInt32LE(0xa1b2c3d4, 0);
  header.writeUInt16LE(2, 4);
  header.writeUInt16LE(4, 6);
  header.writeInt32LE(0, 8); // thiszone: UTC
  header.writeUInt32LE(0, 12); // sigfigs
  header.writeUInt32LE(SNAPLEN, 16);
  header.writeUInt32LE(LINKTYPE_ETHERNET, 20);
  const parts: Buffer[] = [header];
  packets.forEach((packet, i) => {
    const data = frame(packet, i + 1);
    const record = Buffer.alloc(16);
    const ms = packet.time.getTime();
    record.writeUInt32LE(Math.floor(ms / 1000), 0);
    record.writeUInt32LE((ms % 1000) * 1000, 4);
    record.writeUInt32LE(Math.min(data.length, SNAPLEN), 8);
    record.writeUInt32LE(data.length, 12);
    parts.push(record, data.subarray(0, SNAPLEN));
  });
  return Buffer.concat(parts);
}
