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
 * timeout; keys left over go to the next collectDigits. `say` lasts
 * speechSeconds(text); `play` lasts the duration it is given.
 *
 * An incoming call (acceptCall) is answered at once (0 s on the scheduler,
 * after acceptCall resolved); the remote party is the caller, behaving as
 * the route matching the caller's number says (its talk seconds, audio and
 * digits; a withheld caller takes the empty-prefix route or the default).
 */
import type {
  AnsweredMedia,
  CallEnd,
  Carrier,
  CarrierCallRequest,
  CarrierEvents,
  CarrierLeg,
  CollectDigitsOptions,
  EndCause,
  IncomingCallRequest,
  MediaResult,
  RemoteAudio,
} from "../carrier.js";
import type { Scheduler, Timer } from "../scheduler.js";
import { DEFAULT_ERRORS, type Outcome, type Route, type RouteSource } from "./routes.js";

export interface SimulatorOptions {
  /** Seconds from placing a call to ringing (or busy / failed). Default 0.1. */
  setupSeconds?: number;
  /** Seconds between the keys the remote party presses. Default 0.5. */
  digitIntervalSeconds?: number;
}

export const DEFAULT_SETUP_SECONDS = 0.1;
export const DEFAULT_DIGIT_INTERVAL_SECONDS = 0.5;

/** How long speaking `text` takes: 0.4 s a word, at least 0.5 s. */
export function speechSeconds(text: string): number {
  const words = text.trim() === "" ? 0 : text.trim().split(/\s+/).length;
  return Math.max(0.5, words * 0.4);
}

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

  constructor(
    private readonly routes: RouteSource,
    readonly scheduler: Scheduler,
    options: SimulatorOptions = {},
  ) {
    this.setupSeconds = options.setupSeconds ?? DEFAULT_SETUP_SECONDS;
    this.digitIntervalSeconds = options.digitIntervalSeconds ?? DEFAULT_DIGIT_INTERVAL_SECONDS;
  }

  /** Looks up the route, arms the call's timers, and returns its leg. Rejects when routes cannot be read. */
  async placeCall(request: CarrierCallRequest, events: CarrierEvents): Promise<CarrierLeg> {
    const route = await this.routes.resolve(request.to);
    const leg = new SimulatorLeg(this, request, route, events);
    leg.start();
    return leg;
  }

  /** Answers an incoming call; the caller's route decides how the caller behaves. */
  async acceptCall(request: IncomingCallRequest, events: CarrierEvents): Promise<CarrierLeg> {
    const route = await this.routes.resolve(request.from);
    const leg = new SimulatorLeg(this, { ...request, timeoutSeconds: 0 }, route, events);
    leg.startAnswered();
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

  constructor(
    readonly carrier: SimulatorCarrier,
    readonly request: CarrierCallRequest,
    /** The route the call took (for the engine and, later, recordings). */
    readonly route: Route,
    private readonly events: CarrierEvents,
  ) {
    this.callId = request.callId;
    this.keys = route.digits;
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
          this.after(route.ringSeconds, () => this.answer());
          return;
      }
    });
  }

  /** Answers an incoming leg on the next scheduler turn (acceptCall). */
  startAnswered(): void {
    this.after(0, () => this.answer());
  }

  private ring(): void {
    this.state = "ringing";
    this.events.ringing();
  }

  private answer(): void {
    if (this.state === "ended") return;
    // The caller's timeout no longer applies.
    for (const t of this.timers) t.cancel();
    this.timers.clear();
    this.state = "answered";
    this.remoteAudio = this.route.audio === "SILENCE" ? "silence" : "speech";
    const media: AnsweredMedia = { remoteAudio: this.remoteAudio };
    this.events.answered(media);
    this.after(this.route.talkSeconds, () => this.end({ cause: "remote-hangup" }));
  }

  private end(end: CallEnd): void {
    if (this.state === "ended") return;
    this.state = "ended";
    for (const t of this.timers) t.cancel();
    this.timers.clear();
    for (const m of [...this.media]) m.finish();
    this.media.clear();
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

  play(audio: { uri: string; durationSeconds: number }): Promise<MediaResult> {
    return this.timed(Math.max(0, audio.durationSeconds));
  }

  say(text: string, _options?: { language?: string; voice?: string }): Promise<MediaResult> {
    return this.timed(speechSeconds(text));
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
