/**
 * Processing of a finished recording: silence check, post processing, and
 * encoding into the renditions (WAV PCM 16-bit and MP3). A pure function of
 * the audio, injectable so that tests can make it slow or fail.
 */
import type { PostProcessingValue } from "../db/schema/index.js";
import { encodeMp3 } from "./audio/mp3.js";
import { isSilent, trimBounds } from "./audio/silence.js";
import { encodeWav } from "./audio/wav.js";

export interface RecordedAudio {
  /** One Int16Array per channel (1 or 2), equal lengths. */
  channels: readonly Int16Array[];
  sampleRate: number;
  postProcessing: readonly PostProcessingValue[];
}

export type ProcessedAudio =
  | { empty: true }
  | {
      empty: false;
      durationMs: number;
      sampleRate: number;
      wav: Buffer;
      mp3: Buffer;
      /** Samples per channel cut from the start (TRIM_SILENCE); absent: none. */
      trimmedStart?: number;
      /** The stored audio, one array per channel (absent from processors that do not give it). */
      channels?: readonly Int16Array[];
    };

export type AudioProcessor = (audio: RecordedAudio) => Promise<ProcessedAudio>;

/** Bit rate of the MP3 rendition (8 kHz speech; MPEG-2.5 layer III). */
export const MP3_KBPS = 32;

export const defaultProcessor: AudioProcessor = async (audio) => {
  if (isSilent(audio.channels, audio.sampleRate)) return { empty: true };
  const bounds = audio.postProcessing.includes("TRIM_SILENCE")
    ? trimBounds(audio.channels, audio.sampleRate)
    : { start: 0, end: audio.channels[0]!.length };
  const channels = audio.channels.map((c) => c.subarray(bounds.start, bounds.end));
  const frames = channels[0]!.length;
  return {
    empty: false,
    durationMs: Math.round((frames * 1000) / audio.sampleRate),
    sampleRate: audio.sampleRate,
    wav: encodeWav(channels, audio.sampleRate),
    mp3: encodeMp3(channels, audio.sampleRate, MP3_KBPS),
    trimmedStart: bounds.start,
    channels,
  };
};
