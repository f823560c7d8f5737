/**
 * G.711 (ITU-T, 1972): 16-bit linear PCM <-> 8-bit μ-law (PCMU) and A-law
 * (PCMA), the segment-and-mantissa companding of the recommendation as in
 * the reference implementation (Sun Microsystems' public-domain g711.c).
 * μ-law keeps 14 bits of magnitude (bias 0x84), A-law 13 bits; A-law bytes
 * are sent with even bits inverted (XOR 0x55), μ-law bytes all inverted.
 * Decoding uses 256-entry tables built once.
 */

const ULAW_BIAS = 0x84;
const ULAW_CLIP = 32635;

/** One linear sample (clipped to int16) to μ-law. */
export function linearToMulaw(sample: number): number {
  let s = Math.max(-32768, Math.min(32767, Math.round(sample)));
  const sign = s < 0 ? 0x80 : 0;
  if (sign) s = -s;
  if (s > ULAW_CLIP) s = ULAW_CLIP;
  s += ULAW_BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** One μ-law byte to linear. */
function mulawToLinearSlow(byte: number): number {
  const u = ~byte & 0xff;
  const exponent = (u >> 4) & 0x07;
  const magnitude = ((((u & 0x0f) << 3) + ULAW_BIAS) << exponent) - ULAW_BIAS;
  return u & 0x80 ? -magnitude : magnitude;
}

/** One linear sample (clipped to int16) to A-law. */
export function linearToAlaw(sample: number): number {
  let v = Math.max(-32768, Math.min(32767, Math.round(sample))) >> 3;
  // The sign bit (0x80) is set for positive values, before the even-bit inversion.
  let mask = 0xd5;
  if (v < 0) {
    mask = 0x55;
    v = -v - 1;
  }
  let segment = 0;
  while (segment < 8 && v > (0x20 << segment) - 1) segment++;
  if (segment >= 8) return 0x7f ^ mask;
  const mantissa = (v >> (segment < 2 ? 1 : segment)) & 0x0f;
  return ((segment << 4) | mantissa) ^ mask;
}

/** One A-law byte to linear. */
function alawToLinearSlow(byte: number): number {
  const a = byte ^ 0x55;
  let t = (a & 0x0f) << 4;
  const segment = (a & 0x70) >> 4;
  if (segment === 0) t += 8;
  else if (segment === 1) t += 0x108;
  else t = (t + 0x108) << (segment - 1);
  return a & 0x80 ? t : -t;
}

const MULAW_TABLE = Int16Array.from({ length: 256 }, (_, b) => mulawToLinearSlow(b));
const ALAW_TABLE = Int16Array.from({ length: 256 }, (_, b) => alawToLinearSlow(b));

export function mulawToLinear(byte: number): number {
  return MULAW_TABLE[byte & 0xff]!;
}

export function alawToLinear(byte: number): number {
  return ALAW_TABLE[byte & 0xff]!;
}

export type G711Encoding = "mulaw" | "alaw";

/** Bytes of `encoding` to PCM 16-bit. */
export function decodeG711(encoding: G711Encoding, bytes: Uint8Array): Int16Array {
  return decodeG711Into(encoding, bytes, new Int16Array(bytes.length));
}

/** Bytes of `encoding` to PCM 16-bit in `out` (at least as long); returns `out`. */
export function decodeG711Into(encoding: G711Encoding, bytes: Uint8Array, out: Int16Array): Int16Array {
  const table = encoding === "mulaw" ? MULAW_TABLE : ALAW_TABLE;
  for (let i = 0; i < bytes.length; i++) out[i] = table[bytes[i]!]!;
  return out;
}

/** PCM 16-bit to bytes of `encoding`. */
export function encodeG711(encoding: G711Encoding, samples: Int16Array): Uint8Array {
  const encode = encoding === "mulaw" ? linearToMulaw : linearToAlaw;
  const out = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = encode(samples[i]!);
  return out;
}
