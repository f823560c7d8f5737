/**
 * RTP packets (RFC 3550 §5.1): parse and serialize the fixed header
 * (version 2, padding, extension, CSRC count, marker, payload type,
 * sequence number, timestamp, SSRC), the CSRC list, the header extension
 * (§5.3.1: a 16-bit profile word and 32-bit words of data) and padding.
 *
 * Parsing is strict and never throws: anything malformed (too short, not
 * version 2, a CSRC list or extension running past the end, padding
 * claiming zero bytes or more than the payload) comes back as an
 * `RtpParseError` with the reason, so a socket handler can count and drop
 * it. The payload (and extension data) of a parsed packet are views into
 * the datagram, not copies.
 *
 * Serializing writes into a buffer the caller may reuse (`writeRtp`), so
 * the sending path allocates nothing per packet.
 */

/** Bytes of the fixed header. */
export const RTP_HEADER_BYTES = 12;

export interface RtpExtension {
  /** The profile-defined 16 bits (0xBEDE for RFC 8285 one-byte headers). */
  profile: number;
  /** The extension's data: a multiple of 4 bytes. */
  data: Uint8Array;
}

export interface RtpPacket {
  /** Bytes of padding at the end (0: the P bit clear). */
  padding: number;
  marker: boolean;
  /** 0..127. */
  payloadType: number;
  /** 0..65535. */
  sequence: number;
  /** 0..2^32-1. */
  timestamp: number;
  /** 0..2^32-1. */
  ssrc: number;
  /** Contributing sources (at most 15). */
  csrc: readonly number[];
  extension?: RtpExtension | undefined;
  payload: Uint8Array;
}

/** Why a datagram is not an RTP packet. */
export class RtpParseError {
  constructor(readonly reason: string) {}
}

/** Reads `data` as one RTP packet, or says why it is not one. */
export function parseRtp(data: Uint8Array): RtpPacket | RtpParseError {
  if (data.length < RTP_HEADER_BYTES)
    return new RtpParseError(`shorter than the ${RTP_HEADER_BYTES}-byte header`);
  const b0 = data[0]!;
  const b1 = data[1]!;
  const version = b0 >> 6;
  if (version !== 2) return new RtpParseError(`version ${version}, not 2`);
  const hasPadding = (b0 & 0x20) !== 0;
  const hasExtension = (b0 & 0x10) !== 0;
  const csrcCount = b0 & 0x0f;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let offset = RTP_HEADER_BYTES + 4 * csrcCount;
  if (offset > data.length) return new RtpParseError(`${csrcCount} CSRCs run past the end`);
  const csrc: number[] = [];
  for (let i = 0; i < csrcCount; i++) csrc.push(view.getUint32(RTP_HEADER_BYTES + 4 * i));
  let extension: RtpExtension | undefined;
  if (hasExtension) {
    if (offset + 4 > data.length) return new RtpParseError("the extension header runs past the end");
    const profile = view.getUint16(offset);
    const words = view.getUint16(offset + 2);
    const start = offset + 4;
    offset = start + 4 * words;
    if (offset > data.length) return new RtpParseError(`the extension's ${words} words run past the end`);
    extension = { profile, data: data.subarray(start, offset) };
  }
  let end = data.length;
  let padding = 0;
  if (hasPadding) {
    padding = data[data.length - 1]!;
    if (padding === 0) return new RtpParseError("padding of 0 bytes");
    if (padding > data.length - offset)
      return new RtpParseError(`padding of ${padding} bytes exceeds the payload`);
    end -= padding;
  }
  return {
    padding,
    marker: (b1 & 0x80) !== 0,
    payloadType: b1 & 0x7f,
    sequence: view.getUint16(2),
    timestamp: view.getUint32(4),
    ssrc: view.getUint32(8),
    csrc,
    extension,
    payload: data.subarray(offset, end),
  };
}

/** Bytes `packet` takes on the wire. */
export function rtpLength(packet: RtpPacket): number {
  return (
    RTP_HEADER_BYTES +
    4 * packet.csrc.length +
    (packet.extension ? 4 + packet.extension.data.length : 0) +
    packet.payload.length +
    packet.padding
  );
}

/**
 * Writes `packet` at the start of `out` (which must hold rtpLength(packet)
 * bytes) and returns the bytes written. Throws RangeError for a packet that
 * cannot be written (a field out of range, more than 15 CSRCs, extension
 * data not a multiple of 4 bytes, padding over 255, `out` too small): those
 * are the caller's bugs, not input.
 */
export function writeRtp(packet: RtpPacket, out: Uint8Array): number {
  const length = rtpLength(packet);
  if (out.length < length)
    throw new RangeError(`the buffer holds ${out.length} bytes, the packet needs ${length}`);
  check("payloadType", packet.payloadType, 0x7f);
  check("sequence", packet.sequence, 0xffff);
  check("timestamp", packet.timestamp, 0xffffffff);
  check("ssrc", packet.ssrc, 0xffffffff);
  check("padding", packet.padding, 0xff);
  if (packet.csrc.length > 15) throw new RangeError(`${packet.csrc.length} CSRCs, at most 15`);
  const ext = packet.extension;
  if (ext && ext.data.length % 4 !== 0) throw new RangeError("extension data must be a multiple of 4 bytes");
  if (ext) check("extension.profile", ext.profile, 0xffff);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  out[0] = 0x80 | (packet.padding > 0 ? 0x20 : 0) | (ext ? 0x10 : 0) | packet.csrc.length;
  out[1] = (packet.marker ? 0x80 : 0) | packet.payloadType;
  view.setUint16(2, packet.sequence);
  view.setUint32(4, packet.timestamp);
  view.setUint32(8, packet.ssrc);
  let offset = RTP_HEADER_BYTES;
  for (const c of packet.csrc) {
    check("csrc", c, 0xffffffff);
    view.setUint32(offset, c);
    offset += 4;
  }
  if (ext) {
    view.setUint16(offset, ext.profile);
    view.setUint16(offset + 2, ext.data.length / 4);
    out.set(ext.data, offset + 4);
    offset += 4 + ext.data.length;
  }
  out.set(packet.payload, offset);
  offset += packet.payload.length;
  if (packet.padding > 0) {
    out.fill(0, offset, offset + packet.padding - 1);
    out[offset + packet.padding - 1] = packet.padding;
    offset += packet.padding;
  }
  return offset;
}

/** `packet` in a new buffer. */
export function serializeRtp(packet: RtpPacket): Uint8Array {
  const out = new Uint8Array(rtpLength(packet));
  writeRtp(packet, out);
  return out;
}

function check(name: string, value: number, max: number): void {
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new RangeError(`${name} must be an integer from 0 to ${max}, got ${value}`);
  }
}
