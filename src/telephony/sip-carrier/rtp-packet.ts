/**
 * RTP packets (RFC 3550 §5.1) as far as a G.711 call needs them: the fixed
 * 12-byte header written (version 2, no padding, extension or CSRC) and read
 * (CSRCs and a header extension skipped, padding removed), and RFC 4733
 * telephone-event payloads read. Anything that is not RTP version 2 reads as
 * undefined: a stray datagram is dropped, never a crash.
 */

export interface RtpPacket {
  payloadType: number;
  marker: boolean;
  sequence: number;
  timestamp: number;
  ssrc: number;
  payload: Buffer;
}

export const RTP_HEADER_BYTES = 12;

export function writeRtp(packet: RtpPacket): Buffer {
  const out = Buffer.alloc(RTP_HEADER_BYTES + packet.payload.length);
  out[0] = 0x80;
  out[1] = (packet.marker ? 0x80 : 0) | (packet.payloadType & 0x7f);
  out.writeUInt16BE(packet.sequence & 0xffff, 2);
  out.writeUInt32BE(packet.timestamp >>> 0, 4);
  out.writeUInt32BE(packet.ssrc >>> 0, 8);
  packet.payload.copy(out, RTP_HEADER_BYTES);
  return out;
}

export function readRtp(data: Buffer): RtpPacket | undefined {
  if (data.length < RTP_HEADER_BYTES || data[0]! >> 6 !== 2) return undefined;
  const padding = (data[0]! & 0x20) !== 0;
  const extension = (data[0]! & 0x10) !== 0;
  let offset = RTP_HEADER_BYTES + 4 * (data[0]! & 0x0f);
  if (extension) {
    if (data.length < offset + 4) return undefined;
    offset += 4 + 4 * data.readUInt16BE(offset + 2);
  }
  let end = data.length;
  if (padding) end -= data[data.length - 1]!;
  if (offset > end) return undefined;
  const payloadType = data[1]! & 0x7f;
  // 72-76 are RTCP packet types sent to the RTP port (RFC 5761): not media.
  if (payloadType >= 72 && payloadType <= 76) return undefined;
  return {
    payloadType,
    marker: (data[1]! & 0x80) !== 0,
    sequence: data.readUInt16BE(2),
    timestamp: data.readUInt32BE(4),
    ssrc: data.readUInt32BE(8),
    payload: data.subarray(offset, end),
  };
}

/** An RFC 4733 §2.3 named event: the key, whether this packet ends it, its duration in samples. */
export interface TelephoneEvent {
  key: string;
  end: boolean;
  duration: number;
}

const KEYS = "0123456789*#ABCD";

export function readTelephoneEvent(payload: Buffer): TelephoneEvent | undefined {
  if (payload.length < 4) return undefined;
  const key = KEYS[payload[0]!];
  if (key === undefined) return undefined;
  return { key, end: (payload[1]! & 0x80) !== 0, duration: payload.readUInt16BE(2) };
}
