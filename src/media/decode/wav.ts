/**
 * A RIFF/WAVE reader for `<Play>`: PCM integers of 8 (unsigned), 16, 24 and
 * 32 bits, IEEE floats of 32 and 64 bits, μ-law and A-law (G.711, 8 bits),
 * plain or WAVE_FORMAT_EXTENSIBLE, any rate, 1 to 8 channels, samples as
 * floats in [-1, 1] per channel. Chunks other than `fmt ` and `data` are
 * skipped; a `data` chunk claiming more than the file holds (a WAV written
 * while streaming) is read to the file's end, whole frames only. Anything
 * else is an AudioDecodeError saying what is wrong.
 */
import { alawToLinear, mulawToLinear } from "../../telephony/g711.js";
import { AudioDecodeError, type DecodedAudio } from "./types.js";

const PCM = 1;
const FLOAT = 3;
const ALAW = 6;
const MULAW = 7;
const EXTENSIBLE = 0xfffe;

/** Whether `bytes` starts like a WAV file. */
export function isWav(bytes: Uint8Array): boolean {
  return bytes.length >= 12 && ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 12) === "WAVE";
}

function ascii(bytes: Uint8Array, from: number, to: number): string {
  return String.fromCharCode(...bytes.subarray(from, to));
}

export function decodeWav(bytes: Uint8Array): DecodedAudio {
  if (!isWav(bytes)) throw new AudioDecodeError("not a RIFF/WAVE file");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let fmt: { format: number; channels: number; sampleRate: number; bits: number } | undefined;
  let offset = 12;
  while (offset + 8 <= bytes.length) {
    const id = ascii(bytes, offset, offset + 4);
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    if (id === "fmt ") {
      if (size < 16 || body + 16 > bytes.length) throw new AudioDecodeError("WAV fmt chunk is too short");
      let format = view.getUint16(body, true);
      const bits = view.getUint16(body + 14, true);
      if (format === EXTENSIBLE) {
        if (size < 40 || body + 26 > bytes.length)
          throw new AudioDecodeError("WAV extensible fmt chunk is too short");
        // The sub-format GUID starts with the format code.
        format = view.getUint16(body + 24, true);
      }
      fmt = {
        format,
        channels: view.getUint16(body + 2, true),
        sampleRate: view.getUint32(body + 4, true),
        bits,
      };
    } else if (id === "data") {
      if (fmt === undefined) throw new AudioDecodeError("WAV data chunk before its fmt chunk");
      const end = Math.min(bytes.length, body + size);
      return { sampleRate: fmt.sampleRate, channels: samples(fmt, bytes.subarray(body, end)) };
    }
    offset = body + size + (size % 2);
  }
  throw new AudioDecodeError(
    fmt === undefined ? "WAV file without a fmt chunk" : "WAV file without a data chunk",
  );
}

function samples(
  fmt: { format: number; channels: number; sampleRate: number; bits: number },
  data: Uint8Array,
): Float32Array[] {
  const { format, channels, sampleRate, bits } = fmt;
  if (channels < 1 || channels > 8) throw new AudioDecodeError(`WAV with ${channels} channels`);
  if (sampleRate < 1000 || sampleRate > 384_000) throw new AudioDecodeError(`WAV at ${sampleRate} Hz`);
  const read = reader(format, bits);
  const bytesPer = bits / 8;
  const frames = Math.floor(data.length / (bytesPer * channels));
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const out = Array.from({ length: channels }, () => new Float32Array(frames));
  let at = 0;
  for (let f = 0; f < frames; f++) {
    for (let c = 0; c < channels; c++) {
      out[c]![f] = read(view, at);
      at += bytesPer;
    }
  }
  return out;
}

/** How one sample of the format is read, as a float in [-1, 1]. */
function reader(format: number, bits: number): (view: DataView, at: number) => number {
  if (format === PCM) {
    switch (bits) {
      case 8:
        return (v, at) => (v.getUint8(at) - 128) / 128;
      case 16:
        return (v, at) => v.getInt16(at, true) / 32768;
      case 24:
        return (v, at) =>
          ((v.getUint8(at + 2) << 24) | (v.getUint8(at + 1) << 16) | (v.getUint8(at) << 8)) / 2147483648;
      case 32:
        return (v, at) => v.getInt32(at, true) / 2147483648;
    }
  }
  if (format === FLOAT) {
    if (bits === 32) return (v, at) => v.getFloat32(at, true);
    if (bits === 64) return (v, at) => v.getFloat64(at, true);
  }
  if (format === MULAW && bits === 8) return (v, at) => mulawToLinear(v.getUint8(at)) / 32768;
  if (format === ALAW && bits === 8) return (v, at) => alawToLinear(v.getUint8(at)) / 32768;
  throw new AudioDecodeError(`WAV format ${format} with ${bits}-bit samples is not supported`);
}
