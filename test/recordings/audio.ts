/**
 * Independent readers for recording audio in tests: a WAV parser and an MP3
 * frame-header reader written here (not src/'s writers), and MP3 decoding
 * with mpg123 built to WebAssembly (npm `mpg123-decoder`), so the tests need
 * no Debian package.
 */
import { MPEGDecoder } from "mpg123-decoder";

export interface WavInfo {
  format: number;
  channels: number;
  sampleRate: number;
  byteRate: number;
  blockAlign: number;
  bitsPerSample: number;
  dataBytes: number;
  /** Sample frames (samples per channel). */
  frames: number;
  /** The samples of channel 0. */
  firstChannel: Int16Array;
}

/** Parses a RIFF/WAVE file chunk by chunk. */
export function parseWav(file: Buffer): WavInfo {
  if (file.toString("ascii", 0, 4) !== "RIFF" || file.toString("ascii", 8, 12) !== "WAVE") {
    throw new Error("not a RIFF/WAVE file");
  }
  if (file.readUInt32LE(4) !== file.length - 8) throw new Error("RIFF size does not match the file");
  let offset = 12;
  let fmt: Omit<WavInfo, "dataBytes" | "frames" | "firstChannel"> | undefined;
  while (offset + 8 <= file.length) {
    const id = file.toString("ascii", offset, offset + 4);
    const size = file.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === "fmt ") {
      fmt = {
        format: file.readUInt16LE(body),
        channels: file.readUInt16LE(body + 2),
        sampleRate: file.readUInt32LE(body + 4),
        byteRate: file.readUInt32LE(body + 8),
        blockAlign: file.readUInt16LE(body + 12),
        bitsPerSample: file.readUInt16LE(body + 14),
      };
    } else if (id === "data") {
      if (fmt === undefined) throw new Error("data before fmt");
      const frames = size / fmt.blockAlign;
      const firstChannel = new Int16Array(frames);
      for (let i = 0; i < frames; i++) firstChannel[i] = file.readInt16LE(body + i * fmt.blockAlign);
      return { ...fmt, dataBytes: size, frames, firstChannel };
    }
    offset = body + size + (size % 2);
  }
  throw new Error("no data chunk");
}

/** Bitrates (kbit/s) of MPEG-2 and MPEG-2.5 Layer III by the header's index (ISO/IEC 13818-3). */
const MPEG2_L3_KBPS = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
/** Bitrates (kbit/s) of MPEG-1 Layer III. */
const MPEG1_L3_KBPS = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
/** Sample rates by version bits (0: MPEG-2.5, 2: MPEG-2, 3: MPEG-1) and the header's index. */
const SAMPLE_RATES: Record<number, number[]> = {
  0: [11025, 12000, 8000],
  2: [22050, 24000, 16000],
  3: [44100, 48000, 32000],
};

/**
 * An MP3 stream read frame header by frame header (written here from the
 * MPEG audio standard, independent of the encoder): every frame must be
 * Layer III with one sample rate and channel mode; an ID3v2 tag is skipped.
 */
export function probeMp3(file: Buffer): {
  codec: string;
  sampleRate: number;
  channels: number;
  frames: number;
} {
  let offset = 0;
  if (file.toString("latin1", 0, 3) === "ID3") {
    const size =
      ((file[6]! & 0x7f) << 21) | ((file[7]! & 0x7f) << 14) | ((file[8]! & 0x7f) << 7) | (file[9]! & 0x7f);
    offset = 10 + size;
  }
  let sampleRate = 0;
  let channels = 0;
  let frames = 0;
  while (offset + 4 <= file.length) {
    const h = file.readUInt32BE(offset);
    if (h >>> 21 !== 0x7ff) throw new Error(`no frame sync at byte ${offset}`);
    const version = (h >>> 19) & 3;
    const layer = (h >>> 17) & 3;
    const bitrateIndex = (h >>> 12) & 15;
    const rateIndex = (h >>> 10) & 3;
    const padding = (h >>> 9) & 1;
    const mode = (h >>> 6) & 3;
    if (layer !== 1) throw new Error(`frame ${frames} is not Layer III`);
    const rate = SAMPLE_RATES[version]?.[rateIndex];
    const kbps = (version === 3 ? MPEG1_L3_KBPS : MPEG2_L3_KBPS)[bitrateIndex];
    if (rate === undefined || kbps === undefined || kbps === 0)
      throw new Error(`frame ${frames} has a bad header`);
    const frameChannels = mode === 3 ? 1 : 2;
    if (frames === 0) {
      sampleRate = rate;
      channels = frameChannels;
    } else if (rate !== sampleRate || frameChannels !== channels) {
      throw new Error(`frame ${frames} changes the sample rate or channel mode`);
    }
    const coefficient = version === 3 ? 144 : 72; // bytes per (kbit/s ÷ Hz) for Layer III
    offset += Math.floor((coefficient * kbps * 1000) / rate) + padding;
    frames++;
  }
  if (frames === 0) throw new Error("no MP3 frames");
  return { codec: "mp3", sampleRate, channels, frames };
}

/**
 * Decodes an MP3 file with mpg123 (compiled to WebAssembly, npm
 * `mpg123-decoder`) and returns the samples per channel it produced; fails
 * on any decoding error or on a sample rate other than `sampleRate`.
 */
export async function decodeMp3Frames(file: Buffer, sampleRate: number): Promise<number> {
  const decoder = new MPEGDecoder();
  await decoder.ready;
  try {
    const decoded = decoder.decode(new Uint8Array(file));
    if (decoded.errors.length > 0) throw new Error(`mpg123: ${decoded.errors[0]?.message}`);
    if (decoded.sampleRate !== sampleRate) throw new Error(`mpg123 decoded ${decoded.sampleRate} Hz`);
    return decoded.samplesDecoded;
  } finally {
    decoder.free();
  }
}
