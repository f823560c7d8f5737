/**
 * Transcriptions: the words spoken in a recording, made when a recording
 * configured with `transcribe: DEFAULT` (Call.options.recording, a SIP
 * domain's call_recording) reaches its terminal state. The transcription
 * is written in the transaction that writes that state (`open`, called by
 * RecordingsDomain), so a recording never ends without it:
 *
 * - SUCCEEDED: a PENDING transcription (channel_count of the recording);
 *   then (`make`) the Transcriber (transcriber.ts) runs on the stored audio,
 *   and in one transaction the transcription becomes COMPLETED (duration =
 *   the recording's, utterances) or FAILED (the transcriber rejected or took
 *   longer than `timeoutMs`) and, when it has a ready_uri, the
 *   TRANSCRIPTION_READY webhook (body: the Transcription, FULL view, proto3
 *   JSON) is queued;
 * - EMPTY (nothing but silence): COMPLETED at once, no utterances, its
 *   webhook queued with the recording's end;
 * - FAILED: FAILED at once, likewise.
 * Either way the webhook is sent once, on the terminal state. Writing the
 * terminal state is tried again while the database fails on the way, for as
 * long as the engine making it runs (for up to a minute once it stopped, or
 * without one). The PENDING row carries the engine's id and is held by it
 * (src/work-holder.ts): one no engine holds ends FAILED at the next liveness
 * sweep (`fail`, src/voice/calls/liveness.ts).
 *
 * Deletion: DeleteTranscription deletes the transcription only (the
 * recording stays). Deleting a recording deletes its transcriptions in the
 * same transaction (the words are the recording's content: deleting a
 * recording for privacy must not leave them behind); a transcription being
 * made then is dropped — its result finds no PENDING row and sends nothing.
 *
 * Transcriptions run in the process that recorded the call, as recording
 * processing does (the engine waits for both at shutdown).
 */
import { create, toJsonString } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  Transcription_State,
  type Transcription as TranscriptionProto,
  TranscriptionSchema,
  UtteranceSchema,
} from "../../gen/enfonica/voice/v1beta1/transcriptions_pb.js";
import { notFound } from "../api/errors.js";
import {
  type CallChildRef,
  callChildName,
  callChildrenParentName,
  parseCallChildName,
  parseCallChildrenParent,
} from "../api/names.js";
import { type PageResult, readPage } from "../api/pagination.js";
import type { Clock } from "../clock.js";
import type { Db, DbOrTx } from "../db/client.js";
import type { TranscriptionRow, TranscriptionStateValue, UtteranceRow } from "../db/schema/index.js";
import { withDeadline } from "../deadline.js";
import { enqueueWebhook } from "../events/outbox.js";
import type { Logger } from "../log.js";
import { retryHeld, type WorkHolder } from "../work-holder.js";
import { TranscriptionsRepository } from "./repository.js";
import type { Transcriber, TranscriptionAudio } from "./transcriber.js";

export const TRANSCRIPTION_TYPE = "voice.api.enfonica.com/Transcription";

export type TranscriptionRef = CallChildRef;

/** What `transcribe` needs of the recording. */
export interface TranscribedRecording {
  projectId: string;
  callId: string;
  id: string;
  name: string;
  state: "SUCCEEDED" | "EMPTY" | "FAILED";
  channelCount: number;
  durationMs: number | undefined;
  transcriptionReadyUri: string;
}

export interface TranscriptionsOptions {
  db: Db;
  clock: Clock;
  log: Logger;
  transcriber: Transcriber;
  /** Longest a transcriber may take before the transcription is FAILED. */
  timeoutMs: number;
  kick?: () => void;
}

export function transcriptionName(ref: TranscriptionRef): string {
  return callChildName("transcriptions", ref);
}

/** The parts of `projects/{p}/calls/{c}/transcriptions/{t}`; INVALID_ARGUMENT naming `name` otherwise. */
export function parseTranscriptionName(name: string): TranscriptionRef {
  return parseCallChildName(name, "transcriptions", "transcription");
}

/** `projects/{p}` or `projects/{p}/calls/{c}`; INVALID_ARGUMENT naming `parent` otherwise. */
export const parseTranscriptionsParent = parseCallChildrenParent;

const STATE: Readonly<Record<TranscriptionStateValue, Transcription_State>> = {
  PENDING: Transcription_State.PENDING,
  COMPLETED: Transcription_State.COMPLETED,
  FAILED: Transcription_State.FAILED,
};

/** The proto of a transcription; `full` includes the utterances. */
export function transcriptionToProto(row: TranscriptionRow, full: boolean): TranscriptionProto {
  return create(TranscriptionSchema, {
    name: transcriptionName(row),
    recording: `projects/${row.projectId}/calls/${row.callId}/recordings/${row.recordingId}`,
    state: STATE[row.state],
    duration: row.durationMs === null ? undefined : durationFromMs(row.durationMs),
    channelCount: row.channelCount,
    createTime: timestampFromDate(row.createTime),
    updateTime: timestampFromDate(row.updateTime),
    readyUri: row.readyUri,
    utterances: full
      ? row.utterances.map((u) =>
          create(UtteranceSchema, {
            channel: u.channel,
            offset: durationFromMs(u.offsetMs),
            duration: durationFromMs(u.durationMs),
            text: u.text,
          }),
        )
      : [],
  });
}

/** Utterances checked against the audio: a channel it has, times inside it, text present; in time order. */
function clean(
  utterances: readonly UtteranceRow[],
  channelCount: number,
  durationMs: number,
): UtteranceRow[] {
  const out: UtteranceRow[] = [];
  for (const u of utterances) {
    const text = u.text.trim();
    if (!Number.isInteger(u.channel) || u.channel < 0 || u.channel >= channelCount || text === "") continue;
    const start = Math.max(0, Math.round(u.offsetMs));
    const end = Math.min(durationMs, Math.round(u.offsetMs + u.durationMs));
    if (end <= start) continue;
    out.push({ channel: u.channel, offsetMs: start, durationMs: end - start, text });
  }
  return out.sort((a, b) => a.offsetMs - b.offsetMs || a.channel - b.channel);
}

export class TranscriptionsDomain {
  constructor(private readonly options: TranscriptionsOptions) {}

  private get repository(): TranscriptionsRepository {
    return new TranscriptionsRepository(this.options.db);
  }

  /**
   * Writes the transcription of `recording`, which is reaching its terminal
   * state in `tx` (so that a recording never ends without its transcription,
   * whatever becomes of the process after the commit): FAILED for a FAILED
   * recording, COMPLETED without utterances for an EMPTY one (each with its
   * webhook queued in `tx`), PENDING for a SUCCEEDED one, carrying
   * `engineId` (its holder: `make` turns it into words). `queued`: a webhook
   * was queued.
   */
  async open(
    tx: DbOrTx,
    recording: TranscribedRecording,
    id: string,
    engineId: string | null,
  ): Promise<{ row: TranscriptionRow; queued: boolean }> {
    const now = this.options.clock.now();
    const terminal =
      recording.state === "FAILED"
        ? ({ state: "FAILED", durationMs: null } as const)
        : recording.state === "EMPTY"
          ? ({ state: "COMPLETED", durationMs: 0 } as const)
          : undefined;
    const row = await new TranscriptionsRepository(tx).insert({
      id,
      projectId: recording.projectId,
      callId: recording.callId,
      recordingId: recording.id,
      state: terminal?.state ?? "PENDING",
      durationMs: terminal?.durationMs ?? null,
      channelCount: recording.channelCount,
      readyUri: recording.transcriptionReadyUri,
      createTime: now,
      updateTime: now,
      engineId,
    });
    if (terminal === undefined || row.readyUri === "") return { row, queued: false };
    await this.enqueueReady(tx, row, now);
    return { row, queued: true };
  }

  /**
   * Turns an opened PENDING transcription (`open`) into words, then ends it
   * COMPLETED, or FAILED when the transcriber rejects or takes too long
   * (COMPLETED without utterances when there is no audio); nothing when it
   * is already terminal. Releases it from `holder` once ended (or given up:
   * what is still PENDING is the sweep's). Never throws.
   */
  async make(
    row: TranscriptionRow,
    durationMs: number | undefined,
    audio: TranscriptionAudio | undefined,
    holder: WorkHolder | undefined,
  ): Promise<void> {
    try {
      if (row.state !== "PENDING") return;
      if (audio === undefined) return await this.finish(row, "COMPLETED", 0, [], holder);
      const duration = durationMs ?? 0;
      try {
        const utterances = await withDeadline(
          () => this.options.transcriber.transcribe(audio),
          this.options.timeoutMs,
          "transcription",
        );
        await this.finish(row, "COMPLETED", duration, clean(utterances, row.channelCount, duration), holder);
      } catch (err) {
        this.options.log.warn({ err, transcription: transcriptionName(row) }, "transcription failed");
        await this.finish(row, "FAILED", null, [], holder);
      }
    } finally {
      holder?.release(row.id);
    }
  }

  /**
   * Ends a PENDING transcription that will never complete (no engine makes
   * it: liveness.ts) as FAILED, its webhook sent; nothing when it is not
   * PENDING (or gone).
   */
  async fail(id: string): Promise<void> {
    const row = await this.repository.findById(id);
    if (row?.state !== "PENDING") return;
    await this.finish(row, "FAILED", null, [], undefined);
  }

  /** Writes the terminal state and its webhook in one transaction (nothing when the row is gone). */
  private async finish(
    row: TranscriptionRow,
    state: "COMPLETED" | "FAILED",
    durationMs: number | null,
    utterances: UtteranceRow[],
    holder: WorkHolder | undefined,
  ): Promise<void> {
    const now = this.options.clock.now();
    const finishOnce = () =>
      this.options.db.transaction(async (tx) => {
        const done = await new TranscriptionsRepository(tx).finish(row.id, {
          state,
          durationMs,
          utterances,
          updateTime: now,
        });
        if (done === undefined || done.readyUri === "") return false;
        await this.enqueueReady(tx, done, now);
        return true;
      });
    // Failed on the way (the connection, the server): made again (see the
    // header). A repeat after a try that committed (its reply lost) finds
    // the row ended and changes nothing: its webhook was enqueued once.
    try {
      const finished = await retryHeld(holder, finishOnce, (err, retryInMs) =>
        this.options.log.warn(
          { err, transcription: transcriptionName(row), retryInMs },
          "could not finish a transcription; retrying",
        ),
      );
      if (finished) this.options.kick?.();
    } catch (err) {
      this.options.log.error(
        { err, transcription: transcriptionName(row) },
        "could not finish a transcription",
      );
    }
  }

  /** Queues the TRANSCRIPTION_READY webhook of a terminal transcription (body: FULL view) in `tx`. */
  private async enqueueReady(tx: DbOrTx, row: TranscriptionRow, now: Date): Promise<void> {
    await enqueueWebhook(tx, {
      projectId: row.projectId,
      eventType: "TRANSCRIPTION_READY",
      uris: [row.readyUri],
      body: toJsonString(TranscriptionSchema, transcriptionToProto(row, true)),
      now,
    });
  }

  async get(ref: TranscriptionRef): Promise<TranscriptionRow> {
    const row = await this.repository.find(ref.projectId, ref.id);
    if (row === undefined || row.callId !== ref.callId) {
      throw notFound(TRANSCRIPTION_TYPE, transcriptionName(ref));
    }
    return row;
  }

  /** The transcriptions of a project, or of one call of it, newest first. */
  list(
    projectId: string,
    callId: string | undefined,
    page: { pageSize: number; pageToken: string },
  ): Promise<PageResult<TranscriptionRow>> {
    const parent = callChildrenParentName(projectId, callId);
    return readPage({ ...page, query: { method: "ListTranscriptions", parent } }, (after, limit) =>
      this.repository.list(projectId, callId, after, limit),
    );
  }

  async delete(ref: TranscriptionRef): Promise<void> {
    await this.get(ref);
    const row = await this.repository.delete(ref.projectId, ref.id);
    if (row === undefined) throw notFound(TRANSCRIPTION_TYPE, transcriptionName(ref));
  }
}
