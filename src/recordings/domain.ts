/**
 * Recordings: the audio of part of a call (`<Record>`) or of a whole call
 * (call recording), and its life: PENDING while recording and processing,
 * then exactly once SUCCEEDED, EMPTY or FAILED.
 *
 * The call engine drives it through two methods:
 * - `createPending(...)` when recording starts: a PENDING recording whose
 *   name (`projects/{p}/calls/{parent leg}/recordings/{id}`) can be handed
 *   to the application at once (the Record action's `recording` parameter);
 * - `complete(id, audio)` when recording stops: processing runs (silence
 *   check, TRIM_SILENCE, WAV and MP3 encoding) under a deadline
 *   (RECORDING_PROCESSING_TIMEOUT_MS), the renditions go to the blob store,
 *   and the terminal state and the RECORDING_READY webhook (body: the
 *   Recording in proto3 JSON, FULL view, to `ready_uri`) are written in one
 *   transaction. Entirely silent audio is EMPTY (no renditions); a deadline
 *   overrun is FAILED TIMEOUT; any fault (encoder, blob store, bad input) is
 *   FAILED INTERNAL_ERROR. The audio may have 1 or 2 channels whatever
 *   channel_count the PENDING recording was created with (call recording
 *   learns whether the call was bridged only when recording stops): the
 *   terminal recording carries the channel count of the audio. 0 or more
 *   than 2 channels is FAILED INTERNAL_ERROR (channel_count unchanged).
 *   `fail(id, code)` ends a recording that will never complete (the call
 *   engine lost it, say).
 * Each takes the engine's WorkHolder (src/work-holder.ts): the PENDING row
 * carries the engine's id, and is held from its insert until its end is
 * written, which is tried again for as long as the engine runs. A PENDING
 * recording that no engine holds ends FAILED TIMEOUT at the next liveness
 * sweep (src/voice/calls/liveness.ts).
 *
 * The API reads and deletes: Get/List (FULL/BASIC views), Delete (the row
 * and its blobs; download links to it answer 404 from then on; its
 * transcriptions are deleted in the same transaction).
 *
 * A recording created with `transcribe` is transcribed once terminal
 * (src/transcriptions/domain.ts): its transcription is written in the
 * transaction that ends it (TranscriptionsDomain.open), so that no crash
 * leaves an ended recording without one; then, when it SUCCEEDED, the
 * stored audio (after post processing) and what the network says was said
 * in it (CompletedAudio.speech, shifted by what TRIM_SILENCE cut) go to the
 * Transcriber (TranscriptionsDomain.make).
 */
import { toJsonString } from "@bufbuild/protobuf";
import { badField, failedPrecondition, notFound } from "../api/errors.js";
import { newResourceId } from "../api/ids.js";
import { callChildrenParentName } from "../api/names.js";
import { type PageResult, readPage } from "../api/pagination.js";
import type { Clock } from "../clock.js";
import type { Db } from "../db/client.js";
import type {
  AudioFormat,
  PostProcessingValue,
  RecordingErrorCodeValue,
  RecordingRow,
  RecordingSourceValue,
  RecordingStateValue,
  RenditionRow,
  TranscriptionRow,
} from "../db/schema/index.js";
import { DeadlineExceeded, withDeadline } from "../deadline.js";
import { enqueueWebhook } from "../events/outbox.js";
import type { Logger } from "../log.js";
import { recordingProcessingDuration, recordingsProcessedTotal } from "../observability/metrics.js";
import type { SpokenSegment } from "../telephony/carrier.js";
import type { TranscribedRecording, TranscriptionsDomain } from "../transcriptions/domain.js";
import { TranscriptionsRepository } from "../transcriptions/repository.js";
import type { TranscriptionAudio } from "../transcriptions/transcriber.js";
import { retryHeld, type WorkHolder } from "../work-holder.js";
import type { BlobStore, BlobStream } from "./blobs.js";
import type { AudioRef, LinkSigner } from "./links.js";
import { type RecordingRef, recordingName } from "./names.js";
import { type AudioProcessor, defaultProcessor, type ProcessedAudio } from "./processing.js";
import { RecordingSchema, recordingToProto } from "./proto.js";
import type { RangeRequest } from "./ranges.js";
import { RecordingsRepository } from "./repository.js";
import { transcriptionAudio } from "./transcription-audio.js";

export const RESOURCE_TYPE = "voice.api.enfonica.com/Recording";

export interface Recording extends RecordingRef {
  name: string;
  source: RecordingSourceValue;
  state: RecordingStateValue;
  durationMs: number | undefined;
  channelCount: number;
  postProcessing: PostProcessingValue[];
  errorCode: RecordingErrorCodeValue | undefined;
  readyUri: string;
  transcribe: boolean;
  transcriptionReadyUri: string;
  renditions: RenditionRow[];
  startTime: Date | undefined;
  createTime: Date;
}

export interface NewRecording {
  projectId: string;
  /** The parent leg of the call being recorded. */
  callId: string;
  source: RecordingSourceValue;
  postProcessing: readonly PostProcessingValue[];
  /** Absolute http(s) URI of the RECORDING_READY webhook; empty for none. */
  readyUri: string;
  /** 1 (mixed) or 2 (one channel per party); the expected count: `complete` stores the actual one. */
  channelCount: number;
  /** Transcribe it once terminal (`transcribe: DEFAULT`). */
  transcribe?: boolean;
  /** Absolute http(s) URI of the TRANSCRIPTION_READY webhook; empty for none. */
  transcriptionReadyUri?: string;
}

export interface CompletedAudio {
  /**
   * Samples per channel, 1 or 2 arrays of equal length (whatever the
   * PENDING recording's channel_count; the terminal recording takes this one).
   */
  channels: readonly Int16Array[];
  sampleRate: number;
  /** When recording on the call started. */
  startTime: Date;
  /** What was said in it, when the network knows (CapturedAudio.speech). */
  speech?: readonly SpokenSegment[] | undefined;
}

/** A recording after `finish`: `ended` when this call ended it (the rest follows only then). */
interface Ended {
  recording: Recording;
  ended: boolean;
  /** The transcription opened with its end (it asked for one). */
  transcription?: TranscriptionRow;
  /** What that transcription gets of its audio (the recording SUCCEEDED). */
  transcribed?: TranscriptionAudio;
}

export interface PageParams {
  pageSize: number;
  pageToken: string;
}

export interface RecordingsOptions {
  db: Db;
  clock: Clock;
  blobs: BlobStore;
  links: LinkSigner;
  log: Logger;
  /** Longest processing may take before the recording fails with TIMEOUT. */
  processingTimeoutMs: number;
  /** Defaults to defaultProcessor (tests inject slow or failing ones). */
  processor?: AudioProcessor;
  /** Tells the webhook worker that events were queued. */
  kick?: () => void;
  /** Where recordings asking for it are transcribed. */
  transcriptions?: TranscriptionsDomain;
}

function toRecording(row: RecordingRow): Recording {
  const ref = { projectId: row.projectId, callId: row.callId, id: row.id };
  return {
    ...ref,
    name: recordingName(ref),
    source: row.source,
    state: row.state,
    durationMs: row.durationMs ?? undefined,
    channelCount: row.channelCount,
    postProcessing: row.postProcessing,
    errorCode: row.errorCode ?? undefined,
    readyUri: row.readyUri,
    transcribe: row.transcribe,
    transcriptionReadyUri: row.transcriptionReadyUri,
    renditions: row.renditions,
    startTime: row.startTime ?? undefined,
    createTime: row.createTime,
  };
}

/** What a transcription needs of its recording. */
function transcribedOf(recording: Recording): TranscribedRecording {
  if (recording.state === "PENDING") throw new Error(`${recording.name} is not terminal`);
  return {
    projectId: recording.projectId,
    callId: recording.callId,
    id: recording.id,
    name: recording.name,
    state: recording.state,
    channelCount: recording.channelCount,
    durationMs: recording.durationMs,
    transcriptionReadyUri: recording.transcriptionReadyUri,
  };
}

function isHttpUri(uri: string): boolean {
  try {
    const url = new URL(uri);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

const MIME: Readonly<Record<AudioFormat, Pick<RenditionRow, "mimeType" | "encoding">>> = {
  wav: { mimeType: "audio/x-wav", encoding: "AUDIO_ENCODING_PCM_16BIT" },
  mp3: { mimeType: "audio/mpeg", encoding: "AUDIO_ENCODING_MP3" },
};

export class RecordingsDomain {
  private readonly processor: AudioProcessor;

  constructor(private readonly options: RecordingsOptions) {
    this.processor = options.processor ?? defaultProcessor;
  }

  private get repository(): RecordingsRepository {
    return new RecordingsRepository(this.options.db);
  }

  /**
   * A new PENDING recording (the engine calls this when recording starts),
   * held by `holder` until `complete` or `fail` ends it.
   */
  async createPending(input: NewRecording, holder?: WorkHolder): Promise<Recording> {
    if (input.channelCount !== 1 && input.channelCount !== 2) {
      throw badField("channel_count", "must be 1 or 2", "int32.in");
    }
    if (input.readyUri !== "" && !isHttpUri(input.readyUri)) {
      throw badField("ready_uri", "must be an absolute http or https URI", "uri");
    }
    const transcriptionReadyUri = input.transcriptionReadyUri ?? "";
    if (transcriptionReadyUri !== "" && !isHttpUri(transcriptionReadyUri)) {
      throw badField("transcription_ready_uri", "must be an absolute http or https URI", "uri");
    }
    const id = newResourceId();
    // Held before its insert: the engine's own sweep must not take it for let go.
    holder?.hold(id);
    let row: RecordingRow;
    try {
      row = await this.repository.insert({
        id,
        projectId: input.projectId,
        callId: input.callId,
        source: input.source,
        state: "PENDING",
        channelCount: input.channelCount,
        postProcessing: [...new Set(input.postProcessing)],
        readyUri: input.readyUri,
        transcribe: input.transcribe ?? false,
        transcriptionReadyUri,
        createTime: this.options.clock.now(),
        engineId: holder?.id ?? null,
      });
    } catch (err) {
      // It may have committed all the same (its reply lost): unheld, the sweep ends it.
      holder?.release(id);
      throw err;
    }
    return toRecording(row);
  }

  /**
   * Processes the recorded audio of a PENDING recording and moves it to
   * SUCCEEDED, EMPTY or FAILED (never throws for a processing fault: that is
   * FAILED INTERNAL_ERROR). NOT_FOUND for an unknown id, FAILED_PRECONDITION
   * when the recording is no longer PENDING.
   */
  async complete(id: string, audio: CompletedAudio, holder?: WorkHolder): Promise<Recording> {
    let ended: Ended;
    try {
      ended = await this.process(id, audio, holder);
    } finally {
      // Ended, or given up (a fault): what is still PENDING is the sweep's.
      holder?.release(id);
    }
    await this.transcribe(ended, holder);
    return ended.recording;
  }

  /** Makes the transcription `finish` opened with the recording's end (nothing when there is none). */
  private async transcribe(ended: Ended, holder: WorkHolder | undefined): Promise<void> {
    if (ended.transcription === undefined) return;
    await this.options.transcriptions?.make(
      ended.transcription,
      ended.recording.durationMs,
      ended.transcribed,
      holder,
    );
  }

  /** The recording, terminal, and what its transcription gets of its audio (when it asked for one and has audio). */
  private async process(id: string, audio: CompletedAudio, holder: WorkHolder | undefined): Promise<Ended> {
    const row = await this.pending(id, holder);
    const endTimer = recordingProcessingDuration.startTimer();
    const counted = (state: string) => (ended: Ended) => {
      endTimer();
      if (ended.ended) recordingsProcessedTotal.inc({ state });
      return ended;
    };
    let processed: ProcessedAudio;
    let stored: RenditionRow[] = [];
    const channelCount = audio.channels.length;
    const channelsOk = channelCount === 1 || channelCount === 2;
    try {
      if (!channelsOk) throw new Error(`expected 1 or 2 channels, got ${channelCount}`);
      processed = await withDeadline(
        () =>
          this.processor({
            channels: audio.channels,
            sampleRate: audio.sampleRate,
            postProcessing: row.postProcessing,
          }),
        this.options.processingTimeoutMs,
        "processing",
      );
      if (!processed.empty) stored = await this.store(row, processed);
    } catch (err) {
      const code: RecordingErrorCodeValue = err instanceof DeadlineExceeded ? "TIMEOUT" : "INTERNAL_ERROR";
      this.options.log.warn({ err, recording: row.id, code }, "recording processing failed");
      await this.deleteBlobs(stored);
      return this.finish(
        row,
        { state: "FAILED", errorCode: code, ...(channelsOk ? { channelCount } : {}) },
        holder,
      ).then(counted("FAILED"));
    }
    if (processed.empty) {
      return this.finish(row, { state: "EMPTY", channelCount }, holder).then(counted("EMPTY"));
    }
    const finished = await this.finish(
      row,
      {
        state: "SUCCEEDED",
        channelCount,
        durationMs: processed.durationMs,
        renditions: stored,
        startTime: audio.startTime,
      },
      holder,
    );
    const done = counted("SUCCEEDED")(finished);
    return done.transcription === undefined
      ? done
      : { ...done, transcribed: transcriptionAudio(audio, processed) };
  }

  /**
   * Ends a PENDING recording as FAILED with `code` (one that will never
   * complete: the liveness sweep's), with its transcription FAILED when it
   * asked for one. Its writes are tried again for up to a minute (the next
   * sweep tries again).
   */
  async fail(id: string, code: RecordingErrorCodeValue): Promise<Recording> {
    const row = await this.pending(id, undefined);
    return (await this.finish(row, { state: "FAILED", errorCode: code }, undefined)).recording;
  }

  private async pending(id: string, holder: WorkHolder | undefined): Promise<RecordingRow> {
    // Read again while the database fails on the way (a recording's end must not be dropped).
    const row = await retryHeld(
      holder,
      () => this.repository.findById(id),
      (err, retryInMs) =>
        this.options.log.warn({ err, recording: id, retryInMs }, "could not read a recording; retrying"),
    );
    if (row === undefined) throw notFound(RESOURCE_TYPE, `recordings/${id}`);
    if (row.state !== "PENDING") {
      throw failedPrecondition("RECORDING_NOT_PENDING", `${recordingName(row)} is already ${row.state}`, {
        recording: recordingName(row),
      });
    }
    return row;
  }

  private async store(
    row: RecordingRow,
    processed: ProcessedAudio & { empty: false },
  ): Promise<RenditionRow[]> {
    const out: RenditionRow[] = [];
    try {
      for (const [format, data] of [
        ["wav", processed.wav],
        ["mp3", processed.mp3],
      ] as const) {
        const blobKey = `recordings/${row.projectId}/${row.id}.${format}`;
        // Counted before the put: a put that failed may have stored its blob all the same.
        out.push({
          format,
          ...MIME[format],
          sampleRate: processed.sampleRate,
          sizeBytes: data.length,
          blobKey,
        });
        await this.options.blobs.put(blobKey, data);
      }
    } catch (err) {
      // None of it is kept: the recording ends FAILED without audio.
      await this.deleteBlobs(out);
      throw err;
    }
    return out;
  }

  /**
   * Writes the terminal state and its webhook in one transaction, with the
   * transcription when the recording asked for one (TranscriptionsDomain.open:
   * terminal at once unless the recording SUCCEEDED; then PENDING, held by
   * `holder`, and `transcription` for the caller to make). `ended` is false
   * when the recording was ended (or deleted) by someone else meanwhile, and
   * then `recording` is as it is.
   */
  private async finish(
    pending: RecordingRow,
    outcome: {
      state: "SUCCEEDED" | "EMPTY" | "FAILED";
      /** The channel count of the audio; unset: keep the PENDING row's. */
      channelCount?: number;
      durationMs?: number;
      errorCode?: RecordingErrorCodeValue;
      renditions?: RenditionRow[];
      startTime?: Date;
    },
    holder: WorkHolder | undefined,
  ): Promise<Ended> {
    const { id } = pending;
    const now = this.options.clock.now();
    const renditions = outcome.renditions ?? [];
    const transcriptions = pending.transcribe ? this.options.transcriptions : undefined;
    // Chosen once, so that a repeat after a lost reply finds what the first try wrote.
    const transcriptionId = transcriptions === undefined ? undefined : newResourceId();
    let queued = false;
    const finishOnce = () =>
      this.options.db.transaction(async (tx) => {
        const row = await new RecordingsRepository(tx).finish(id, {
          state: outcome.state,
          ...(outcome.channelCount === undefined ? {} : { channelCount: outcome.channelCount }),
          durationMs: outcome.durationMs ?? null,
          errorCode: outcome.errorCode ?? null,
          renditions,
          startTime: outcome.startTime ?? null,
          completeTime: now,
        });
        if (row === undefined) return undefined;
        const recording = toRecording(row);
        if (recording.readyUri !== "") {
          await enqueueWebhook(tx, {
            projectId: recording.projectId,
            eventType: "RECORDING_READY",
            uris: [recording.readyUri],
            body: toJsonString(RecordingSchema, recordingToProto(recording, this.options.links)),
            now,
          });
          queued = true;
        }
        if (transcriptions === undefined || transcriptionId === undefined) return { recording };
        const opened = await transcriptions.open(
          tx,
          transcribedOf(recording),
          transcriptionId,
          holder?.id ?? null,
        );
        queued ||= opened.queued;
        return { recording, transcription: opened.row };
      });
    // Failed on the way (the connection, the server): made again until the
    // database answers (while the engine runs; for up to a minute once it
    // stopped or without one: src/work-holder.ts). A repeat that finds the row
    // finished as this try finishes it (same state, same complete_time)
    // takes it as done: the first try committed, its reply lost; its
    // renditions are the row's (not blobs to delete), its transcription the
    // one it opened.
    if (transcriptionId !== undefined) holder?.hold(transcriptionId);
    let finished: Omit<Ended, "ended"> | undefined;
    try {
      finished = await retryHeld(
        holder,
        async (n) => {
          const done = await finishOnce();
          if (done !== undefined || n === 0) return done;
          const row = await this.repository.findById(id);
          if (row?.state !== outcome.state || row.completeTime?.getTime() !== now.getTime()) return undefined;
          const transcription =
            transcriptionId === undefined
              ? undefined
              : await new TranscriptionsRepository(this.options.db).findById(transcriptionId);
          return { recording: toRecording(row), ...(transcription === undefined ? {} : { transcription }) };
        },
        (err, retryInMs) =>
          this.options.log.warn(
            { err, recording: id, retryInMs },
            "could not record a recording's end; retrying",
          ),
      );
    } finally {
      // Held from here on only while PENDING (`make` releases it).
      if (transcriptionId !== undefined && finished?.transcription?.state !== "PENDING") {
        holder?.release(transcriptionId);
      }
    }
    if (finished === undefined) {
      // Deleted (or finished by someone else) while processing: keep nothing.
      await this.deleteBlobs(renditions);
      const row = await this.repository.findById(id);
      if (row === undefined) throw notFound(RESOURCE_TYPE, `recordings/${id}`);
      return { recording: toRecording(row), ended: false };
    }
    if (queued) this.options.kick?.();
    return { ...finished, ended: true };
  }

  private async deleteBlobs(renditions: readonly RenditionRow[]): Promise<void> {
    for (const r of renditions) {
      try {
        await this.options.blobs.delete(r.blobKey);
      } catch (err) {
        this.options.log.warn({ err, key: r.blobKey }, "could not delete a recording blob");
      }
    }
  }

  async get(ref: RecordingRef): Promise<Recording> {
    const row = await this.repository.find(ref.projectId, ref.id);
    if (row === undefined || row.callId !== ref.callId) throw notFound(RESOURCE_TYPE, recordingName(ref));
    return toRecording(row);
  }

  /** The recordings of a project, or of one call of it, newest first. */
  async list(
    projectId: string,
    callId: string | undefined,
    page: PageParams,
  ): Promise<PageResult<Recording>> {
    const parent = callChildrenParentName(projectId, callId);
    const query = { method: "ListRecordings", parent };
    const result = await readPage({ ...page, query }, (after, limit) =>
      this.repository.list(projectId, callId, after, limit),
    );
    return { items: result.items.map(toRecording), nextPageToken: result.nextPageToken };
  }

  /** Deletes a recording, its transcriptions and its audio; returns it as it was. */
  async delete(ref: RecordingRef): Promise<Recording> {
    const current = await this.get(ref);
    const row = await this.options.db.transaction(async (tx) => {
      const deleted = await new RecordingsRepository(tx).delete(ref.projectId, ref.id);
      if (deleted !== undefined) await new TranscriptionsRepository(tx).deleteForRecording(ref.id);
      return deleted;
    });
    if (row === undefined) throw notFound(RESOURCE_TYPE, recordingName(ref));
    await this.deleteBlobs(row.renditions);
    return current;
  }

  /** The rendition a (verified) download link names, or undefined when it is gone. */
  private async rendition(ref: AudioRef): Promise<RenditionRow | undefined> {
    const row = await this.repository.find(ref.projectId, ref.recordingId);
    if (row === undefined || row.callId !== ref.callId) return undefined;
    return row.renditions.find((r) => r.format === ref.format);
  }

  /**
   * The audio a (verified) download link names, or `range` of it
   * (RangeNotSatisfiable when it has none of it), or undefined when it is gone.
   */
  async openAudio(
    ref: AudioRef,
    range?: RangeRequest,
  ): Promise<(BlobStream & { mimeType: string }) | undefined> {
    const rendition = await this.rendition(ref);
    if (rendition === undefined) return undefined;
    const blob = await this.options.blobs.stream(rendition.blobKey, range);
    return blob === undefined ? undefined : { ...blob, mimeType: rendition.mimeType };
  }

  /** The size and type of the audio a (verified) download link names (HEAD), or undefined when it is gone. */
  async audioInfo(ref: AudioRef): Promise<{ size: number; mimeType: string } | undefined> {
    const rendition = await this.rendition(ref);
    if (rendition === undefined) return undefined;
    const size = await this.options.blobs.size(rendition.blobKey);
    return size === undefined ? undefined : { size, mimeType: rendition.mimeType };
  }

  /** Where this domain's recordings are transcribed. */
  get transcriptions(): TranscriptionsDomain | undefined {
    return this.options.transcriptions;
  }

  /** The download links of a recording (FULL view). */
  get links(): LinkSigner {
    return this.options.links;
  }
}
