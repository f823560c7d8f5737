/**
 * Recordings, assembled: the domain (with its blob store, link signer and
 * processor) that the API service, the download route and the call engine
 * share. See domain.ts for the engine's API (createPending, complete, fail).
 */
import type { Clock } from "../clock.js";
import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import type { Logger } from "../log.js";
import { SimulatorTranscriber } from "../telephony/simulator/transcriber.js";
import { TranscriptionsDomain } from "../transcriptions/domain.js";
import { OpenAiTranscriber } from "../transcriptions/openai-transcriber.js";
import { SelectingTranscriber } from "../transcriptions/select.js";
import type { Transcriber } from "../transcriptions/transcriber.js";
import { type BlobStore, FileBlobStore } from "./blobs.js";
import { RecordingsDomain } from "./domain.js";
import { LinkSigner, resolveLinkSecret } from "./links.js";
import type { AudioProcessor } from "./processing.js";

export interface RecordingsDeps {
  config: Config;
  clock: Clock;
  log: Logger;
  db: Db;
  kickWebhooks?: () => void;
  /** Replaces the filesystem store under BLOB_DIR. */
  blobs?: BlobStore;
  /** Replaces the default processing (tests). */
  processor?: AudioProcessor;
  /**
   * Replaces the speech to text chosen per recording (the simulator's known
   * words for simulated calls, TRANSCRIBER_URL's recognizer for real ones:
   * src/transcriptions/select.ts) — tests.
   */
  transcriber?: Transcriber;
}

export function createRecordings(deps: RecordingsDeps): RecordingsDomain {
  const { config } = deps;
  return new RecordingsDomain({
    db: deps.db,
    clock: deps.clock,
    log: deps.log,
    blobs: deps.blobs ?? new FileBlobStore(config.recordings.blobDir),
    links: new LinkSigner(resolveLinkSecret(config), deps.clock, config.recordings.linkBaseUrl),
    processingTimeoutMs: config.recordings.processingTimeoutMs,
    ...(deps.processor === undefined ? {} : { processor: deps.processor }),
    ...(deps.kickWebhooks === undefined ? {} : { kick: deps.kickWebhooks }),
    transcriptions: new TranscriptionsDomain({
      db: deps.db,
      clock: deps.clock,
      log: deps.log,
      transcriber: deps.transcriber ?? defaultTranscriber(config),
      // Speech to text gets as long as audio processing does.
      timeoutMs: config.recordings.processingTimeoutMs,
      ...(deps.kickWebhooks === undefined ? {} : { kick: deps.kickWebhooks }),
    }),
  });
}

/** The simulator's known words for simulated calls; the configured recognizer (if any) for real ones. */
function defaultTranscriber(config: Config): Transcriber {
  const settings = config.transcriber;
  return new SelectingTranscriber(
    new SimulatorTranscriber(),
    settings === undefined
      ? undefined
      : new OpenAiTranscriber({
          url: settings.url,
          model: settings.model,
          timeoutMs: settings.timeoutMs,
          ...(settings.apiKey === undefined ? {} : { apiKey: settings.apiKey }),
          ...(settings.language === undefined ? {} : { language: settings.language }),
        }),
  );
}

export type { BlobStore } from "./blobs.js";
export { FileBlobStore } from "./blobs.js";
export type { CompletedAudio, NewRecording, Recording } from "./domain.js";
export { RecordingsDomain } from "./domain.js";
export { recordingAudioRoute } from "./download.js";
export { recordingsService } from "./service.js";
