/**
 * Packet spacing measured by the kernel's clock, not a Node event loop's:
 * `dumpcap` (Wireshark's capture tool; Debian's `wireshark-common`/`tshark`)
 * records loopback UDP for a few seconds (64-byte snapshots, classic pcap),
 * and the service's RTP packets to the callers' ports are read back: per
 * destination port, the time between consecutive sequence numbers. Needs
 * the right to capture on `lo` (root, or CAP_NET_RAW); undefined when it
 * cannot (the callers' own timestamps are then the figure).
 */
import { execFile } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";

export interface CapturedSpacing {
  seconds: number;
  /** Service → callers RTP packets captured. */
  packets: number;
  /** Intervals between consecutive sequence numbers: [upper edge ms, count], 0.25 ms buckets. */
  spacing: Array<[number, number]>;
  /** Sequence gaps seen in the capture. */
  gaps: number;
  /** Packets dumpcap says it dropped. */
  captureDropped: number | undefined;
}

const BUCKET_MS = 0.25;
const BUCKETS = 800;

export async function captureSpacing(
  dir: string,
  callerPorts: ReadonlySet<number>,
  seconds: number,
): Promise<CapturedSpacing | { error: string }> {
  const file = join(dir, `media-${Date.now()}.pcap`);
  const out = await new Promise<{ err: Error | null; stderr: string }>((resolve) => {
    execFile(
      "dumpcap",
      ["-q", "-i", "lo", "-f", "udp", "-s", "64", "-P", "-B", "64", "-a", `duration:${seconds}`, "-w", file],
      { timeout: (seconds + 30) * 1000 },
      (err, _stdout, stderr) => resolve({ err, stderr }),
    );
  });
  if (out.err !== null)
    return { error: `dumpcap: ${out.err.message.split("\n")[0]} ${out.stderr.slice(-300)}` };
  try {
    const pcap = await readFile(file);
    return { ...parse(pcap, callerPorts), seconds, captureDropped: dropped(out.stderr) };
  } finally {
    await rm(file, { force: true });
  }
}

function dropped(stderr: string): number | undefined {
  // "Packets received/dropped on interface 'lo': 8979/0 (pcap:0/dumpcap:0/flushed:0/ps_ifdrop:0)"
  const m = /received\/dropped on interface '[^']*':\s*\d+\/(\d+)/.exec(stderr);
  return m === null ? undefined : Number(m[1]);
}

function parse(pcap: Buffer, callerPorts: ReadonlySet<number>) {
  const magic = pcap.readUInt32LE(0);
  const nano = magic === 0xa1b23c4d;
  if (magic !== 0xa1b2c3d4 && !nano) throw new Error("not a little-endian classic pcap");
  const linkType = pcap.readUInt32LE(20);
  // 1: Ethernet (Linux lo), 113: Linux cooked, 101/12: raw IP.
  const linkHeader =
    linkType === 1 ? 14 : linkType === 113 ? 16 : linkType === 101 || linkType === 12 ? 0 : -1;
  if (linkHeader < 0) throw new Error(`link type ${linkType} not read`);
  const histogram = new Float64Array(BUCKETS + 1);
  const last = new Map<number, { seq: number; at: number }>();
  let packets = 0;
  let gaps = 0;
  let at = 24;
  while (at + 16 <= pcap.length) {
    const sec = pcap.readUInt32LE(at);
    const frac = pcap.readUInt32LE(at + 4);
    const incl = pcap.readUInt32LE(at + 8);
    const data = pcap.subarray(at + 16, at + 16 + incl);
    at += 16 + incl;
    const ip = linkHeader;
    if (data.length < ip + 20 || data[ip]! >> 4 !== 4 || data[ip + 9] !== 17) continue;
    const udp = ip + (data[ip]! & 0x0f) * 4;
    if (data.length < udp + 8 + 4) continue;
    const dstPort = data.readUInt16BE(udp + 2);
    if (!callerPorts.has(dstPort)) continue;
    const rtp = udp + 8;
    if (data[rtp]! >> 6 !== 2) continue;
    const pt = data[rtp + 1]! & 0x7f;
    if (pt !== 0 && pt !== 8) continue;
    const seq = data.readUInt16BE(rtp + 2);
    const ms = sec * 1000 + (nano ? frac / 1e6 : frac / 1e3);
    packets++;
    const prev = last.get(dstPort);
    if (prev !== undefined) {
      const step = (seq - prev.seq + 0x10000) & 0xffff;
      if (step === 1) {
        const bucket = Math.min(BUCKETS, Math.ceil((ms - prev.at) / BUCKET_MS));
        histogram[bucket] = histogram[bucket]! + 1;
      } else if (step > 1 && step < 0x8000) gaps += step - 1;
    }
    last.set(dstPort, { seq, at: ms });
  }
  const spacing: Array<[number, number]> = [];
  histogram.forEach((c, i) => {
    if (c > 0) spacing.push([i * BUCKET_MS, c]);
  });
  return { packets, spacing, gaps };
}
