/**
 * The Recordings service: maps proto requests to the domain and domain
 * recordings back to protos. Views: Get defaults to FULL (download links
 * included), List to BASIC (no links).
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { type Recordings, RecordingView } from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import type { RecordingsDomain } from "./domain.js";
import { parseRecordingName, parseRecordingsParent } from "./names.js";
import { recordingToProto } from "./proto.js";

export function recordingsService(domain: RecordingsDomain): ServiceImpl<typeof Recordings> {
  const links = (view: RecordingView, fallback: RecordingView) =>
    (view === RecordingView.RECORDING_VIEW_UNSPECIFIED ? fallback : view) === RecordingView.FULL
      ? domain.links
      : undefined;
  return {
    async getRecording(req) {
      const recording = await domain.get(parseRecordingName(req.name));
      return recordingToProto(recording, links(req.view, RecordingView.FULL));
    },

    async listRecordings(req) {
      const { projectId, callId } = parseRecordingsParent(req.parent);
      const page = await domain.list(projectId, callId, { pageSize: req.pageSize, pageToken: req.pageToken });
      const signer = links(req.view, RecordingView.BASIC);
      return {
        recordings: page.items.map((r) => recordingToProto(r, signer)),
        nextPageToken: page.nextPageToken,
      };
    },

    async deleteRecording(req) {
      return recordingToProto(await domain.delete(parseRecordingName(req.name)), undefined);
    },
  };
}
