/**
 * Reads a libpcap capture with an independent parser from npm
 * (`pcap-parser`: the file format — global header, record headers,
 * timestamps) and decodes each record's Ethernet II / IPv4 / UDP layers here,
 * checking the IPv4 header checksum and the UDP checksum by summing the
 * received words (with their checksums) to 0xffff, RFC 1071 style.
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
}

function onesSum(bytes: Buffer): number {
  let sum = 0;
  for (let i = 0; i < bytes.length; i += 2) sum += (bytes[i]! << 8) | (bytes[i + 1] ?? 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return sum;
}

function decode(timeMs: number, header: { capturedLength: number; originalLength: number }, data: Buffer) {
  const etherType = data.readUInt16BE(12);
  const ip = data.subarray(14);
  const ihl = (ip[0]! & 0x0f) * 4;
  const totalLength = ip.readUInt16BE(2);
  const udp = ip.subarray(ihl, totalLength);
  const udpLength = udp.readUInt16BE(4);
  const pseudo = Buffer.concat([
    ip.subarray(12, 20),
    Buffer.from([0, ip[9]!]),
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
    ipProtocol: ip[9]!,
    ipHeaderChecksumOk: onesSum(ip.subarray(0, ihl)) === 0xffff,
    sourceIp: dotted(ip.subarray(12, 16)),
    destinationIp: dotted(ip.subarray(16, 20)),
    sourcePort: udp.readUInt16BE(0),
    destinationPort: udp.readUInt16BE(2),
    udpLength,
    udpChecksumOk: udp.readUInt16BE(6) !== 0 && onesSum(pseudo) === 0xffff,
    payload: udp.subarray(8, udpLength).toString("utf8"),
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
