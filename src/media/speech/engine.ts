/**
 * Speech synthesis, as the telephony code sees it: text (with the markup's
 * optional `language` and `voice`) in, PCM 16-bit mono at 8000 Hz out, the
 * rate calls carry. An engine is an interface so a deployment can plug a
 * better one; the built-in one is eSpeak NG (espeak.ts). `CachedSpeech`
 * wraps any engine with a bounded cache so a repeated prompt costs nothing.
 */

/** The sample rate of synthesized speech. */
export const SPEECH_SAMPLE_RATE = 8000;

export interface SpeechOptions {
  /** A language tag like `en-AU` (the markup's Language); absent: the engine's default. */
  language?: string;
  /** A voice name (the markup's Voice); absent or unknown: the engine's default. */
  voice?: string;
}

export interface SpeechEngine {
  /**
   * The speech of `text`: PCM 16-bit, mono, SPEECH_SAMPLE_RATE Hz. Rejects
   * with a SpeechError when the engine cannot speak. The caller must not
   * modify the array it gets (it may be cached).
   */
  synthesize(text: string, options?: SpeechOptions): Promise<Int16Array>;
  /** Releases what the engine holds (threads, memory); a later synthesize starts it again. */
  close(): Promise<void>;
}

export class SpeechError extends Error {
  override name = "SpeechError";
}
