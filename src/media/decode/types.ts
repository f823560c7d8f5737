/** What an audio decoder gives: floats in [-1, 1] per channel, and why it cannot. */

export interface DecodedAudio {
  sampleRate: number;
  /** One array per channel, equal lengths. */
  channels: Float32Array[];
}

export class AudioDecodeError extends Error {
  override name = "AudioDecodeError";
}
