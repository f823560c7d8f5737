/**
 * RTCP packets (RFC 3550 §6.4–6.6): sender reports (SR, 200), receiver
 * reports (RR, 201) with their report blocks, source descriptions (SDES,
 * 202), BYE (203), and compound packets of several. Other packet types
 * (APP, feedback) are kept as opaque bodies.
 *
 * Parsing is strict (the validity checks of A.2: every packet version 2,
 * lengths adding up to the datagram exactly, padding only on the last, a
 * compound starting with an SR or RR) and never throws: a malformed
 * datagram comes back as an `RtcpParseError` with the reason.
 *
 * Times: NTP timestamps as two 32-bit halves (seconds since 1900 and the
 * fraction); `ntpFromMs` converts a Unix time in ms, `ntpMiddle` gives the
 * middle 32 bits that LSR and DLSR (§6.4.1) are counted in (1/65536 s).
 */

export const RTCP_SR = 200;
export const RTCP_RR = 201;
export const RTCP_SDES = 202;
export const RTCP_BYE = 203;

/** SDES item types (§6.5). */
export const SDES_CNAME = 1;

/** One reception report block (§6.4.1). */
export interface ReportBlock {
  /** The source this block is about. */
  ssrc: number;
  /** Fraction lost since the last report, in 1/256 (0..255). */
  fractionLost: number;
  /** Cumulative packets lost (24-bit signed: duplicates can make it negative). */
  cumulativeLost: number;
  /** Extended highest sequence number received. */
  highestSequence: number;
  /** Interarrival jitter, in timestamp units. */
  jitter: number;
  /** Middle 32 bits of the last SR's NTP time from that source (0: none). */
  lsr: number;
  /** Delay since that SR, in 1/65536 s. */
  dlsr: number;
}

export interface NtpTime {
  /** Seconds since 1900-01-01 (mod 2^32). */
  seconds: number;
  /** The fraction of a second, in 1/2^32. */
  fraction: number;
}

export interface SenderReport {
  type: "sr";
  ssrc: number;
  ntp: NtpTime;
  rtpTimestamp: number;
  packetCount: number;
  octetCount: number;
  reports: ReportBlock[];
}

export interface ReceiverReport {
  type: "rr";
  ssrc: number;
  reports: ReportBlock[];
}

export interface SdesChunk {
  ssrc: number;
  items: Array<{ type: number; text: string }>;
}

export interface SourceDescription {
  type: "sdes";
  chunks: SdesChunk[];
}

export interface Bye {
  type: "bye";
  ssrcs: number[];
  reason?: string | undefined;
}

export interface OtherRtcp {
  type: "other";
  packetType: number;
  /** The 5-bit count field. */
  count: number;
  body: Uint8Array;
}

export type RtcpPacket = SenderReport | ReceiverReport | SourceDescription | Bye | OtherRtcp;

/** Why a datagram is not a valid RTCP compound packet. */
export class RtcpParseError {
  constructor(readonly reason: string) {}
}

const NTP_UNIX_OFFSET = 2_208_988_800;

export function ntpFromMs(ms: number): NtpTime {
  const whole = Math.floor(ms / 1000);
  return {
    seconds: (whole + NTP_UNIX_OFFSET) >>> 0,
    fraction: Math.floor(((ms - whole * 1000) / 1000) * 2 ** 32) >>> 0,
  };
}

/** The middle 32 bits of an NTP time (units of 1/65536 s). */
export function ntpMiddle(t: NtpTime): number {
  return (((t.seconds & 0xffff) << 16) | (t.fraction >>> 16)) >>> 0;
}

/** Reads a compound RTCP packet (one or more), or says why it is not one. */
export function parseRtcp(data: Uint8Array): RtcpPacket[] | RtcpParseError {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const packets: RtcpPacket[] = [];
  let offset = 0;
  while (offset < data.length) {
    if (offset + 4 > data.length) return new RtcpParseError("a header runs past the end");
    const b0 = data[offset]!;
    const version = b0 >> 6;
    if (version !== 2) return new RtcpParseError(`version ${version}, not 2`);
    const count = b0 & 0x1f;
    const packetType = data[offset + 1]!;
    const length = (view.getUint16(offset + 2) + 1) * 4;
    const end = offset + length;
    if (end > data.length) return new RtcpParseError(`packet type ${packetType} runs past the end`);
    let bodyEnd = end;
    if (b0 & 0x20) {
      if (end !== data.length) return new RtcpParseError("padding before the last packet");
      const padding = data[end - 1]!;
      if (padding === 0 || padding > length - 4) return new RtcpParseError(`padding of ${padding} bytes`);
      bodyEnd -= padding;
    }
    if (packets.length === 0 && packetType !== RTCP_SR && packetType !== RTCP_RR) {
      return new RtcpParseError(`a compound packet starts with type ${packetType}, not SR or RR`);
    }
    const packet = parseOne(view, data, packetType, count, offset + 4, bodyEnd);
    if (packet instanceof RtcpParseError) return packet;
    packets.push(packet);
    offset = end;
  }
  if (packets.length === 0) return new RtcpParseError("empty");
  return packets;
}

function parseOne(
  view: DataView,
  data: Uint8Array,
  packetType: number,
  count: number,
  start: number,
  end: number,
): RtcpPacket | RtcpParseError {
  const need = (bytes: number, what: string) =>
    start + bytes > end ? new RtcpParseError(`${what} runs past its length`) : undefined;
  switch (packetType) {
    case RTCP_SR: {
      const short = need(24 + 24 * count, `an SR with ${count} report blocks`);
      if (short) return short;
      return {
        type: "sr",
        ssrc: view.getUint32(start),
        ntp: { seconds: view.getUint32(start + 4), fraction: view.getUint32(start + 8) },
        rtpTimestamp: view.getUint32(start + 12),
        packetCount: view.getUint32(start + 16),
        octetCount: view.getUint32(start + 20),
        reports: readBlocks(view, start + 24, count),
      };
    }
    case RTCP_RR: {
      const short = need(4 + 24 * count, `an RR with ${count} report blocks`);
      if (short) return short;
      return { type: "rr", ssrc: view.getUint32(start), reports: readBlocks(view, start + 4, count) };
    }
    case RTCP_SDES: {
      const chunks: SdesChunk[] = [];
      let at = start;
      for (let c = 0; c < count; c++) {
        if (at + 4 > end) return new RtcpParseError("an SDES chunk runs past its length");
        const chunk: SdesChunk = { ssrc: view.getUint32(at), items: [] };
        at += 4;
        for (;;) {
          if (at >= end) return new RtcpParseError("an SDES chunk has no end");
          const itemType = data[at]!;
          if (itemType === 0) {
            at = (at + 4) & ~3; // the null item, then padding to the next 32-bit boundary
            break;
          }
          if (at + 2 > end) return new RtcpParseError("an SDES item runs past its length");
          const len = data[at + 1]!;
          if (at + 2 + len > end) return new RtcpParseError("an SDES item runs past its length");
          chunk.items.push({
            type: itemType,
            text: Buffer.from(data.subarray(at + 2, at + 2 + len)).toString("utf8"),
          });
          at += 2 + len;
        }
        chunks.push(chunk);
      }
      return { type: "sdes", chunks };
    }
    case RTCP_BYE: {
      const short = need(4 * count, `a BYE with ${count} sources`);
      if (short) return short;
      const ssrcs = Array.from({ length: count }, (_, i) => view.getUint32(start + 4 * i));
      const at = start + 4 * count;
      let reason: string | undefined;
      if (at < end) {
        const len = data[at]!;
        if (at + 1 + len > end) return new RtcpParseError("a BYE reason runs past its length");
        reason = Buffer.from(data.subarray(at + 1, at + 1 + len)).toString("utf8");
      }
      return { type: "bye", ssrcs, reason };
    }
    default:
      return { type: "other", packetType, count, body: data.subarray(start, end) };
  }
}

function readBlocks(view: DataView, at: number, count: number): ReportBlock[] {
  const blocks: ReportBlock[] = [];
  for (let i = 0; i < count; i++, at += 24) {
    const lostWord = view.getUint32(at + 4);
    let cumulativeLost = lostWord & 0xffffff;
    if (cumulativeLost & 0x800000) cumulativeLost -= 0x1000000;
    blocks.push({
      ssrc: view.getUint32(at),
      fractionLost: lostWord >>> 24,
      cumulativeLost,
      highestSequence: view.getUint32(at + 8),
      jitter: view.getUint32(at + 12),
      lsr: view.getUint32(at + 16),
      dlsr: view.getUint32(at + 20),
    });
  }
  return blocks;
}

/** Writes `packets` as one compound packet (no padding). Throws RangeError on over-long lists. */
export function buildRtcp(packets: readonly RtcpPacket[]): Uint8Array {
  const parts = packets.map(buildOne);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function buildOne(packet: RtcpPacket): Uint8Array {
  switch (packet.type) {
    case "sr": {
      const out = header(RTCP_SR, packet.reports.length, 24 + 24 * packet.reports.length);
      const v = viewOf(out);
      v.setUint32(4, packet.ssrc);
      v.setUint32(8, packet.ntp.seconds);
      v.setUint32(12, packet.ntp.fraction);
      v.setUint32(16, packet.rtpTimestamp >>> 0);
      v.setUint32(20, packet.packetCount >>> 0);
      v.setUint32(24, packet.octetCount >>> 0);
      writeBlocks(v, 28, packet.reports);
      return out;
    }
    case "rr": {
      const out = header(RTCP_RR, packet.reports.length, 4 + 24 * packet.reports.length);
      const v = viewOf(out);
      v.setUint32(4, packet.ssrc);
      writeBlocks(v, 8, packet.reports);
      return out;
    }
    case "sdes": {
      const chunks = packet.chunks.map((chunk) => {
        const items = chunk.items.map((item) => {
          const text = Buffer.from(item.text, "utf8");
          if (text.length > 255) throw new RangeError("an SDES item is at most 255 bytes");
          return Buffer.concat([Buffer.from([item.type, text.length]), text]);
        });
        const body = Buffer.concat(items);
        const length = (4 + body.length + 4) & ~3; // room for at least one null byte, 32-bit aligned
        const out = Buffer.alloc(length);
        out.writeUInt32BE(chunk.ssrc >>> 0, 0);
        body.copy(out, 4);
        return out;
      });
      const body = Buffer.concat(chunks);
      const out = header(RTCP_SDES, packet.chunks.length, body.length);
      out.set(body, 4);
      return out;
    }
    case "bye": {
      const reason = packet.reason === undefined ? undefined : Buffer.from(packet.reason, "utf8");
      if (reason && reason.length > 255) throw new RangeError("a BYE reason is at most 255 bytes");
      const bodyLength = 4 * packet.ssrcs.length + (reason ? (reason.length + 1 + 3) & ~3 : 0);
      const out = header(RTCP_BYE, packet.ssrcs.length, bodyLength);
      const v = viewOf(out);
      packet.ssrcs.forEach((s, i) => {
        v.setUint32(4 + 4 * i, s >>> 0);
      });
      if (reason) {
        out[4 + 4 * packet.ssrcs.length] = reason.length;
        out.set(reason, 5 + 4 * packet.ssrcs.length);
      }
      return out;
    }
    case "other": {
      if (packet.body.length % 4 !== 0) throw new RangeError("an RTCP body is a multiple of 4 bytes");
      const out = header(packet.packetType, packet.count, packet.body.length);
      out.set(packet.body, 4);
      return out;
    }
  }
}

function header(packetType: number, count: number, bodyLength: number): Uint8Array {
  if (count > 31) throw new RangeError(`an RTCP packet counts at most 31 items, got ${count}`);
  const out = new Uint8Array(4 + bodyLength);
  out[0] = 0x80 | count;
  out[1] = packetType;
  viewOf(out).setUint16(2, (4 + bodyLength) / 4 - 1);
  return out;
}

function writeBlocks(v: DataView, at: number, blocks: readonly ReportBlock[]): void {
  for (const b of blocks) {
    const lost = Math.max(-0x800000, Math.min(0x7fffff, b.cumulativeLost)) & 0xffffff;
    v.setUint32(at, b.ssrc >>> 0);
    v.setUint32(at + 4, ((b.fractionLost & 0xff) << 24) | lost);
    v.setUint32(at + 8, b.highestSequence >>> 0);
    v.setUint32(at + 12, b.jitter >>> 0);
    v.setUint32(at + 16, b.lsr >>> 0);
    v.setUint32(at + 20, b.dlsr >>> 0);
    at += 24;
  }
}

function viewOf(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}
