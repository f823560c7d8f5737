/**
 * Which speech to text a recording gets, per recording: the network that
 * produced the audio says what was said in it when it knows
 * (TranscriptionAudio.speech: the carrier simulator does), and then those
 * known words are the transcription; audio of a real call (a SIP call: no
 * `speech`) goes to the configured speech recognizer (TRANSCRIBER_URL,
 * openai-transcriber.ts). With none configured, a real call's
 * transcription is rejected with NoSpeechRecognizerError (the transcription
 * ends FAILED, the reason logged; docs/transcriptions.md) — never words
 * made up.
 */
import type { TranscribedUtterance, Transcriber, TranscriptionAudio } from "./transcriber.js";

/** The documented reason a real call's transcription fails with no recognizer configured. */
export class NoSpeechRecognizerError extends Error {
  readonly code = "NO_SPEECH_RECOGNIZER";
  constructor() {
    super("no speech recognizer is configured (TRANSCRIBER_URL) for the audio of a real call");
  }
}

export class SelectingTranscriber implements Transcriber {
  constructor(
    /** Transcribes audio whose words the network knows (the simulator's). */
    private readonly known: Transcriber,
    /** The configured speech recognizer, if any. */
    private readonly recognizer: Transcriber | undefined,
  ) {}

  transcribe(audio: TranscriptionAudio): Promise<TranscribedUtterance[]> {
    if (audio.speech !== undefined) return this.known.transcribe(audio);
    if (this.recognizer === undefined) return Promise.reject(new NoSpeechRecognizerError());
    return this.recognizer.transcribe(audio);
  }
}
