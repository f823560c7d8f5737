/**
 * One call the engine drives: its row as last written, its carrier leg, its
 * child calls, its call recordings, and the rules of its life — transitions
 * written strictly in order (one promise chain per call), the terminal state
 * decided once (synchronously, `terminal`), price and answer_duration set at
 * the end, children and recordings stopped with it.
 *
 * Roles:
 * - `outgoing`: a call created through the API (QUEUED → STARTING → RINGING
 *   → IN_PROGRESS); call control starts when it is answered;
 * - `incoming`: a call the network delivered (created RINGING); call
 *   control starts at once and the leg is answered only when an action
 *   needs media (`ensureAnswered`), so `<Reject>` can still refuse it;
 * - `trunk`: an incoming SIP call of a PSTN_TRUNK domain: forwarded to the
 *   dialled number (a child call) and answered when that answers;
 * - `child`: a leg created by its parent (`<Call>`, forwarding): placed like
 *   an outgoing call, it runs no markup; its parent bridges it.
 */
import type { CallRow, CallStateValue } from "../../db/schema/index.js";
import { observeCallState } from "../../observability/calls.js";
import type { CallEnd, CarrierEvents, CarrierLeg } from "../../telephony/carrier.js";
import type { CallRecorder } from "./call-recording.js";
import { callName } from "./domain.js";
import type { CallEngine } from "./engine.js";
import { priceOf } from "./rates.js";

export type Patch = Partial<Omit<CallRow, "id" | "projectId">>;

export type CallRole = "outgoing" | "incoming" | "trunk" | "child";

/** How a call (or an attempt to connect one) ended. */
export interface Outcome {
  state: CallStateValue;
  errorCode: string;
  errorMessage: string;
}

export const CARRIER_END: Record<CallEnd["cause"], CallStateValue> = {
  busy: "BUSY",
  rejected: "REJECTED",
  "no-answer": "NOT_ANSWERED",
  failed: "FAILED",
  "remote-hangup": "COMPLETED",
  "local-hangup": "COMPLETED",
};

/** A promise with its resolve function. */
export class Deferred<T> {
  readonly promise: Promise<T>;
  resolve!: (value: T) => void;
  constructor() {
    this.promise = new Promise<T>((resolve) => {
      this.resolve = resolve;
    });
  }
}

export interface FinishOptions {
  /** Refuse a ringing incoming leg this way instead of hanging up (busy: SIP 486, rejected: 603). */
  reject?: "busy" | "rejected";
}

export class ActiveCall {
  row: CallRow;
  leg: CarrierLeg | undefined;
  /** Set (synchronously) once the call's end is decided. */
  terminal = false;
  /** Children in flight (`<Call>`, forwarding): ended with this call. */
  readonly children = new Set<ActiveCall>();
  /** Resolves true when the leg is answered, false when the call ends unanswered. */
  readonly answered = new Deferred<boolean>();
  /** Resolves when the call's end is decided. */
  readonly ended = new Deferred<void>();
  /** Call recordings of this call (parents only). */
  recorder: CallRecorder | undefined;
  /**
   * Request parameters set by media streams (`<Stream>`), merged into the
   * next VoiceML request's parameters and then cleared.
   */
  streamParameters: Record<string, string> = {};
  private chain: Promise<void> = Promise.resolve();

  constructor(
    readonly engine: CallEngine,
    row: CallRow,
    readonly role: CallRole,
    /** The call that created this one (children only). */
    readonly parent?: ActiveCall,
  ) {
    this.row = row;
  }

  get log() {
    return this.engine.options.log;
  }

  get now(): Date {
    return this.engine.options.scheduler.now();
  }

  get name(): string {
    return callName(this.row);
  }

  /** Queues a write; writes are made in the order they are queued. A patch with `state` sends a state update. */
  persist(patch: Patch): Promise<void> {
    this.row = { ...this.row, ...patch };
    const snapshot = this.row;
    observeCallState(this.log, snapshot, patch);
    const next = this.chain.then(() => this.engine.write(snapshot, patch));
    this.chain = next.catch((err) => this.log.error({ err, call: callName(snapshot) }, "call write failed"));
    return this.chain;
  }

  /**
   * Holds back the writes queued after this call until `work` settles
   * (whatever its outcome): a recording's row is written before the state
   * that announces it.
   */
  holdWritesFor(work: Promise<unknown>): void {
    this.chain = this.chain.then(() => work.then(noop, noop));
  }

  transition(state: CallStateValue, patch: Patch = {}): Promise<void> {
    if (this.terminal) return this.chain;
    return this.persist({ ...patch, state });
  }

  /**
   * Ends the call once: stops its recordings, ends its children, hangs up
   * (or refuses) its leg, and records the terminal state with end_time,
   * answer_duration and price (from the rate table, by `to`).
   */
  finish(
    state: CallStateValue,
    errorCode = "",
    errorMessage = "",
    options: FinishOptions = {},
  ): Promise<void> {
    if (this.terminal) return this.chain;
    this.terminal = true;
    const endTime = this.now;
    this.recorder?.stopAll();
    for (const child of [...this.children]) {
      child.cancel("CANCELLED", "The parent call ended first");
    }
    const leg = this.leg;
    // The network ended the leg first (the remote party hung up, was busy,
    // ...) or we end it now (hang up, cancel, refuse).
    const endedBy = leg === undefined ? null : leg.state === "ended" ? "REMOTE" : "LOCAL";
    if (leg !== undefined && leg.state !== "ended") {
      if (options.reject !== undefined && leg.state === "ringing" && this.row.direction === "INCOMING") {
        leg.reject(options.reject);
      } else {
        leg.hangUp();
      }
    }
    this.parent?.children.delete(this);
    this.answered.resolve(false);
    this.ended.resolve();
    const answerMs = this.row.answerTime === null ? null : endTime.getTime() - this.row.answerTime.getTime();
    const price = priceOf(this.engine.options.rates, this.row.to, answerMs ?? 0);
    const done = this.persist({
      state,
      errorCode,
      errorMessage: errorMessage.slice(0, 1000),
      endTime,
      endedBy,
      answerDurationMs: answerMs,
      priceCurrency: price.currency,
      priceUnits: price.units,
      priceNanos: price.nanos,
    });
    return done.finally(() => this.engine.forget(this));
  }

  /** Ends a child we no longer want: COMPLETED when it was answered, NOT_ANSWERED with `code` otherwise. */
  cancel(code: string, message: string): Promise<void> {
    if (this.row.answerTime !== null) return this.finish("COMPLETED");
    return this.finish("NOT_ANSWERED", code, message);
  }

  /** Ends a call that was never connected to anything with `outcome`, refusing a ringing caller accordingly. */
  endWith(outcome: Outcome): Promise<void> {
    const reject = outcome.state === "BUSY" ? "busy" : outcome.state === "REJECTED" ? "rejected" : undefined;
    return this.finish(
      outcome.state,
      outcome.errorCode,
      outcome.errorMessage,
      reject === undefined ? {} : { reject },
    );
  }

  fail(err: unknown): Promise<void> {
    this.log.error({ err, call: this.name }, "call failed with an internal error");
    return this.finish("FAILED", "INTERNAL_ERROR", "The service failed while handling the call");
  }

  /**
   * Answers a ringing incoming leg if needed; true once answered, false when
   * the call ended first. Outgoing legs are answered by the remote party.
   */
  ensureAnswered(): Promise<boolean> {
    if (this.terminal || this.leg === undefined) return Promise.resolve(false);
    if (this.leg.state === "answered") return Promise.resolve(true);
    if (this.leg.state === "ringing" && this.row.direction === "INCOMING") this.leg.answer();
    return this.answered.promise;
  }

  /** The carrier events of this call's leg. `onAnswer` runs after the IN_PROGRESS transition is queued. */
  events(onAnswer: () => void = () => {}): CarrierEvents {
    return {
      ringing: () => {
        void this.transition("RINGING", { ringTime: this.now });
      },
      answered: () => {
        if (this.terminal) return;
        // Recordings first: a client that sees IN_PROGRESS (read or state update) finds their rows.
        this.recorder?.onAnswer();
        void this.transition("IN_PROGRESS", { answerTime: this.now });
        this.answered.resolve(true);
        onAnswer();
      },
      ended: (end) => {
        void this.finish(CARRIER_END[end.cause], end.errorCode ?? "", end.errorMessage ?? "");
      },
    };
  }
}

function noop(): void {}
