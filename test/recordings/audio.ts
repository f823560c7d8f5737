/**
 * Independent readers for recording audio in tests: a WAV header parser
 * written here (not src/'s writer), and MP3 decoding with the Debian ffmpeg.
 */
import { execFileSync } from "node:child_process";

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

/** Decodes an MP3 file with ffmpeg into mono 16-bit PCM at its own rate; returns samples per channel. */
export function decodeMp3Frames(file: Buffer, channels: number, sampleRate: number): number {
  const pcm = execFileSync(
    "ffmpeg",
    [
      "-v",
      "error",
      "-f",
      "mp3",
      "-i",
      "pipe:0",
      "-f",
      "s16le",
      "-acodec",
      "pcm_s16le",
      "-ar",
      String(sampleRate),
      "pipe:1",
    ],
    { input: file, maxBuffer: 64 * 1024 * 1024 },
  );
  return pcm.length / 2 / channels;
}

/** ffprobe's view of an MP3 file: codec, sample rate, channels. */
export function probeMp3(file: Buffer): { codec: string; sampleRate: number; channels: number } {
  const out = execFileSync(
    "ffprobe",
    ["-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels", "-of", "json", "pipe:0"],
    { input: file },
  ).toString("utf8");
  const stream = (
    JSON.parse(out) as { streams: { codec_name: string; sample_rate: string; channels: number }[] }
  ).streams[0]!;
  return { codec: stream.codec_name, sampleRate: Number(stream.sample_rate), channels: stream.channels };
}
