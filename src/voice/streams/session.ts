/**
 * One open media stream (Streams.StreamCall), from its setup to its end:
 *
 *   waiting --(<Stream> of a call claims it)--> connected --> ended
 *      \--(30 s of call time: DEADLINE_EXCEEDED)-----------/
 *
 * Waiting, it buffers the client's input audio (at most one minute, the
 * rest dropped; `clear` empties it first) and request parameters. Claimed
 * by a call, `bridge()` sends `call_connected`, forks the call leg's media
 * (Carrier `fork`): the remote party's audio goes out as `output_audio`
 * chunks (one per frame, FRAME_SECONDS of call time), buffered input is
 * played to the call, and `input_audio_buffer_empty` follows each time the
 * buffer runs dry. The stream ends, once, by:
 * - the call ending (`hangup`): the RPC ends OK;
 * - the client closing its side (`client`): the RPC ends OK and the call's
 *   markup goes on after `<Stream>`;
 * - the client cancelling, or the service stopping (`cancelled`);
 * - an invalid message (`error`): the RPC ends with its error;
 * - the connect timeout (`timeout`, waiting only): DEADLINE_EXCEEDED.
 * Whatever ended it, `bridge()` resolves with how and with the parameters
 * the client set, for the call's next VoiceML request.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import type { StreamCallResponseSchema } from "../../../gen/enfonica/voice/v1beta1/streams_pb.js";
import { badField, rpcError } from "../../api/errors.js";
import type { CarrierLeg, MediaFork } from "../../telephony/carrier.js";
import { decodeG711, encodeG711, type G711Encoding } from "../../telephony/g711.js";
import type { Scheduler, Timer } from "../../telephony/scheduler.js";
import {
  CONNECT_TIMEOUT_SECONDS,
  FRAME_SECONDS,
  MAX_BUFFERED_SAMPLES,
  MAX_PARAMETER_BYTES,
  parameterBytes,
  type StreamName,
} from "./domain.js";
import { ResponseQueue } from "./queue.js";

export type StreamResponse = MessageInitShape<typeof StreamCallResponseSchema>;

export type StreamEndedBy = "hangup" | "client" | "cancelled" | "error" | "timeout";

/** How a bridged stream ended, for the call. */
export interface StreamEnd {
  endedBy: StreamEndedBy;
  /** The request parameters the client set (update_request_parameters, merged). */
  parameters: Record<string, string>;
}

/** Responses a client may fall behind by before the oldest audio is dropped (~5 min of audio). */
const MAX_PENDING_RESPONSES = 2000;

export class StreamSession {
  state: "waiting" | "claimed" | "connected" | "ended" = "waiting";
  readonly responses = new ResponseQueue<StreamResponse>(
    MAX_PENDING_RESPONSES,
    (r) => r.event?.case === "outputAudio",
  );
  private readonly parameters: Record<string, string> = Object.create(null);
  /** Input audio received before the call was connected. */
  private pending: Int16Array[] = [];
  private pendingSamples = 0;
  private fork: MediaFork | undefined;
  private deadline: Timer | undefined;
  private onEnd: ((end: StreamEnd) => void) | undefined;
  private readonly endedListeners = new Set<() => void>();
  endedBy: StreamEndedBy | undefined;

  constructor(
    readonly stream: StreamName,
    /** The encoding of output_audio and the default of input_audio. */
    readonly encoding: G711Encoding,
    private readonly scheduler: Scheduler,
  ) {}

  get name(): string {
    return this.stream.name;
  }

  /** Starts the connect timeout (the stream is open). */
  open(): void {
    this.deadline = this.scheduler.after(CONNECT_TIMEOUT_SECONDS, () => {
      if (this.state !== "waiting") return;
      this.end(
        "timeout",
        rpcError(
          Code.DeadlineExceeded,
          "STREAM_NOT_CONNECTED",
          `no call connected to ${this.name} within ${CONNECT_TIMEOUT_SECONDS} seconds`,
          { stream: this.name },
        ),
      );
    });
  }

  /** Runs `listener` once the stream ends (at once when it has). */
  whenEnded(listener: () => void): void {
    if (this.state === "ended") listener();
    else this.endedListeners.add(listener);
  }

  /** Input audio from the client, already decoded to PCM. */
  input(samples: Int16Array, clear: boolean): void {
    if (this.state === "ended") return;
    const fork = this.fork;
    if (fork !== undefined) {
      if (clear) fork.clear();
      const room = Math.max(0, MAX_BUFFERED_SAMPLES - fork.queued);
      fork.play(samples.length > room ? samples.subarray(0, room) : samples);
      return;
    }
    if (clear) {
      this.pending = [];
      this.pendingSamples = 0;
    }
    const room = Math.max(0, MAX_BUFFERED_SAMPLES - this.pendingSamples);
    const kept = samples.length > room ? samples.subarray(0, room) : samples;
    if (kept.length === 0) return;
    this.pending.push(kept);
    this.pendingSamples += kept.length;
  }

  /** Decodes `audio` in `encoding` (the stream's when undefined) and buffers it. */
  inputEncoded(audio: Uint8Array, encoding: G711Encoding | undefined, clear: boolean): void {
    this.input(decodeG711(encoding ?? this.encoding, audio), clear);
  }

  /** Merges request parameters; INVALID_ARGUMENT when they would exceed MAX_PARAMETER_BYTES in all. */
  updateParameters(update: Readonly<Record<string, string>>): void {
    const merged = { ...this.parameters, ...update };
    if (parameterBytes(merged) > MAX_PARAMETER_BYTES) {
      throw badField(
        "update_request_parameters.parameters",
        `the stream's request parameters would exceed ${MAX_PARAMETER_BYTES} bytes in all (keys and values, UTF-8)`,
      );
    }
    Object.assign(this.parameters, update);
  }

  /** Marks the stream taken by a call (synchronously, so no other call can take it). */
  claim(): void {
    if (this.state === "waiting") this.state = "claimed";
  }

  /**
   * Bridges the claimed stream with the call `callName` on `leg`; resolves
   * when the stream ends. A leg that is no longer answered ends the stream
   * at once (`hangup`).
   */
  bridge(callName: string, leg: CarrierLeg): Promise<StreamEnd> {
    const done = new Promise<StreamEnd>((resolve) => {
      this.onEnd = resolve;
    });
    if (this.state === "ended") {
      this.onEnd?.({ endedBy: this.endedBy ?? "cancelled", parameters: { ...this.parameters } });
      return done;
    }
    if (leg.state !== "answered") {
      this.end("hangup");
      return done;
    }
    this.deadline?.cancel();
    this.state = "connected";
    this.responses.push({ event: { case: "callConnected", value: { call: callName } } });
    this.fork = leg.fork(
      { frameSeconds: FRAME_SECONDS },
      {
        audio: (samples) => {
          this.responses.push({
            event: { case: "outputAudio", value: { audio: encodeG711(this.encoding, samples) } },
          });
        },
        drained: () => {
          this.responses.push({ event: { case: "inputAudioBufferEmpty", value: {} } });
        },
        ended: () => this.end("hangup"),
      },
    );
    for (const chunk of this.pending) this.fork.play(chunk);
    this.pending = [];
    this.pendingSamples = 0;
    return done;
  }

  /** Ends the stream once: the RPC finishes (with `error`, if any) and the call learns how. */
  end(endedBy: StreamEndedBy, error?: unknown): void {
    if (this.state === "ended") return;
    this.state = "ended";
    this.endedBy = endedBy;
    this.deadline?.cancel();
    const fork = this.fork;
    this.fork = undefined;
    fork?.close();
    this.pending = [];
    this.responses.end(error);
    this.onEnd?.({ endedBy, parameters: { ...this.parameters } });
    for (const listener of this.endedListeners) listener();
    this.endedListeners.clear();
  }
}
