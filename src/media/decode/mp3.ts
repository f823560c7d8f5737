/**
 * MP3 decoding for `<Play>` with mpg123 built to WebAssembly (npm
 * `mpg123-decoder`, MIT), loaded at the first MP3 (not before: idle memory).
 * The file is fed a slice at a time with the event loop turning between
 * slices, so a long file does not stall the service. A file mpg123 finds no
 * audio in (or only errors) is an AudioDecodeError.
 */
import { AudioDecodeError, type DecodedAudio } from "./types.js";

/** Input bytes decoded between two turns of the event loop. */
const SLICE_BYTES = 64 * 1024;

/** Whether `bytes` starts like an MP3 file: an ID3v2 tag or an MPEG audio frame header. */
export function isMp3(bytes: Uint8Array): boolean {
  if (bytes.length >= 3 && bytes[0] === 0x49 && bytes[1] === 0x44 && bytes[2] === 0x33) return true;
  return bytes.length >= 2 && bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0;
}

export async function decodeMp3(bytes: Uint8Array): Promise<DecodedAudio> {
  const { MPEGDecoder } = await import("mpg123-decoder");
  const decoder = new MPEGDecoder();
  await decoder.ready;
  try {
    const parts: Float32Array[][] = [];
    let sampleRate = 0;
    let errors = 0;
    let firstError = "";
    for (let at = 0; at < bytes.length; at += SLICE_BYTES) {
      const out = decoder.decode(bytes.subarray(at, at + SLICE_BYTES));
      if (out.errors.length > 0) {
        errors += out.errors.length;
        firstError ||= out.errors[0]!.message;
      }
      if (out.samplesDecoded > 0) {
        sampleRate = out.sampleRate;
        parts.push(out.channelData.map((c) => c.slice(0, out.samplesDecoded)));
      }
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    const frames = parts.reduce((n, p) => n + (p[0]?.length ?? 0), 0);
    if (frames === 0 || sampleRate === 0) {
      throw new AudioDecodeError(`no MP3 audio found${errors > 0 ? ` (mpg123: ${firstError})` : ""}`);
    }
    const channelCount = Math.min(...parts.map((p) => p.length));
    const channels = Array.from({ length: channelCount }, (_, c) => {
      const all = new Float32Array(frames);
      let offset = 0;
      for (const p of parts) {
        all.set(p[c]!, offset);
        offset += p[c]!.length;
      }
      return all;
    });
    return { sampleRate, channels };
  } finally {
    decoder.free();
  }
}
