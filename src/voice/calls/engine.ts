/**
 * The call engine: drives a created call over the Carrier and runs its
 * call-control markup.
 *
 * Outgoing call (after the create transaction committed):
 *   QUEUED → STARTING (start_time, the carrier is asked) → RINGING (ring_time)
 *   → IN_PROGRESS (answer_time) → COMPLETED (end_time, answer_duration),
 *   or BUSY / REJECTED / NOT_ANSWERED / FAILED with the carrier's error_code
 *   and error_message (simulator defaults: BUSY, REJECTED, NO_ANSWER,
 *   CARRIER_ERROR, or the route's own code).
 * Every transition is one transaction: the row is updated (only while the
 * call is not terminal) and a CALL_STATE_UPDATE webhook (body: the Call as
 * proto3 JSON) is enqueued to options.state_update_uri, ordering key = the
 * call's name; then the webhook worker is kicked. Transitions of one call
 * are written strictly in order (one promise chain per call).
 *
 * Call control, on answer: a CallRequest (event CALL, body {call,
 * parameters}) is POSTed with signedPost to handler_uris, falling through on
 * failure; the response is parsed with parseVoiceMl and its actions run:
 * - Say / Play / Wait on the carrier leg (Play lasts PLAY_SECONDS: audio is
 *   not fetched yet; Wait plays silence for its seconds);
 * - Input: its prompts are played, then digits are collected; with a NextUri
 *   the URI (resolved against the document's URL) is requested with
 *   parameters {digits}; without one the document goes on (digits dropped);
 * - Redirect: the URL (resolved against the document's URL) is requested and
 *   its document runs instead;
 * - Reject: the (already answered) call is hung up and ends COMPLETED;
 * - the end of a document: hang up, COMPLETED.
 * Error codes the engine sets (state FAILED):
 * - HANDLER_UNAVAILABLE: no handler URI answered 2xx;
 * - MARKUP_*: the document did not parse (parseVoiceMl's code and message);
 * - UNSUPPORTED_ACTION: Call, Record, RecordCall (not built yet), Label,
 *   Stream, ReceiveFax;
 * - INTERNAL_ERROR: anything unexpected (logged) — the engine never lets an
 *   error escape to the process;
 * - SERVICE_SHUTDOWN: the service stopped while the call was in flight
 *   (`stop()` hangs up every live call and records this).
 * The remote party hanging up ends the call COMPLETED. Price: at the end,
 * from the rate table (rates.ts) by `to`. Time comes only from the scheduler.
 *
 * Incoming call (incoming.ts created it RINGING, start_time = ring_time =
 * create_time): the engine answers it at once (Carrier.acceptCall) →
 * IN_PROGRESS (answer_time) and runs the same call control from its
 * handler_uris (the instance's incoming_call_handler_uris, copied when the
 * call was created). Incoming calls have no options, hence no
 * state_update_uri: no CALL_STATE_UPDATE webhooks are sent for them (the
 * contract has no field that would name a target).
 *
 * Bridged call (plan `bridge`: a PSTN_TRUNK domain's call, or an incoming
 * call whose first handler URI is tel:/sip: — forwarding): a leg to the
 * target is placed (timeout DEFAULT_TIMEOUT_SECONDS); once it
 * answers the caller's leg is answered and bridged with it → IN_PROGRESS,
 * `bridged` true. The PSTN leg failing (busy, no answer, ...) ends the call
 * with that state and error code; either side hanging up ends both legs,
 * COMPLETED. The PSTN leg is not a Call resource of its own (yet).
 */
import { and, eq, notInArray } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import { type CallRow, type CallStateValue, calls, projects } from "../../db/schema/index.js";
import { type DeliveryOptions, SignedPostError, signedPost } from "../../events/delivery.js";
import { enqueueWebhook } from "../../events/outbox.js";
import type { Logger } from "../../log.js";
import type { CallEnd, Carrier, CarrierEvents, CarrierLeg } from "../../telephony/carrier.js";
import { type Action, type PromptAction, parseVoiceMl, resolveUri } from "../../telephony/markup/index.js";
import type { Scheduler } from "../../telephony/scheduler.js";
import { type CallPlan, callName, DEFAULT_TIMEOUT_SECONDS } from "./domain.js";
import { callJson, callRequestJson } from "./proto.js";
import { type CallRates, priceOf } from "./rates.js";

export const TERMINAL_STATES: readonly CallStateValue[] = [
  "COMPLETED",
  "FAILED",
  "NOT_ANSWERED",
  "BUSY",
  "REJECTED",
];
/** How long a `<Play>` lasts until audio is fetched and measured. */
export const PLAY_SECONDS = 5;

export const EngineErrorCode = {
  HandlerUnavailable: "HANDLER_UNAVAILABLE",
  UnsupportedAction: "UNSUPPORTED_ACTION",
  InternalError: "INTERNAL_ERROR",
  ServiceShutdown: "SERVICE_SHUTDOWN",
} as const;

export interface CallEngineOptions {
  db: Db;
  carrier: Carrier;
  scheduler: Scheduler;
  log: Logger;
  rates: CallRates;
  /** Timeout and destination rules of call-control requests (the webhooks settings). */
  delivery: DeliveryOptions;
  /** Tells the webhook worker that events were enqueued. */
  kick?: () => void;
}

type Patch = Partial<Omit<CallRow, "id" | "projectId">>;

const CARRIER_END: Record<CallEnd["cause"], CallStateValue> = {
  busy: "BUSY",
  rejected: "REJECTED",
  "no-answer": "NOT_ANSWERED",
  failed: "FAILED",
  "remote-hangup": "COMPLETED",
  "local-hangup": "COMPLETED",
};

/** What a document's run leads to. */
type Next = { kind: "fetch"; uris: readonly string[]; parameters: Record<string, string> } | { kind: "end" };

class ActiveCall {
  row: CallRow;
  leg: CarrierLeg | undefined;
  /** The PSTN leg of a SIP trunk call, bridged with `leg`. */
  outbound: CarrierLeg | undefined;
  plan: CallPlan = { kind: "control" };
  /** Set (synchronously) once the call's end is decided. */
  terminal = false;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly engine: CallEngine,
    row: CallRow,
  ) {
    this.row = row;
  }

  get log() {
    return this.engine.options.log;
  }

  get now(): Date {
    return this.engine.options.scheduler.now();
  }

  /** Queues a transition; transitions are written in the order they are made. */
  private persist(patch: Patch): Promise<void> {
    this.row = { ...this.row, ...patch };
    const snapshot = this.row;
    const next = this.chain.then(() => this.engine.write(snapshot, patch));
    this.chain = next.catch((err) =>
      this.log.error({ err, call: callName(snapshot) }, "call state write failed"),
    );
    return this.chain;
  }

  transition(state: CallStateValue, patch: Patch = {}): Promise<void> {
    if (this.terminal) return this.chain;
    return this.persist({ ...patch, state });
  }

  /** Ends the call: hangs up the leg (if live) and records the terminal state once. */
  finish(state: CallStateValue, errorCode = "", errorMessage = ""): Promise<void> {
    if (this.terminal) return this.chain;
    this.terminal = true;
    const endTime = this.now;
    const answerMs = this.row.answerTime === null ? null : endTime.getTime() - this.row.answerTime.getTime();
    // A bridged call is priced by the leg it placed; others by `to`.
    const pricedTo = this.plan.kind === "bridge" ? this.plan.to : this.row.to;
    const price = priceOf(this.engine.options.rates, pricedTo, answerMs ?? 0);
    if (this.leg !== undefined && this.leg.state !== "ended") this.leg.hangUp();
    if (this.outbound !== undefined && this.outbound.state !== "ended") this.outbound.hangUp();
    const done = this.persist({
      state,
      errorCode,
      errorMessage: errorMessage.slice(0, 1000),
      endTime,
      answerDurationMs: answerMs,
      priceCurrency: price.currency,
      priceUnits: price.units,
      priceNanos: price.nanos,
    });
    return done.finally(() => this.engine.forget(this));
  }

  fail(err: unknown): Promise<void> {
    this.log.error({ err, call: callName(this.row) }, "call failed with an internal error");
    return this.finish("FAILED", EngineErrorCode.InternalError, "The service failed while handling the call");
  }

  /** The carrier events of the call's leg; the same markup runner for both directions. */
  private events(): CarrierEvents {
    return {
      ringing: () => {
        void this.transition("RINGING", { ringTime: this.now });
      },
      answered: () => {
        void this.transition("IN_PROGRESS", { answerTime: this.now });
        this.control().catch((err) => this.fail(err));
      },
      ended: (end) => {
        void this.finish(CARRIER_END[end.cause], end.errorCode ?? "", end.errorMessage ?? "");
      },
    };
  }

  /**
   * A bridged call (SIP trunk, forwarding): the outbound leg is placed first; the caller's leg is
   * answered once it answers, and the two are bridged. The PSTN leg not
   * connecting ends the call with its state and error (the caller is never
   * answered); either party hanging up ends both, COMPLETED.
   */
  private async bridgeCall(to: string, from: string): Promise<void> {
    const carrier = this.engine.options.carrier;
    this.outbound = await carrier.placeCall(
      { callId: `${this.row.id}-pstn`, to, from, timeoutSeconds: this.engine.trunkTimeoutSeconds },
      {
        ringing: () => {},
        answered: () => {
          this.acceptBridged().catch((err) => this.fail(err));
        },
        ended: (end) => {
          void this.finish(CARRIER_END[end.cause], end.errorCode ?? "", end.errorMessage ?? "");
        },
      },
    );
    if (this.terminal && this.outbound.state !== "ended") this.outbound.hangUp();
  }

  private async acceptBridged(): Promise<void> {
    if (this.terminal) return;
    this.leg = await this.engine.options.carrier.acceptCall(
      { callId: this.row.id, to: this.row.to, from: this.row.from },
      {
        ringing: () => {},
        answered: () => {
          const outbound = this.outbound;
          if (this.terminal || this.leg === undefined || outbound?.state !== "answered") return;
          this.leg.bridge(outbound);
          void this.transition("IN_PROGRESS", { answerTime: this.now, bridged: true });
        },
        ended: () => {
          void this.finish("COMPLETED");
        },
      },
    );
    if (this.terminal && this.leg.state !== "ended") this.leg.hangUp();
  }

  async run(): Promise<void> {
    if (this.plan.kind === "bridge") {
      await this.bridgeCall(this.plan.to, this.plan.from);
    } else if (this.row.direction === "INCOMING") {
      // Created RINGING (it rang at us); the engine answers it.
      this.leg = await this.engine.options.carrier.acceptCall(
        { callId: this.row.id, to: this.row.to, from: this.row.from },
        this.events(),
      );
    } else {
      await this.transition("STARTING", { startTime: this.now });
      if (this.terminal) return;
      this.leg = await this.engine.options.carrier.placeCall(
        {
          callId: this.row.id,
          to: this.row.to,
          from: this.row.from,
          timeoutSeconds: this.row.timeoutSeconds,
        },
        this.events(),
      );
    }
    if (this.terminal && this.leg !== undefined && this.leg.state !== "ended") this.leg.hangUp();
  }

  /** Runs call control until the call ends. */
  private async control(): Promise<void> {
    let next: Next = { kind: "fetch", uris: this.row.handlerUris, parameters: {} };
    while (next.kind === "fetch" && !this.terminal) {
      const document = await this.fetchMarkup(next.uris, next.parameters);
      if (document === undefined || this.terminal) return;
      const parsed = parseVoiceMl(document.body, document.contentType);
      if (!parsed.ok) {
        await this.finish("FAILED", parsed.errorCode, parsed.errorMessage);
        return;
      }
      next = await this.runActions(parsed.actions, document.uri);
    }
    if (!this.terminal) await this.finish("COMPLETED");
  }

  private async fetchMarkup(
    uris: readonly string[],
    parameters: Record<string, string>,
  ): Promise<{ uri: string; body: string; contentType: string | undefined } | undefined> {
    const signingKey = await this.engine.signingKey(this.row.projectId);
    try {
      const result = await signedPost(
        { signingKey, uris, eventType: "CALL", body: callRequestJson(this.row, parameters) },
        { now: () => this.now },
        this.engine.options.delivery,
      );
      return { uri: result.uri, body: result.body, contentType: result.contentType };
    } catch (err) {
      if (!(err instanceof SignedPostError)) throw err;
      await this.finish(
        "FAILED",
        EngineErrorCode.HandlerUnavailable,
        `No call handler answered: ${err.message}`,
      );
      return undefined;
    }
  }

  /** Plays a prompt; false when the leg ended first. */
  private async prompt(action: PromptAction, documentUri: string): Promise<boolean> {
    const leg = this.leg!;
    switch (action.kind) {
      case "say": {
        const options: { language?: string; voice?: string } = {};
        if (action.language !== undefined) options.language = action.language;
        if (action.voice !== undefined) options.voice = action.voice;
        return (await leg.say(action.text, options)).completed;
      }
      case "play":
        return (await leg.play({ uri: resolveUri(documentUri, action.url), durationSeconds: PLAY_SECONDS }))
          .completed;
      case "wait":
        return (await leg.play({ uri: "silence:", durationSeconds: action.seconds })).completed;
    }
  }

  private async runActions(actions: readonly Action[], documentUri: string): Promise<Next> {
    for (const action of actions) {
      if (this.terminal) return { kind: "end" };
      switch (action.kind) {
        case "say":
        case "play":
        case "wait":
          if (!(await this.prompt(action, documentUri))) return { kind: "end" };
          break;
        case "input": {
          for (const p of action.prompts) {
            if (!(await this.prompt(p, documentUri))) return { kind: "end" };
          }
          const digits = await this.leg!.collectDigits({
            numDigits: action.numDigits ?? 0,
            finishOnKey: action.finishOnKey ?? "",
            timeoutSeconds: action.timeoutSeconds,
          });
          if (this.terminal) return { kind: "end" };
          if (action.nextUri !== undefined) {
            return { kind: "fetch", uris: [resolveUri(documentUri, action.nextUri)], parameters: { digits } };
          }
          break;
        }
        case "redirect":
          return { kind: "fetch", uris: [resolveUri(documentUri, action.uri)], parameters: {} };
        case "reject":
          await this.finish("COMPLETED");
          return { kind: "end" };
        default: {
          const element =
            "unsupported" in action ? action.element : action.kind[0]!.toUpperCase() + action.kind.slice(1);
          await this.finish(
            "FAILED",
            EngineErrorCode.UnsupportedAction,
            `The markup action <${element}> is not supported`,
          );
          return { kind: "end" };
        }
      }
    }
    return { kind: "end" };
  }
}

export class CallEngine {
  private readonly active = new Map<string, ActiveCall>();
  private stopped = false;

  constructor(readonly options: CallEngineOptions) {}

  /** How long the PSTN leg of a SIP trunk call may ring. */
  readonly trunkTimeoutSeconds = DEFAULT_TIMEOUT_SECONDS;

  /** Starts driving a created call (QUEUED outgoing, RINGING incoming); never throws. */
  start(row: CallRow, plan: CallPlan = { kind: "control" }): void {
    if (this.stopped) {
      this.options.log.warn({ call: callName(row) }, "call created while the engine is stopped; left QUEUED");
      return;
    }
    // The create transaction may have enqueued the QUEUED state update.
    this.options.kick?.();
    const call = new ActiveCall(this, row);
    call.plan = plan;
    this.active.set(row.id, call);
    call.run().catch((err) => call.fail(err));
  }

  /** Calls in flight (tests, shutdown). */
  get activeCount(): number {
    return this.active.size;
  }

  forget(call: ActiveCall): void {
    if (this.active.get(call.row.id) === call) this.active.delete(call.row.id);
  }

  /** Hangs up every live call, recording FAILED SERVICE_SHUTDOWN; resolves once written. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(
      [...this.active.values()].map((c) =>
        c.finish("FAILED", EngineErrorCode.ServiceShutdown, "The service stopped during the call"),
      ),
    );
  }

  async signingKey(projectId: string): Promise<string> {
    const [row] = await this.options.db
      .select({ key: projects.signingKey })
      .from(projects)
      .where(eq(projects.id, projectId));
    if (row === undefined) throw new Error(`project ${projectId} not found`);
    return row.key;
  }

  /** One transition: the row (while not terminal) and its state update, in one transaction. */
  async write(row: CallRow, patch: Patch): Promise<void> {
    const now = this.options.scheduler.now();
    const written = await this.options.db.transaction(async (tx) => {
      const updated = await tx
        .update(calls)
        .set(patch)
        .where(and(eq(calls.id, row.id), notInArray(calls.state, [...TERMINAL_STATES])))
        .returning();
      const current = updated[0];
      if (current === undefined) return false;
      if (current.stateUpdateUri !== "") {
        await enqueueWebhook(tx, {
          projectId: current.projectId,
          eventType: "CALL_STATE_UPDATE",
          uris: [current.stateUpdateUri],
          body: callJson(current),
          orderingKey: callName(current),
          now,
        });
      }
      return true;
    });
    if (written) this.options.kick?.();
  }
}
