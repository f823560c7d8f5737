/**
 * Audio files to call audio: a `<Play>` file's bytes (WAV or MP3, told by
 * their first bytes, the content type only breaking no tie) decoded, mixed
 * to mono and resampled (src/media/resample.ts) to PCM 16-bit at 8000 Hz.
 * Other formats, and files these decoders reject, are an AudioDecodeError.
 */
import { mixToMono, resampleYielding, toInt16 } from "../resample.js";
import { decodeMp3, isMp3 } from "./mp3.js";
import { AudioDecodeError, type DecodedAudio } from "./types.js";
import { decodeWav, isWav } from "./wav.js";

export { AudioDecodeError } from "./types.js";

/** The rate calls carry. */
export const CALL_SAMPLE_RATE = 8000;

/** The file's audio as it is (rate and channels). */
export async function decodeAudioFile(bytes: Uint8Array, contentType = ""): Promise<DecodedAudio> {
  if (bytes.length === 0) throw new AudioDecodeError("the file is empty");
  if (isWav(bytes)) return decodeWav(bytes);
  if (isMp3(bytes)) return decodeMp3(bytes);
  const type = contentType.toLowerCase();
  if (type === "audio/mpeg" || type === "audio/mp3") return decodeMp3(bytes);
  throw new AudioDecodeError(`not WAV or MP3 audio (${contentType || "no content type"})`);
}

/** The file's audio as a call carries it: PCM 16-bit, mono, 8000 Hz. */
export async function decodeForCall(bytes: Uint8Array, contentType = ""): Promise<Int16Array> {
  const audio = await decodeAudioFile(bytes, contentType);
  const mono = mixToMono(audio.channels);
  return toInt16(await resampleYielding(mono, audio.sampleRate, CALL_SAMPLE_RATE));
}
