/**
 * The Transcriptions service: Get (FULL by default), List (BASIC by
 * default; a call's or a project's), Delete (returns Empty). Rules live in
 * domain.ts.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type Transcriptions,
  TranscriptionView,
} from "../../gen/enfonica/voice/v1beta1/transcriptions_pb.js";
import {
  parseTranscriptionName,
  parseTranscriptionsParent,
  type TranscriptionsDomain,
  transcriptionToProto,
} from "./domain.js";

const full = (view: TranscriptionView, fallback: TranscriptionView) =>
  (view === TranscriptionView.UNSPECIFIED ? fallback : view) === TranscriptionView.FULL;

export function transcriptionsService(domain: TranscriptionsDomain): ServiceImpl<typeof Transcriptions> {
  return {
    async getTranscription(req) {
      const row = await domain.get(parseTranscriptionName(req.name));
      return transcriptionToProto(row, full(req.view, TranscriptionView.FULL));
    },

    async listTranscriptions(req) {
      const { projectId, callId } = parseTranscriptionsParent(req.parent);
      const page = await domain.list(projectId, callId, { pageSize: req.pageSize, pageToken: req.pageToken });
      const withUtterances = full(req.view, TranscriptionView.BASIC);
      return {
        transcriptions: page.items.map((r) => transcriptionToProto(r, withUtterances)),
        nextPageToken: page.nextPageToken,
      };
    },

    async deleteTranscription(req) {
      await domain.delete(parseTranscriptionName(req.name));
      return {};
    },
  };
}
