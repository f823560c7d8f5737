/**
 * How long `<Say>` of a text lasts on the simulator: the length of the
 * process's speech engine's audio of it (src/media/speech; the same cache
 * the service's calls use, so the same samples the call said).
 */
import { type SpeechOptions, sharedSpeech } from "../../src/media/speech/index.js";

/** Seconds of the engine's speech of `text`. */
export async function spokenSeconds(text: string, options: SpeechOptions = {}): Promise<number> {
  return (await sharedSpeech().synthesize(text, options)).length / 8000;
}
