/**
 * The carrier simulator: a Carrier whose network is the operator's routes
 * (routes.ts). A call to `to` takes the route of the longest matching
 * prefix (or the built-in default) when it is placed, then, on the injected
 * scheduler, t0 being the time of placeCall:
 *
 * | outcome   | events                                                                 |
 * | --------- | ---------------------------------------------------------------------- |
 * | ANSWER    | ringing at t0+setup; answered at +ring; remote-hangup at +ring+talk     |
 * | REJECT    | ringing at t0+setup; ended `rejected` at +ring                          |
 * | NO_ANSWER | ringing at t0+setup; ended `no-answer` at t0+timeoutSeconds             |
 * | BUSY      | ended `busy` at t0+setup (no ringing)                                   |
 * | FAIL      | ended `failed` at t0+setup with the route's error code (no ringing)     |
 *
 * The caller's timeout (counted from t0) also ends an ANSWER or REJECT call
 * `no-answer` when it comes before the answer or the rejection. Calls that
 * do not connect carry the route's error code and message (defaults in
 * DEFAULT_ERRORS). "setup" is SimulatorOptions.setupSeconds (0.1 s).
 *
 * Once answered, the remote party sends the route's audio (SPEECH or
 * SILENCE, `remoteAudio`), and presses the route's `digits` when asked:
 * collectDigits takes keys from that sequence, one every
 * `digitIntervalSeconds` (0.5 s), until `numDigits` keys, the finish key
 * (consumed, not returned), or — the sequence being exhausted — the input's
 * timeout; keys left over go to the next collectDigits. `say` speaks with
 * the carrier's speech engine (SimulatorOptions.speech) and lasts as long as
 * the audio it made, which the leg's recordings hold (a hang-up while the
 * engine works makes it `completed: false`; an engine failure rejects with
 * its SpeechError); with no engine (unit tests of timing) it lasts
 * speechSeconds(text) of speech-like noise. `play` lasts the duration it is
 * given and plays the decoded samples it is given.
 *
 * An incoming call (receiveCall) resolves with its leg already `ringing`
 * (no `ringing` event) and waits — the caller never gives up — for the
 * engine, t0 being the engine's call:
 *
 * | engine             | events                                                    |
 * | ------------------ | --------------------------------------------------------- |
 * | answer()           | answered at t0 (next scheduler turn); remote-hangup +talk |
 * | reject("busy")     | ended `busy` at once: BUSY, DEFAULT_ERRORS.BUSY.message   |
 * | reject("rejected") | ended `rejected` at once: REJECTED, its default message   |
 * | hangUp()           | ended `local-hangup` at once                              |
 *
 * The remote party is the caller, behaving as the route matching the
 * caller's number says (its talk seconds, audio and digits; a withheld
 * caller takes the empty-prefix route or the default); its outcome, ring
 * seconds and error code do not apply. answer() and reject() throw on an
 * outgoing leg, on a leg that is not ringing, and once answer() was called.
 *
 * Audio (media.ts): each leg keeps a timeline — answer, end, what was
 * played or said to it, its bridges — and synthesizes samples only when a
 * capture stops or a recording ends, 8000 Hz PCM, deterministic per call
 * id. `capture()` returns the leg's audio from its start to stop() or the
 * leg's end (two channels when bridged meanwhile; see AudioCapture).
 *
 * fork (the Stream action, fork.ts) renders the remote party's audio frame
 * by frame as call time passes and plays the samples it is given into the
 * leg's timeline, a frame at a time; frames are whole, at fixed boundaries
 * from the fork's start (src/media/frame-clock.ts), however late a timer.
 *
 * recordCaller (the Record action) records the remote party (one channel)
 * from now until the first of, at equal times in this order:
 * - the leg ending (`hangup`, audio up to the end; at once with no audio
 *   on a leg that is not answered);
 * - `maxSeconds` (`max-duration`; ≤ 0 ends it on the next scheduler turn);
 * - `silenceTimeoutSeconds` of remote silence (`silence`): a SILENCE party
 *   at start + silenceTimeoutSeconds (when before maxSeconds); a SPEECH
 *   party never pauses 1 s, so never; ≤ 0 disables it;
 * - the stop key (`stop-key`, audio up to the key press): with a non-empty
 *   `stopKey` the remote party presses its remaining route keys one every
 *   `digitIntervalSeconds`, consuming them (others than the stop key are
 *   dropped); with an empty `stopKey` it presses none.
 * One recording (and one digit collection) at a time per leg; a second
 * call rejects. Keys go to whichever of the two takes them first.
 */

import type { SpeechEngine } from "../../media/speech/engine.js";
import type {
  AnsweredMedia,
  AudioCapture,
  CallEnd,
  Carrier,
  CarrierCallRequest,
  CarrierEvents,
  CarrierLeg,
  CollectDigitsOptions,
  EndCause,
  ForkEvents,
  ForkOptions,
  IncomingCallRequest,
  MediaResult,
  PlayRequest,
  RecordCallerOptions,
  RecordCallerResult,
  RemoteAudio,
} from "../carrier.js";
import type { Scheduler, Timer } from "../scheduler.js";
import { SimulatorFork } from "./fork.js";
import { LegMedia, SAMPLE_RATE, speechSeconds } from "./media.js";
import { DEFAULT_ERRORS, type Outcome, type Route, type RouteSource } from "./routes.js";

export interface SimulatorOptions {
  /** Seconds from placing a call to ringing (or busy / failed). Default 0.1. */
  setupSeconds?: number;
  /** Seconds between the keys the remote party presses. Default 0.5. */
  digitIntervalSeconds?: number;
  /** What `say` speaks with; absent: speech-like noise lasting speechSeconds(text). */
  speech?: SpeechEngine;
}

export const DEFAULT_SETUP_SECONDS = 0.1;
export const DEFAULT_DIGIT_INTERVAL_SECONDS = 0.5;

export { speechSeconds } from "./media.js";

function errorFor(route: Route, outcome: Exclude<Outcome, "ANSWER">, cause: EndCause): CallEnd {
  // A route's own code is for its own outcome; a timeout of an ANSWER or
  // REJECT route is NO_ANSWER's.
  const own = route.outcome === outcome;
  const fallback = DEFAULT_ERRORS[outcome];
  return {
    cause,
    errorCode: own && route.errorCode !== "" ? route.errorCode : fallback.code,
    errorMessage: own && route.errorMessage !== "" ? route.errorMessage : fallback.message,
  };
}

export class SimulatorCarrier implements Carrier {
  readonly setupSeconds: number;
  readonly digitIntervalSeconds: number;
  readonly speech: SpeechEngine | undefined;

  constructor(
    private readonly routes: RouteSource,
    readonly scheduler: Scheduler,
    options: SimulatorOptions = {},
  ) {
    this.setupSeconds = options.setupSeconds ?? DEFAULT_SETUP_SECONDS;
    this.digitIntervalSeconds = options.digitIntervalSeconds ?? DEFAULT_DIGIT_INTERVAL_SECONDS;
    this.speech = options.speech;
  }

  /** Looks up the route, arms the call's timers, and returns its leg. Rejects when routes cannot be read. */
  async placeCall(request: CarrierCallRequest, events: CarrierEvents): Promise<CarrierLeg> {
    const route = await this.routes.resolve(request.to);
    const leg = new SimulatorLeg(this, request, route, events);
    leg.start();
    return leg;
  }

  /**
   * Takes an incoming call: resolves with its leg ringing, waiting for the
   * engine; the caller's route decides how the caller behaves once answered.
   * Rejects when routes cannot be read.
   */
  async receiveCall(request: IncomingCallRequest, events: CarrierEvents): Promise<CarrierLeg> {
    const route = await this.routes.resolve(request.from);
    const leg = new SimulatorLeg(this, { ...request, timeoutSeconds: 0 }, route, events, "incoming");
    leg.startIncoming();
    return leg;
  }
}

interface PendingMedia {
  timer: Timer | undefined;
  finish(): void;
}

/** One simulated call leg. */
export class SimulatorLeg implements CarrierLeg {
  readonly callId: string;
  state: CarrierLeg["state"] = "setup";
  remoteAudio: RemoteAudio | undefined;
  bridgedWith: SimulatorLeg | undefined;
  /** Keys the remote party has yet to press. */
  private keys: string;
  private readonly timers = new Set<Timer>();
  private readonly media = new Set<PendingMedia>();
  private collecting = false;
  private recording = false;
  /** Media forks (Stream) running on the leg. */
  private readonly forks = new Set<SimulatorFork>();
  /** answer() was called (the answer is on its way). */
  private answering = false;
  /** The leg's audio timeline. */
  readonly timeline: LegMedia;

  constructor(
    readonly carrier: SimulatorCarrier,
    readonly request: CarrierCallRequest,
    /** The route the call took (for the engine and, later, recordings). */
    readonly route: Route,
    private readonly events: CarrierEvents,
    /** outgoing: placeCall; incoming: receiveCall. */
    readonly direction: "outgoing" | "incoming" = "outgoing",
  ) {
    this.callId = request.callId;
    this.keys = route.digits;
    this.timeline = new LegMedia(request.callId, route.audio, route.words);
  }

  /** Call time in ms. */
  private nowMs(): number {
    return this.carrier.scheduler.now().getTime();
  }

  private after(seconds: number, fn: () => void): Timer {
    const timer = this.carrier.scheduler.after(seconds, () => {
      this.timers.delete(timer);
      if (this.state !== "ended") fn();
    });
    this.timers.add(timer);
    return timer;
  }

  /** Arms the setup and caller-timeout timers (placeCall). */
  start(): void {
    const route = this.route;
    this.after(this.request.timeoutSeconds, () => {
      if (this.state === "setup" || this.state === "ringing") {
        this.end(errorFor(route, "NO_ANSWER", "no-answer"));
      }
    });
    this.after(this.carrier.setupSeconds, () => {
      switch (route.outcome) {
        case "BUSY":
          this.end(errorFor(route, "BUSY", "busy"));
          return;
        case "FAIL":
          this.end(errorFor(route, "FAIL", "failed"));
          return;
        case "NO_ANSWER":
          this.ring();
          return;
        case "REJECT":
          this.ring();
          this.after(route.ringSeconds, () => this.end(errorFor(route, "REJECT", "rejected")));
          return;
        case "ANSWER":
          this.ring();
          this.after(route.ringSeconds, () => this.connect());
          return;
      }
    });
  }

  /** An incoming leg rings (without a `ringing` event: receiveCall returns it ringing). */
  startIncoming(): void {
    this.state = "ringing";
  }

  private checkIncomingRinging(what: string): void {
    if (this.direction !== "incoming") throw new Error(`cannot ${what} an outgoing call`);
    if (this.state !== "ringing") throw new Error(`cannot ${what} a call that is ${this.state}`);
    if (this.answering) throw new Error(`cannot ${what} a call already being answered`);
  }

  answer(): void {
    this.checkIncomingRinging("answer");
    this.answering = true;
    this.after(0, () => this.connect());
  }

  reject(cause: "busy" | "rejected"): void {
    this.checkIncomingRinging("reject");
    const error = DEFAULT_ERRORS[cause === "busy" ? "BUSY" : "REJECT"];
    this.end({ cause, errorCode: error.code, errorMessage: error.message });
  }

  private ring(): void {
    this.state = "ringing";
    this.events.ringing();
  }

  /** The remote party answered (outgoing) or we did (incoming): media flows. */
  private connect(): void {
    if (this.state === "ended") return;
    // The caller's timeout no longer applies.
    for (const t of this.timers) t.cancel();
    this.timers.clear();
    this.state = "answered";
    this.timeline.answer(this.nowMs());
    this.remoteAudio = this.route.audio === "SILENCE" ? "silence" : "speech";
    const media: AnsweredMedia = { remoteAudio: this.remoteAudio };
    this.events.answered(media);
    this.after(this.route.talkSeconds, () => this.end({ cause: "remote-hangup" }));
  }

  private end(end: CallEnd): void {
    if (this.state === "ended") return;
    this.state = "ended";
    this.timeline.end(this.nowMs());
    for (const t of this.timers) t.cancel();
    this.timers.clear();
    for (const m of [...this.media]) m.finish();
    this.media.clear();
    for (const f of [...this.forks]) f.legEnded(this.timeline.endedMs ?? this.nowMs());
    this.forks.clear();
    if (this.bridgedWith !== undefined) {
      this.bridgedWith.bridgedWith = undefined;
      this.bridgedWith = undefined;
    }
    this.events.ended(end);
  }

  hangUp(): void {
    this.end({ cause: "local-hangup" });
  }

  bridge(other: CarrierLeg): void {
    if (!(other instanceof SimulatorLeg) || other.carrier !== this.carrier) {
      throw new Error("can only bridge legs of the same simulator");
    }
    if (other === this) throw new Error("cannot bridge a leg with itself");
    if (this.state !== "answered" || other.state !== "answered") {
      throw new Error("both legs must be answered to be bridged");
    }
    for (const leg of [this, other]) {
      if (leg.bridgedWith !== undefined) leg.bridgedWith.bridgedWith = undefined;
    }
    this.timeline.bridge(other.timeline, this.nowMs());
    this.bridgedWith = other;
    other.bridgedWith = this;
  }

  /** Runs a media operation lasting `seconds`; `completed: false` when the leg ends first. */
  private timed(seconds: number): Promise<MediaResult> {
    if (this.state !== "answered") return Promise.resolve({ completed: false });
    return new Promise((resolve) => {
      const pending: PendingMedia = {
        timer: undefined,
        finish: () => resolve({ completed: false }),
      };
      pending.timer = this.after(seconds, () => {
        this.media.delete(pending);
        resolve({ completed: true });
      });
      this.media.add(pending);
    });
  }

  play(audio: PlayRequest): Promise<MediaResult> {
    const seconds = Math.max(0, audio.durationSeconds);
    if (this.state === "answered") this.timeline.play(this.nowMs(), audio.uri, seconds, audio.samples);
    return this.timed(seconds);
  }

  async say(text: string, options: { language?: string; voice?: string } = {}): Promise<MediaResult> {
    const speech = this.carrier.speech;
    if (speech === undefined) {
      const seconds = speechSeconds(text);
      if (this.state === "answered") this.timeline.say(this.nowMs(), seconds, text);
      return this.timed(seconds);
    }
    if (this.state !== "answered") return { completed: false };
    const samples = await speech.synthesize(text, options);
    if (this.state !== "answered") return { completed: false };
    const seconds = samples.length / SAMPLE_RATE;
    this.timeline.say(this.nowMs(), seconds, text, samples);
    return this.timed(seconds);
  }

  capture(): AudioCapture {
    return this.timeline.capture(this.nowMs(), () => this.nowMs());
  }

  fork(options: ForkOptions, events: ForkEvents): SimulatorFork {
    if (this.state !== "answered") throw new Error(`cannot fork the media of a call that is ${this.state}`);
    const fork: SimulatorFork = new SimulatorFork(
      {
        timeline: this.timeline,
        nowMs: () => this.nowMs(),
        after: (seconds, fn) => this.after(seconds, fn),
        timeScale: this.carrier.scheduler.timeScale,
        release: (f) => this.forks.delete(f),
      },
      options.frameSeconds,
      events,
    );
    this.forks.add(fork);
    return fork;
  }

  recordCaller(options: RecordCallerOptions): Promise<RecordCallerResult> {
    const startMs = this.nowMs();
    if (this.state !== "answered") {
      return Promise.resolve({ endedBy: "hangup", audio: this.timeline.renderRemote(startMs, startMs) });
    }
    if (this.recording) return Promise.reject(new Error("a recording is already in progress"));
    this.recording = true;
    return new Promise((resolve) => {
      let keyTimer: Timer | undefined;
      const done = (endedBy: RecordCallerResult["endedBy"]) => {
        deadline.cancel();
        keyTimer?.cancel();
        this.media.delete(pending);
        this.recording = false;
        const endMs = Math.max(startMs, this.timeline.clipToEnd(this.nowMs()));
        resolve({ endedBy, audio: this.timeline.renderRemote(startMs, endMs) });
      };
      const pending: PendingMedia = { timer: undefined, finish: () => done("hangup") };
      const max = Math.max(0, options.maxSeconds);
      const silent = this.remoteAudio === "silence" && options.silenceTimeoutSeconds > 0;
      const bySilence = silent && options.silenceTimeoutSeconds < max;
      const deadline = this.after(bySilence ? options.silenceTimeoutSeconds : max, () =>
        done(bySilence ? "silence" : "max-duration"),
      );
      const press = () => {
        if (this.keys === "") return;
        keyTimer = this.after(this.carrier.digitIntervalSeconds, () => {
          const key = this.keys[0]!;
          this.keys = this.keys.slice(1);
          if (key === options.stopKey) return done("stop-key");
          press();
        });
      };
      this.media.add(pending);
      if (options.stopKey !== "") press();
    });
  }

  collectDigits(options: CollectDigitsOptions): Promise<string> {
    if (this.state !== "answered") return Promise.resolve("");
    if (this.collecting) return Promise.reject(new Error("a digit collection is already in progress"));
    this.collecting = true;
    return new Promise((resolve) => {
      let collected = "";
      const pending: PendingMedia = { timer: undefined, finish: () => done() };
      const done = () => {
        pending.timer?.cancel();
        this.media.delete(pending);
        this.collecting = false;
        resolve(collected);
      };
      const next = () => {
        if (this.keys === "") {
          pending.timer = this.after(options.timeoutSeconds, done);
          return;
        }
        pending.timer = this.after(this.carrier.digitIntervalSeconds, () => {
          const key = this.keys[0]!;
          this.keys = this.keys.slice(1);
          if (options.finishOnKey !== "" && key === options.finishOnKey) return done();
          collected += key;
          if (options.numDigits > 0 && collected.length >= options.numDigits) return done();
          next();
        });
      };
      this.media.add(pending);
      next();
    });
  }
}
