/**
 * MP3 encoding with @breezystack/lamejs (a maintained ESM packaging of the
 * LAME port lamejs). 8 kHz input is encoded as MPEG-2.5 layer III; mono or
 * joint stereo, constant bit rate.
 */
import { Mp3Encoder } from "@breezystack/lamejs";

/** Samples handed to the encoder at a time (a multiple of 576, the MPEG-2/2.5 granule). */
const BLOCK = 1152;

/** An MP3 file of `channels` (1 or 2, equal lengths) at `sampleRate` hertz and `kbps`. */
export function encodeMp3(channels: readonly Int16Array[], sampleRate: number, kbps = 32): Buffer {
  const count = channels.length;
  if (count < 1 || count > 2) throw new RangeError("an MP3 file here has 1 or 2 channels");
  const left = channels[0]!;
  const right = channels[1];
  const encoder = new Mp3Encoder(count, sampleRate, kbps);
  const parts: Uint8Array[] = [];
  for (let i = 0; i < left.length; i += BLOCK) {
    const l = left.subarray(i, i + BLOCK);
    const chunk =
      right === undefined ? encoder.encodeBuffer(l) : encoder.encodeBuffer(l, right.subarray(i, i + BLOCK));
    if (chunk.length > 0) parts.push(Buffer.from(chunk));
  }
  const tail = encoder.flush();
  if (tail.length > 0) parts.push(Buffer.from(tail));
  return Buffer.concat(parts);
}
