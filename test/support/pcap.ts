/**
 * Reads a libpcap capture with an independent parser from npm
 * (`pcap-parser`: the file format — global header, record headers,
 * timestamps) and decodes each record's Ethernet II / IPv4 or IPv6 / UDP
 * layers here, checking the IPv4 header checksum and the UDP checksum by
 * summing the received words (with their checksums) to 0xffff, RFC 1071 style.
 */
import { Readable } from "node:stream";
// @ts-expect-error pcap-parser ships no types
import pcapParser from "pcap-parser";

export interface PcapGlobalHeader {
  magicNumber: number;
  majorVersion: number;
  minorVersion: number;
  linkLayerType: number;
  snapshotLength: number;
}

export interface DecodedPacket {
  /** Record timestamp in ms. */
  timeMs: number;
  capturedLength: number;
  originalLength: number;
  etherType: number;
  ipVersion: number;
  ipTotalLength: number;
  ipProtocol: number;
  ipHeaderChecksumOk: boolean;
  sourceIp: string;
  destinationIp: string;
  sourcePort: number;
  destinationPort: number;
  udpLength: number;
  udpChecksumOk: boolean;
  payload: string;
  payloadBytes: Buffer;
}

function onesSum(bytes: Buffer): number {
  let sum = 0;
  for (let i = 0; i < bytes.length; i += 2) sum += (bytes[i]! << 8) | (bytes[i + 1] ?? 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return sum;
}

/** An IPv6 address in RFC 5952 form (the longest run of two or more zero words as `::`). */
export function formatIpv6(bytes: Buffer): string {
  const words = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2));
  let best = { at: -1, length: 1 };
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > best.length) best = { at: i, length: j - i };
    i = j === i ? i + 1 : j;
  }
  const hex = (ws: number[]) => ws.map((w) => w.toString(16)).join(":");
  if (best.at < 0) return hex(words);
  return `${hex(words.slice(0, best.at))}::${hex(words.slice(best.at + best.length))}`;
}

function decode(timeMs: number, header: { capturedLength: number; originalLength: number }, data: Buffer) {
  const etherType = data.readUInt16BE(12);
  const ip = data.subarray(14);
  const v6 = ip[0]! >> 4 === 6;
  // IPv4: header length from IHL, addresses at 12/16; IPv6: a fixed 40-byte header, addresses at 8/24.
  const ihl = v6 ? 40 : (ip[0]! & 0x0f) * 4;
  const totalLength = v6 ? 40 + ip.readUInt16BE(4) : ip.readUInt16BE(2);
  const protocol = v6 ? ip[6]! : ip[9]!;
  const udp = ip.subarray(ihl, totalLength);
  const udpLength = udp.readUInt16BE(4);
  const pseudo = v6
    ? Buffer.concat([
        ip.subarray(8, 40),
        Buffer.from([0, 0, udpLength >> 8, udpLength & 0xff, 0, 0, 0, protocol]),
        udp.subarray(0, udpLength),
      ])
    : Buffer.concat([
        ip.subarray(12, 20),
        Buffer.from([0, protocol]),
        Buffer.from([udpLength >> 8, udpLength & 0xff]),
        udp.subarray(0, udpLength),
      ]);
  const dotted = (b: Buffer) => [...b].join(".");
  return {
    timeMs,
    capturedLength: header.capturedLength,
    originalLength: header.originalLength,
    etherType,
    ipVersion: ip[0]! >> 4,
    ipTotalLength: totalLength,
    ipProtocol: protocol,
    // IPv6 has no header checksum.
    ipHeaderChecksumOk: v6 || onesSum(ip.subarray(0, ihl)) === 0xffff,
    sourceIp: v6 ? formatIpv6(ip.subarray(8, 24)) : dotted(ip.subarray(12, 16)),
    destinationIp: v6 ? formatIpv6(ip.subarray(24, 40)) : dotted(ip.subarray(16, 20)),
    sourcePort: udp.readUInt16BE(0),
    destinationPort: udp.readUInt16BE(2),
    udpLength,
    udpChecksumOk: udp.readUInt16BE(6) !== 0 && onesSum(pseudo) === 0xffff,
    payload: udp.subarray(8, udpLength).toString("utf8"),
    payloadBytes: Buffer.from(udp.subarray(8, udpLength)),
  } satisfies DecodedPacket;
}

/** Parses `pcap` with pcap-parser and decodes its packets. */
export function readPcap(pcap: Uint8Array): Promise<{ header: PcapGlobalHeader; packets: DecodedPacket[] }> {
  return new Promise((resolve, reject) => {
    const parser = pcapParser.parse(Readable.from([Buffer.from(pcap)]));
    let header: PcapGlobalHeader | undefined;
    const packets: DecodedPacket[] = [];
    parser.on("globalHeader", (h: PcapGlobalHeader) => {
      header = h;
    });
    parser.on(
      "packet",
      (p: {
        header: {
          timestampSeconds: number;
          timestampMicroseconds: number;
          capturedLength: number;
          originalLength: number;
        };
        data: Buffer;
      }) => {
        const timeMs = p.header.timestampSeconds * 1000 + p.header.timestampMicroseconds / 1000;
        packets.push(decode(timeMs, p.header, p.data));
      },
    );
    parser.on("error", reject);
    parser.on("end", () => {
      if (header === undefined) reject(new Error("no global header"));
      else resolve({ header, packets });
    });
  });
}
