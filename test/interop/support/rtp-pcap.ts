/**
 * Writes a libpcap capture of G.711 RTP packets for SIPp's
 * `play_pcap_audio` (written here from the pcap and RFC 3550 formats):
 * Ethernet II / IPv4 / UDP records, one RTP packet of 20 ms each, 20 ms
 * apart. SIPp replays each record's UDP payload as captured, rewriting only
 * the UDP ports and addresses (to and from the call's media), so the RTP
 * header written here — payload type, sequence, timestamp, SSRC, marker —
 * is what the service receives.
 */
import { writeFileSync } from "node:fs";
import { FRAME } from "./audio.js";

export interface RtpStream {
  payloadType: number;
  ssrc: number;
  /** Sequence number of the first packet. */
  sequence: number;
  /** RTP timestamp of the first packet. */
  timestamp: number;
}

function ipv4Checksum(header: Buffer): number {
  let sum = 0;
  for (let i = 0; i < header.length; i += 2) sum += header.readUInt16BE(i);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** One Ethernet/IPv4/UDP frame from 10.0.0.1:6000 to 10.0.0.2:6000 carrying `payload`. */
function frame(payload: Buffer, id: number): Buffer {
  const ethernet = Buffer.alloc(14);
  Buffer.from([2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]).copy(ethernet, 0);
  ethernet.writeUInt16BE(0x0800, 12);
  const ip = Buffer.alloc(20);
  ip[0] = 0x45;
  ip.writeUInt16BE(20 + 8 + payload.length, 2);
  ip.writeUInt16BE(id & 0xffff, 4);
  ip[8] = 64; // TTL
  ip[9] = 17; // UDP
  Buffer.from([10, 0, 0, 1, 10, 0, 0, 2]).copy(ip, 12);
  ip.writeUInt16BE(ipv4Checksum(ip), 10);
  const udp = Buffer.alloc(8);
  udp.writeUInt16BE(6000, 0);
  udp.writeUInt16BE(6000, 2);
  udp.writeUInt16BE(8 + payload.length, 4);
  // Checksum 0 (none): SIPp computes the one it sends.
  return Buffer.concat([ethernet, ip, udp, payload]);
}

/** The RTP packets (header + payload) of `payloads`, one per 20 ms. */
export function rtpPackets(stream: RtpStream, payloads: Buffer[]): Buffer[] {
  return payloads.map((payload, i) => {
    const header = Buffer.alloc(12);
    header[0] = 0x80;
    header[1] = (i === 0 ? 0x80 : 0) | stream.payloadType;
    header.writeUInt16BE((stream.sequence + i) & 0xffff, 2);
    header.writeUInt32BE((stream.timestamp + i * FRAME) >>> 0, 4);
    header.writeUInt32BE(stream.ssrc >>> 0, 8);
    return Buffer.concat([header, payload]);
  });
}

/** Writes `packets` (RTP) to `path` as a pcap, 20 ms apart. */
export function writeRtpPcap(path: string, packets: Buffer[]): void {
  const global = Buffer.alloc(24);
  global.writeUInt32LE(0xa1b2c3d4, 0);
  global.writeUInt16LE(2, 4);
  global.writeUInt16LE(4, 6);
  global.writeUInt32LE(65535, 16); // snap length
  global.writeUInt32LE(1, 20); // LINKTYPE_ETHERNET
  const records = packets.map((rtp, i) => {
    const data = frame(rtp, i);
    const header = Buffer.alloc(16);
    const us = i * 20_000;
    header.writeUInt32LE(1_700_000_000 + Math.floor(us / 1_000_000), 0);
    header.writeUInt32LE(us % 1_000_000, 4);
    header.writeUInt32LE(data.length, 8);
    header.writeUInt32LE(data.length, 12);
    return Buffer.concat([header, data]);
  });
  writeFileSync(path, Buffer.concat([global, ...records]));
}
