/**
 * SIP packets as a libpcap capture file (the classic `.pcap` format that
 * tcpdump, Wireshark and tshark read): a little-endian global header
 * (magic 0xa1b2c3d4, version 2.4, microsecond timestamps, snaplen 65535,
 * link type 1 = Ethernet), then one record per packet: an Ethernet II frame
 * (locally administered MAC addresses 02:00:{IPv4 address}, EtherType
 * IPv4) holding an IPv4 header (no options, DF, TTL 64, protocol UDP, an
 * identification counting from 1, header checksum) and a UDP datagram
 * (checksum over the RFC 768 pseudo-header) whose payload is the message's
 * bytes (UTF-8). Record timestamps are the packets' times.
 */
import type { SipPacket } from "./types.js";

const LINKTYPE_ETHERNET = 1;
const SNAPLEN = 65_535;
const ETHERNET_HEADER = 14;
const IPV4_HEADER = 20;
const UDP_HEADER = 8;

function ipv4Bytes(ip: string): number[] {
  const parts = ip.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) {
    throw new Error(`not an IPv4 address: ${ip}`);
  }
  return parts;
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

/** One Ethernet frame carrying `packet` over IPv4/UDP. */
function frame(packet: SipPacket, identification: number): Buffer {
  const payload = Buffer.from(packet.data, "utf8");
  const src = ipv4Bytes(packet.source.ip);
  const dst = ipv4Bytes(packet.destination.ip);
  const udpLength = UDP_HEADER + payload.length;
  const ipLength = IPV4_HEADER + udpLength;
  if (ipLength > 0xffff) throw new Error("SIP message too large for one UDP datagram");
  const out = Buffer.alloc(ETHERNET_HEADER + ipLength);
  // Ethernet II: destination MAC, source MAC, EtherType.
  Buffer.from([0x02, 0x00, ...dst]).copy(out, 0);
  Buffer.from([0x02, 0x00, ...src]).copy(out, 6);
  out.writeUInt16BE(0x0800, 12);
  // IPv4.
  const ip = ETHERNET_HEADER;
  out.writeUInt8(0x45, ip); // version 4, IHL 5
  out.writeUInt8(0, ip + 1); // DSCP/ECN
  out.writeUInt16BE(ipLength, ip + 2);
  out.writeUInt16BE(identification & 0xffff, ip + 4);
  out.writeUInt16BE(0x4000, ip + 6); // DF, offset 0
  out.writeUInt8(64, ip + 8); // TTL
  out.writeUInt8(17, ip + 9); // UDP
  Buffer.from(src).copy(out, ip + 12);
  Buffer.from(dst).copy(out, ip + 16);
  out.writeUInt16BE(internetChecksum(out.subarray(ip, ip + IPV4_HEADER)), ip + 10);
  // UDP.
  const udp = ip + IPV4_HEADER;
  out.writeUInt16BE(packet.source.port, udp);
  out.writeUInt16BE(packet.destination.port, udp + 2);
  out.writeUInt16BE(udpLength, udp + 4);
  payload.copy(out, udp + UDP_HEADER);
  const pseudo = Buffer.alloc(12 + udpLength);
  Buffer.from(src).copy(pseudo, 0);
  Buffer.from(dst).copy(pseudo, 4);
  pseudo.writeUInt8(17, 9);
  pseudo.writeUInt16BE(udpLength, 10);
  out.copy(pseudo, 12, udp, udp + udpLength);
  const checksum = internetChecksum(pseudo);
  out.writeUInt16BE(checksum === 0 ? 0xffff : checksum, udp + 6);
  return out;
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
