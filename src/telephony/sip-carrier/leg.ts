/**
 * One call leg over SIP (a CarrierLeg, ../carrier.ts): its state as the
 * engine sees it, and its media on the call's CallMedia (./call-media.ts:
 * the RTP session of src/rtp/session.ts on the process's one pacer).
 * The SIP side (200/486/603/480 to an INVITE, CANCEL, BYE) is the carrier's,
 * reached through `LegSignalling`; the carrier tells the leg what the
 * network did (ringing, answered, ended).
 *
 * Media, as far as it is real today (full media is issue #28):
 * - `say` sends the speech engine's audio of the text (src/media/speech/:
 *   eSpeak NG, with the markup's language and voice; without an engine,
 *   the simulator's speech-like noise of speechSeconds(text)) and `play`
 *   the decoded file the engine fetched (PlayRequest.samples; without them,
 *   what the simulator plays for the uri: tones or silence of the given
 *   length), as G.711 RTP paced 20 ms a packet; each resolves once its last
 *   packet left (completed) or the leg ended (not completed); an engine that
 *   cannot speak rejects (SpeechError), which ends the call
 *   SPEECH_UNAVAILABLE as on the simulator;
 * - `capture` (call recording): channel [0] = what the peer sent (as the
 *   jitter buffer played it out, lost frames concealed) plus what we sent
 *   outside bridges; [1], when the leg was bridged during the capture, the
 *   other party; no `speech` (nothing transcribes real audio here);
 * - `recordCaller`: the peer's audio until maxSeconds, the stop key (RFC
 *   4733, SIP INFO or in-band), the leg's end, or silenceTimeoutSeconds without a sample louder
 *   than SILENCE_LEVEL;
 * - `collectDigits`: keys by any of the three methods, each press once; keys
 *   pressed while nothing collects wait for the next collection;
 * - `fork`: the peer's audio every frame (each frame handed out 60 ms after
 *   its end, so packets a little late are in it), and samples given played
 *   out;
 * - keys come by RFC 4733, SIP INFO (application/dtmf-relay, application/dtmf:
 *   the carrier hands the body to the media) or in-band tones (detected when
 *   the peer offered no telephone-event);
 * - no RTP for RTP_TIMEOUT_SECONDS (not while the peer holds the call): BYE,
 *   and the call ends FAILED with RTP_TIMEOUT;
 * - `bridge`: the two legs' audio relayed both ways (./bridge.ts), transcoded
 *   by decoding and encoding (PCMU on one side, PCMA on the other), keys
 *   passed on; a capture of a leg bridged during it has a second channel,
 *   the other party as relayed (channel 0 stays the leg's own peer and what
 *   was played to it outside the bridge).
 */

import { FrameClock, schedulerTimers } from "../../media/frame-clock.js";
import type { SpeechEngine } from "../../media/speech/engine.js";
import { seedFrom, speechLikeWindow, tone } from "../../recordings/audio/signal.js";
import type {
  AudioCapture,
  CallEnd,
  CapturedAudio,
  CarrierEvents,
  CarrierLeg,
  CollectDigitsOptions,
  ForkEvents,
  ForkOptions,
  MediaFork,
  MediaResult,
  PlayRequest,
  RecordCallerOptions,
  RecordCallerResult,
} from "../carrier.js";
import type { Scheduler, Timer } from "../scheduler.js";
import { SAY_LEVEL, soundOfUri, speechSeconds, TONE_LEVEL } from "../simulator/media.js";
import { MediaBridge } from "./bridge.js";
import { type CallMedia, SAMPLE_RATE } from "./call-media.js";
import { recordRtpTimeout } from "./rtp-metrics.js";

/** Samples at or below this magnitude count as silence for Record's silence timeout. */
export const SILENCE_LEVEL = 300;

/** How far (samples) a fork's frames trail real time, so late packets still make their frame: 60 ms. */
export const FORK_PLAYOUT_DELAY = 480;

/** The error code of a call hung up because no RTP came for RTP_TIMEOUT_SECONDS. */
export const RTP_TIMEOUT = "RTP_TIMEOUT";

/** What the leg asks of the SIP side. */
export interface LegSignalling {
  /** Incoming: 200 OK with our SDP answer; false when the INVITE was answered meanwhile (cancelled). */
  accept(): boolean;
  /** Incoming, before the answer: a final refusal. */
  refuse(status: number, reason: string): void;
  /** Outgoing, before the answer: CANCEL. */
  cancel(): void;
  /** After the answer: BYE. */
  bye(): void;
}

export class SipLeg implements CarrierLeg {
  state: CarrierLeg["state"] = "setup";
  remoteAudio: CarrierLeg["remoteAudio"];
  bridgedWith: CarrierLeg | undefined = undefined;
  private bridge_: MediaBridge | undefined;
  /** Whether this leg was bridged at some point (its recordings then have a second channel). */
  private bridgedEver = false;
  private answering = false;
  private says = 0;
  private keys = "";
  private readonly waiters = new Set<() => void>();
  private keyListener: (() => void) | undefined;

  constructor(
    readonly callId: string,
    readonly direction: "incoming" | "outgoing",
    private readonly events: CarrierEvents,
    readonly session: CallMedia,
    private readonly scheduler: Scheduler,
    private readonly signalling: LegSignalling,
    private readonly speech?: SpeechEngine,
  ) {
    session.onDigit((key) => {
      // While bridged, keys are the other party's (the bridge passes them on), not the next <Input>'s.
      if (this.bridge_ !== undefined) return;
      this.keys += key;
      this.keyListener?.();
    });
    session.onTimeout(() => {
      if (this.state !== "answered") return;
      recordRtpTimeout();
      this.signalling.bye();
      this.end({
        cause: "failed",
        errorCode: RTP_TIMEOUT,
        errorMessage: "No RTP came from the other party for RTP_TIMEOUT_SECONDS; the call was hung up",
      });
    });
  }

  // --- what the network did (the carrier calls these) ---

  /** Incoming: taken ringing (no event); outgoing: 180/183. */
  rang(): void {
    if (this.state !== "setup") return;
    this.state = "ringing";
    if (this.direction === "outgoing") this.events.ringing();
  }

  /** The call is answered (our 200 sent, or the peer's 200 received): media flows. */
  connected(): void {
    if (this.state === "ended" || this.state === "answered") return;
    this.state = "answered";
    this.remoteAudio = "speech";
    this.session.start();
    this.events.answered({ remoteAudio: "speech" });
  }

  /** The leg ended; the event fires once. */
  end(end: CallEnd): void {
    if (this.state === "ended") return;
    this.unbridge();
    this.state = "ended";
    this.endPosition = this.session.position();
    this.session.close(this.callId);
    for (const w of [...this.waiters]) w();
    this.waiters.clear();
    this.events.ended(end);
  }

  private endPosition: number | undefined;

  private position(): number {
    return this.endPosition ?? this.session.position();
  }

  // --- what the engine asks ---

  hangUp(): void {
    if (this.state === "ended") return;
    if (this.state === "answered") this.signalling.bye();
    else if (this.direction === "incoming") this.signalling.refuse(480, "Temporarily Unavailable");
    else this.signalling.cancel();
    this.end({ cause: "local-hangup" });
  }

  bridge(other: CarrierLeg): void {
    if (other === this) throw new Error("cannot bridge a leg with itself");
    if (!(other instanceof SipLeg)) throw new Error("can only bridge legs of the same carrier");
    if (this.state !== "answered" || other.state !== "answered") {
      throw new Error("both legs must be answered to be bridged");
    }
    this.unbridge();
    other.unbridge();
    const relay = new MediaBridge(this, other);
    this.bridge_ = relay;
    other.bridge_ = relay;
    this.bridgedWith = other;
    other.bridgedWith = this;
    this.bridgedEver = true;
    other.bridgedEver = true;
  }

  /** Ends this leg's bridge, if any, on both legs (a leg's end does it). */
  private unbridge(): void {
    const relay = this.bridge_;
    if (relay === undefined) return;
    relay.stop();
    for (const leg of [relay.a, relay.b]) {
      leg.bridge_ = undefined;
      leg.bridgedWith = undefined;
    }
  }

  // --- what a bridge uses (./bridge.ts) ---

  /** The peer's audio, a 20 ms frame at a time as it is played out; returns the unsubscribe. */
  onRemoteFrame(listener: (samples: Int16Array) => void): () => void {
    return this.session.onAudio(listener);
  }

  /** Keys the peer presses (each once), for a bridge to pass on; returns the unsubscribe. */
  onRemoteKey(listener: (key: string) => void): () => void {
    return this.session.onDigit(listener);
  }

  /** Relays a frame of the bridged party to this leg's peer (kept apart for recordings). */
  relay(samples: Int16Array, owner: object): void {
    if (this.state !== "answered") return;
    void this.session.send(samples, owner, this.session.bridgeTrack);
  }

  /** Samples a bridge queued to this leg's peer and not yet sent. */
  relayQueued(owner: object): number {
    return this.session.queued(owner);
  }

  /** Drops what a bridge queued and not yet sent (it fell behind). */
  relayClear(owner: object): void {
    this.session.clear(owner);
  }

  /** Sends a key to this leg's peer (RFC 4733, or an in-band tone when the peer offered no telephone-event). */
  relayKey(key: string): void {
    if (this.state === "answered") this.session.sendDtmf(key);
  }

  answer(): void {
    if (this.direction !== "incoming") throw new Error("cannot answer an outgoing call");
    if (this.state !== "ringing") throw new Error(`cannot answer a call that is ${this.state}`);
    if (this.answering) throw new Error("cannot answer a call already being answered");
    this.answering = true;
    if (!this.signalling.accept()) return; // cancelled meanwhile: the CANCEL ends the leg
    this.scheduler.after(0, () => this.connected());
  }

  reject(cause: "busy" | "rejected"): void {
    if (this.direction !== "incoming") throw new Error("cannot reject an outgoing call");
    if (this.state !== "ringing") throw new Error(`cannot reject a call that is ${this.state}`);
    if (this.answering) throw new Error("cannot reject a call already being answered");
    if (cause === "busy") this.signalling.refuse(486, "Busy Here");
    else this.signalling.refuse(603, "Decline");
    this.end({
      cause,
      errorCode: cause === "busy" ? "BUSY" : "REJECTED",
      errorMessage: cause === "busy" ? "The call was refused busy" : "The call was declined",
    });
  }

  /** Sends samples; completed once the last packet left, not when the leg ended first. */
  private async send(samples: Int16Array): Promise<MediaResult> {
    if (this.state !== "answered") return { completed: false };
    const sent = await this.session.send(samples);
    return { completed: sent && this.state === "answered" };
  }

  async say(text: string, options: { language?: string; voice?: string } = {}): Promise<MediaResult> {
    if (this.speech !== undefined) {
      if (this.state !== "answered") return { completed: false };
      return this.send(await this.speech.synthesize(text, options));
    }
    const length = Math.round(speechSeconds(text) * SAMPLE_RATE);
    const seed = seedFrom(`${this.callId}:say:${this.says++}`);
    return this.send(
      speechLikeWindow({ seed, sampleRate: SAMPLE_RATE, level: SAY_LEVEL, totalLength: length }, 0, length),
    );
  }

  play(audio: PlayRequest): Promise<MediaResult> {
    if (audio.samples !== undefined) return this.send(audio.samples);
    const length = Math.max(0, Math.round(audio.durationSeconds * SAMPLE_RATE));
    const sound = soundOfUri(audio.uri);
    const samples =
      sound.kind === "tone"
        ? tone({ frequency: sound.frequency, sampleRate: SAMPLE_RATE, level: TONE_LEVEL }, 0, length)
        : new Int16Array(length);
    return this.send(samples);
  }

  /** Waits for `ms` of real time, a key, or the leg's end; resolves which. */
  private wait(seconds: number, onKey: boolean): Promise<"timeout" | "key" | "ended"> {
    if (this.state !== "answered") return Promise.resolve("ended");
    return new Promise((resolve) => {
      let timer: Timer | undefined;
      const finish = (why: "timeout" | "key" | "ended") => {
        timer?.cancel();
        this.waiters.delete(ended);
        if (onKey) this.keyListener = undefined;
        resolve(why);
      };
      const ended = () => finish("ended");
      this.waiters.add(ended);
      if (onKey) this.keyListener = () => finish("key");
      timer = this.scheduler.after(seconds, () => finish("timeout"));
    });
  }

  async collectDigits(options: CollectDigitsOptions): Promise<string> {
    let collected = "";
    for (;;) {
      while (this.keys !== "") {
        const key = this.keys[0]!;
        this.keys = this.keys.slice(1);
        if (options.finishOnKey !== "" && key === options.finishOnKey) return collected;
        collected += key;
        if (options.numDigits > 0 && collected.length >= options.numDigits) return collected;
      }
      const why = await this.wait(options.timeoutSeconds, true);
      if (why !== "key") return collected;
    }
  }

  private captured(from: number, to: number, local: boolean): CapturedAudio {
    const samples = this.session.remoteTrack.render(from, Math.max(from, to));
    if (local) this.session.localTrack.mixInto(samples, from);
    // A leg bridged during the capture: channel 1 holds the other party, as relayed to this one.
    const bridged =
      local && this.bridgedEver ? this.session.bridgeTrack.render(from, Math.max(from, to)) : undefined;
    return {
      sampleRate: SAMPLE_RATE,
      channels: bridged === undefined ? [samples] : [samples, bridged],
      startTime: new Date(this.scheduler.now().getTime() - ((this.position() - from) * 1000) / SAMPLE_RATE),
      durationSeconds: samples.length / SAMPLE_RATE,
    };
  }

  capture(): AudioCapture {
    const from = this.position();
    let result: CapturedAudio | undefined;
    return {
      stop: () => {
        result ??= this.captured(from, this.position(), true);
        return result;
      },
    };
  }

  async recordCaller(options: RecordCallerOptions): Promise<RecordCallerResult> {
    const from = this.position();
    const startMs = this.scheduler.now().getTime();
    let endedBy: RecordCallerResult["endedBy"] | undefined;
    const tick = 0.1;
    while (endedBy === undefined) {
      const why = await this.wait(tick, options.stopKey !== "");
      const elapsed = (this.scheduler.now().getTime() - startMs) / 1000;
      if (why === "ended") endedBy = "hangup";
      else if (why === "key") {
        const at = this.keys.indexOf(options.stopKey);
        if (at >= 0) {
          this.keys = this.keys.slice(at + 1);
          endedBy = "stop-key";
        }
      } else if (elapsed >= options.maxSeconds) endedBy = "max-duration";
      else if (
        options.silenceTimeoutSeconds > 0 &&
        elapsed >= options.silenceTimeoutSeconds &&
        !this.session.remoteTrack.loud(
          Math.max(from, this.position() - Math.round(options.silenceTimeoutSeconds * SAMPLE_RATE)),
          this.position(),
          SILENCE_LEVEL,
        )
      ) {
        endedBy = "silence";
      }
    }
    const to = Math.min(this.position(), from + Math.round(options.maxSeconds * SAMPLE_RATE));
    return { endedBy, audio: this.captured(from, to, false) };
  }

  fork(options: ForkOptions, events: ForkEvents): MediaFork {
    if (this.state !== "answered") throw new Error(`cannot fork the media of a call that is ${this.state}`);
    const owner = {};
    const session = this.session;
    let sentUpTo = this.position();
    let closed = false;
    let outstanding = 0;
    const frame = Math.round(options.frameSeconds * SAMPLE_RATE);
    const deliver = (to: number) => {
      while (!closed && sentUpTo + frame <= to) {
        events.audio(this.session.remoteTrack.render(sentUpTo, sentUpTo + frame));
        sentUpTo += frame;
      }
    };
    // A frame goes out once the packets of its end had time to arrive (jitter allowance).
    const clock = new FrameClock(schedulerTimers(this.scheduler), options.frameSeconds, () =>
      deliver(this.position() - FORK_PLAYOUT_DELAY),
    );
    const onEnd = () => {
      if (closed) return;
      clock.stop();
      const end = this.position();
      deliver(end);
      if (end > sentUpTo) events.audio(this.session.remoteTrack.render(sentUpTo, end));
      closed = true;
      events.ended();
    };
    this.waiters.add(onEnd);
    return {
      play: (samples) => {
        if (closed) return;
        outstanding++;
        void this.session.send(samples, owner).then(() => {
          outstanding--;
          if (!closed && outstanding === 0) events.drained();
        });
      },
      clear: () => this.session.clear(owner),
      get queued() {
        return closed ? 0 : session.queued(owner);
      },
      close: () => {
        if (closed) return;
        closed = true;
        clock.stop();
        this.waiters.delete(onEnd);
        this.session.clear(owner);
      },
    };
  }
}
