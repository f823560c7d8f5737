/**
 * Rules of media streams (Streams.StreamCall, VoiceML `<Stream>`): names,
 * audio formats and limits, checked with errors naming the request field.
 */
import { AudioEncoding } from "../../../gen/enfonica/voice/v1beta1/streams_pb.js";
import { badField } from "../../api/errors.js";
import type { G711Encoding } from "../../telephony/g711.js";

/** A stream id: 1 to 36 letters, digits, `-` and `_` (a UUID fits). */
export const STREAM_ID = /^[A-Za-z0-9_-]{1,36}$/;
const STREAM_NAME = /^projects\/([^/]+)\/streams\/([^/]+)$/;

/** The only sample rate of G.711. */
export const SAMPLE_RATE = 8000;
/** Input audio buffered for playing, at most (one minute at 8000 Hz). */
export const MAX_BUFFERED_SAMPLES = 60 * SAMPLE_RATE;
/** Request parameters a stream may set, in all (UTF-8 bytes of keys and values). */
export const MAX_PARAMETER_BYTES = 50 * 1024;
/** Seconds of call time a stream waits for a call before it fails. */
export const CONNECT_TIMEOUT_SECONDS = 30;
/** Seconds of call time per output_audio chunk: 1280 bytes at 8000 Hz. */
export const FRAME_SECONDS = 0.16;

export interface StreamName {
  name: string;
  projectId: string;
  streamId: string;
}

/** Parses `projects/{p}/streams/{id}`; INVALID_ARGUMENT naming `field` otherwise. */
export function parseStreamName(value: string, field: string): StreamName {
  const m = STREAM_NAME.exec(value);
  if (m === null) {
    throw badField(field, "must be a stream name, projects/{project}/streams/{stream}");
  }
  const streamId = m[2]!;
  if (!STREAM_ID.test(streamId)) {
    throw badField(field, "the stream id must be 1 to 36 letters, digits, '-' or '_'");
  }
  return { name: value, projectId: m[1]!, streamId };
}

/** An AudioConfig as a G.711 encoding; INVALID_ARGUMENT naming `field`'s members otherwise. */
export function encodingOf(
  config: { audioEncoding: AudioEncoding; sampleRateHertz: number } | undefined,
  field: string,
): G711Encoding {
  if (config === undefined) throw badField(field, "is required");
  if (config.sampleRateHertz !== 0 && config.sampleRateHertz !== SAMPLE_RATE) {
    throw badField(`${field}.sample_rate_hertz`, "must be 0 or 8000 (the only rate of G.711)");
  }
  switch (config.audioEncoding) {
    case AudioEncoding.MULAW:
      return "mulaw";
    case AudioEncoding.ALAW:
      return "alaw";
    default:
      throw badField(`${field}.audio_encoding`, "must be AUDIO_ENCODING_MULAW or AUDIO_ENCODING_ALAW");
  }
}

/** UTF-8 bytes of a parameter map's keys and values. */
export function parameterBytes(parameters: Readonly<Record<string, string>>): number {
  let n = 0;
  for (const [k, v] of Object.entries(parameters)) n += Buffer.byteLength(k) + Buffer.byteLength(v);
  return n;
}
