/**
 * What a recording's transcription is given of its audio (src/recordings/domain.ts
 * hands it over once the recording SUCCEEDED).
 */
import type { TranscriptionAudio } from "../transcriptions/transcriber.js";
import type { CompletedAudio } from "./domain.js";
import type { ProcessedAudio } from "./processing.js";

/**
 * What the transcriber gets: the stored audio (the raw audio cut as post
 * processing cut it) and the network's speech, shifted by what was cut
 * from the start and clipped to what remains.
 */
export function transcriptionAudio(
  audio: CompletedAudio,
  processed: ProcessedAudio & { empty: false },
): TranscriptionAudio {
  const startSample = processed.trimmedStart ?? 0;
  const length = Math.round((processed.durationMs * audio.sampleRate) / 1000);
  const channels =
    processed.channels ?? audio.channels.map((c) => c.subarray(startSample, startSample + length));
  const shiftMs = (startSample * 1000) / audio.sampleRate;
  const speech = audio.speech?.flatMap((s) => {
    const start = Math.max(0, s.offsetMs - shiftMs);
    const end = Math.min(processed.durationMs, s.offsetMs - shiftMs + s.durationMs);
    return end > start ? [{ ...s, offsetMs: start, durationMs: end - start }] : [];
  });
  return { channels, sampleRate: audio.sampleRate, speech };
}
