/** Recordings as protos: the API's responses and the RECORDING_READY webhook body. */
import { create } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { PostProcessing } from "../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import {
  Recording_ErrorCode,
  Recording_Source,
  Recording_State,
  RecordingAudio_AudioEncoding,
  RecordingAudioSchema,
  type Recording as RecordingProto,
  RecordingSchema,
} from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import type {
  PostProcessingValue,
  RecordingErrorCodeValue,
  RecordingSourceValue,
  RecordingStateValue,
  RenditionRow,
} from "../db/schema/index.js";
import type { Recording } from "./domain.js";
import type { LinkSigner } from "./links.js";

export { RecordingSchema };

const STATE: Readonly<Record<RecordingStateValue, Recording_State>> = {
  PENDING: Recording_State.PENDING,
  SUCCEEDED: Recording_State.SUCCEEDED,
  EMPTY: Recording_State.EMPTY,
  FAILED: Recording_State.FAILED,
};
const SOURCE: Readonly<Record<RecordingSourceValue, Recording_Source>> = {
  RECORD_ACTION: Recording_Source.RECORD_ACTION,
  CALL_RECORDING: Recording_Source.CALL_RECORDING,
};
const ERROR_CODE: Readonly<Record<RecordingErrorCodeValue, Recording_ErrorCode>> = {
  TIMEOUT: Recording_ErrorCode.TIMEOUT,
  INTERNAL_ERROR: Recording_ErrorCode.INTERNAL_ERROR,
};
const POST_PROCESSING: Readonly<Record<PostProcessingValue, PostProcessing>> = {
  TRIM_SILENCE: PostProcessing.TRIM_SILENCE,
};
const ENCODING: Readonly<Record<RenditionRow["encoding"], RecordingAudio_AudioEncoding>> = {
  AUDIO_ENCODING_PCM_16BIT: RecordingAudio_AudioEncoding.PCM_16BIT,
  AUDIO_ENCODING_MP3: RecordingAudio_AudioEncoding.MP3,
};

/**
 * The proto of a recording. With `links` (the FULL view) every rendition
 * carries a fresh download link valid for 60 minutes; without (BASIC) the
 * `uri` fields stay empty.
 */
export function recordingToProto(recording: Recording, links: LinkSigner | undefined): RecordingProto {
  return create(RecordingSchema, {
    name: recording.name,
    state: STATE[recording.state],
    source: SOURCE[recording.source],
    ...(recording.durationMs === undefined ? {} : { duration: durationFromMs(recording.durationMs) }),
    channelCount: recording.channelCount,
    postProcessing: recording.postProcessing.map((p) => POST_PROCESSING[p]),
    ...(recording.errorCode === undefined ? {} : { errorCode: ERROR_CODE[recording.errorCode] }),
    audio: recording.renditions.map((r) =>
      create(RecordingAudioSchema, {
        mimeType: r.mimeType,
        encoding: ENCODING[r.encoding],
        sampleRate: r.sampleRate,
        sizeBytes: r.sizeBytes,
        uri:
          links === undefined
            ? ""
            : links.sign({
                projectId: recording.projectId,
                callId: recording.callId,
                recordingId: recording.id,
                format: r.format,
              }),
      }),
    ),
    ...(recording.startTime === undefined ? {} : { startTime: timestampFromDate(recording.startTime) }),
    createTime: timestampFromDate(recording.createTime),
    readyUri: recording.readyUri,
  });
}
