/**
 * Speech to text, as the service sees it: a recording's audio in,
 * utterances out. The carrier simulator implements it
 * (src/telephony/simulator/transcriber.ts); a real speech-to-text adapter
 * can replace it, as a SIP trunk adapter can replace the simulated Carrier.
 *
 * Contract, whichever implementation:
 * - `channels` is the audio as stored in the recording (after post
 *   processing), one Int16Array per channel; utterances name their channel
 *   (from 0) and their time in ms from the start of that audio;
 * - `speech` is what the network that produced the audio says was said in
 *   it (CapturedAudio.speech, shifted to the stored audio), when it knows:
 *   the simulator does, a real carrier does not, and a real adapter ignores
 *   it;
 * - it rejects when the audio cannot be transcribed (the transcription is
 *   then FAILED).
 */
import type { SpokenSegment } from "../telephony/carrier.js";

export interface TranscriptionAudio {
  channels: readonly Int16Array[];
  sampleRate: number;
  speech: readonly SpokenSegment[] | undefined;
}

/** One stretch of speech on one channel. */
export interface TranscribedUtterance {
  channel: number;
  offsetMs: number;
  durationMs: number;
  text: string;
}

export interface Transcriber {
  transcribe(audio: TranscriptionAudio): Promise<TranscribedUtterance[]>;
}
