/**
 * The simulator's speech to text: the simulated network knows every word
 * it put into the audio (media.ts: `say` texts and the route's words), so
 * its transcription is exactly that — per channel, with the stretches'
 * times. Audio the simulator did not produce (no `speech`) cannot be
 * transcribed: it rejects, and the transcription is FAILED.
 */
import type {
  TranscribedUtterance,
  Transcriber,
  TranscriptionAudio,
} from "../../transcriptions/transcriber.js";

export class SimulatorTranscriber implements Transcriber {
  async transcribe(audio: TranscriptionAudio): Promise<TranscribedUtterance[]> {
    if (audio.speech === undefined) {
      throw new Error("the simulator transcribes only audio the simulated network produced");
    }
    return audio.speech
      .filter((s) => s.channel >= 0 && s.channel < audio.channels.length && s.text !== "")
      .map((s) => ({ channel: s.channel, offsetMs: s.offsetMs, durationMs: s.durationMs, text: s.text }));
  }
}
