/**
 * The service's speech engine: eSpeak NG (espeak.ts) behind the prompt
 * cache (cache.ts), one per process, made at the first use. Its thread
 * starts only when something is first said and ends when idle, so a process
 * that says nothing pays nothing.
 */
import { CachedSpeech } from "./cache.js";
import type { SpeechEngine } from "./engine.js";
import { EspeakEngine } from "./espeak.js";

export type { SpeechEngine, SpeechOptions } from "./engine.js";
export { SPEECH_SAMPLE_RATE, SpeechError } from "./engine.js";

let shared: SpeechEngine | undefined;

/** The process's speech engine. */
export function sharedSpeech(): SpeechEngine {
  shared ??= new CachedSpeech(new EspeakEngine());
  return shared;
}
