/**
 * WAV (RIFF/WAVE) files of 16-bit little-endian linear PCM: the 44-byte
 * canonical header (RIFF, `fmt ` chunk of 16 bytes with format 1, `data`
 * chunk) followed by the samples, interleaved when there are two channels.
 */

/** Bytes of the canonical header this writer emits. */
export const WAV_HEADER_BYTES = 44;

/**
 * A WAV file of `channels` (one Int16Array per channel, equal lengths; 1 or
 * 2 channels) at `sampleRate` hertz.
 */
export function encodeWav(channels: readonly Int16Array[], sampleRate: number): Buffer {
  const count = channels.length;
  if (count < 1 || count > 2) throw new RangeError("a WAV file here has 1 or 2 channels");
  const frames = channels[0]!.length;
  if (channels.some((c) => c.length !== frames)) throw new RangeError("channels must have the same length");
  const blockAlign = count * 2;
  const dataBytes = frames * blockAlign;
  const out = Buffer.alloc(WAV_HEADER_BYTES + dataBytes);
  out.write("RIFF", 0, "ascii");
  out.writeUInt32LE(36 + dataBytes, 4);
  out.write("WAVE", 8, "ascii");
  out.write("fmt ", 12, "ascii");
  out.writeUInt32LE(16, 16); // fmt chunk size
  out.writeUInt16LE(1, 20); // PCM
  out.writeUInt16LE(count, 22);
  out.writeUInt32LE(sampleRate, 24);
  out.writeUInt32LE(sampleRate * blockAlign, 28); // byte rate
  out.writeUInt16LE(blockAlign, 32);
  out.writeUInt16LE(16, 34); // bits per sample
  out.write("data", 36, "ascii");
  out.writeUInt32LE(dataBytes, 40);
  let offset = WAV_HEADER_BYTES;
  for (let i = 0; i < frames; i++) {
    for (let c = 0; c < count; c++) {
      out.writeInt16LE(channels[c]![i]!, offset);
      offset += 2;
    }
  }
  return out;
}
