/**
 * The call engine: drives calls over the Carrier — outgoing API calls,
 * incoming calls, SIP trunk calls and the child legs they create — and
 * their call control (control.ts), child calls (dial.ts) and call
 * recordings (call-recording.ts). One ActiveCall (active-call.ts) per call.
 *
 * Outgoing call (after the create transaction committed):
 *   QUEUED → STARTING (start_time, the carrier is asked) → RINGING (ring_time)
 *   → IN_PROGRESS (answer_time) → COMPLETED (end_time, answer_duration),
 *   or BUSY / REJECTED / NOT_ANSWERED / FAILED with the carrier's error_code
 *   and error_message (simulator defaults: BUSY, REJECTED, NO_ANSWER,
 *   CARRIER_ERROR, or the route's own code). On answer, call control runs
 *   from handler_uris.
 * Incoming call (incoming.ts created it RINGING, start_time = ring_time =
 * create_time): the leg is taken ringing (Carrier.receiveCall) and call
 * control runs from its handler URIs at once; the leg is answered when an
 * action needs it (→ IN_PROGRESS, answer_time), so a `<Reject>` first ends
 * it REJECTED/BUSY and a forwarding answers it only when the target does.
 * Incoming calls have no options, hence no state_update_uri: no
 * CALL_STATE_UPDATE webhooks are sent for them.
 * Trunk call (a PSTN_TRUNK SIP domain's call): forwarded to the dialled
 * number as a child call; its failure ends the call with the child's state.
 * Child call: placed like an outgoing call (QUEUED → STARTING → ...), with
 * the parent's state_update_uri; see dial.ts.
 *
 * Every transition is one statement (one transaction, one round trip): the
 * row is updated (only while the call is not terminal) and, for a state
 * change, a CALL_STATE_UPDATE webhook (body: the Call as proto3 JSON) is
 * enqueued to state_update_uri, ordering key = the call's name: leased to
 * this process's webhook worker when it has room, which delivers it from
 * memory (writes.ts; src/events/worker.ts, EnqueueLease), otherwise free,
 * and the worker is kicked. A new call's QUEUED update likewise
 * (`leaseQueued`, CallsDomain's insert).
 * Errors never escape to the process: anything unexpected ends the call
 * FAILED INTERNAL_ERROR (logged); `stop()` ends every live call FAILED
 * SERVICE_SHUTDOWN and waits for recordings being processed. The remote
 * party hanging up ends the call COMPLETED. Price: at the end, from the
 * rate table (rates.ts) by `to`. Time comes only from the scheduler.
 *
 * Calls are driven by the process that created them; the calls of a
 * process that dies are ended by the others (liveness.ts). A write that
 * fails on the way (the connection, the server) is sent again until it
 * answers, so that no transition is lost to a short outage.
 */
import { and, inArray } from "drizzle-orm";
import { newResourceId } from "../../api/ids.js";
import type { Db } from "../../db/client.js";
import { type CallRow, type CallStateValue, calls } from "../../db/schema/index.js";
import { isTransientDatabaseError, retryWhileTransient } from "../../db/transient.js";
import type { DeliveryOptions } from "../../events/delivery.js";
import { enqueueWebhook, pendingEvent, type WebhookToEnqueue } from "../../events/outbox.js";
import type { ClaimedEvent } from "../../events/repository.js";
import type { EnqueueLease, WebhookWorker } from "../../events/worker.js";
import type { Logger } from "../../log.js";
import type { NumberDirectory } from "../../messaging/messages/incoming.js";
import { observeCallStarted } from "../../observability/calls.js";
import { callerIdsWithheldTotal } from "../../observability/metrics.js";
import type { RecordingsDomain } from "../../recordings/domain.js";
import type { Carrier } from "../../telephony/carrier.js";
import type { Scheduler } from "../../telephony/scheduler.js";
import { WorkHolder } from "../../work-holder.js";
import { StreamRegistry } from "../streams/registry.js";
import { ActiveCall, type CallRole, type Patch } from "./active-call.js";
import { CallRecorder } from "./call-recording.js";
import { ControlErrorCode, runHandlers } from "./control.js";
import { callerOf, type DialRequest, type DialTarget, dial, forwardRequest, type Presented } from "./dial.js";
import { type CallPlan, callName, type QueuedLease } from "./domain.js";
import { ENGINE_LOST, ENGINE_LOST_MESSAGE, EngineLiveness } from "./liveness.js";
import { PlayAudio } from "./play-audio.js";
import { callJson } from "./proto.js";
import type { CallRates } from "./rates.js";
import { type Enqueued, signingKeyOf, writeTransition } from "./writes.js";

export const TERMINAL_STATES: readonly CallStateValue[] = [
  "COMPLETED",
  "FAILED",
  "NOT_ANSWERED",
  "BUSY",
  "REJECTED",
];

export const EngineErrorCode = {
  ...ControlErrorCode,
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
  /** Where recordings of calls go (`<Record>`, `<RecordCall>`, configured call recording). */
  recordings: RecordingsDomain;
  /** Numbers of the projects (a `<Call>`'s CallerId must be one of the project's); parties only when absent. */
  numbers?: NumberDirectory;
  /** Tells the webhook worker that events were enqueued. */
  kick?: () => void;
  /**
   * This process's webhook worker, which takes a call's state updates
   * enqueued leased to it and delivers them from memory (worker.ts,
   * EnqueueLease); without one, they are enqueued free and `kick`ed.
   */
  webhookLeases?: Pick<WebhookWorker, "leaseForEnqueue">;
  /** Liveness heartbeat interval (ENGINE_HEARTBEAT_SECONDS); default 10. */
  heartbeatSeconds?: number;
  /**
   * Projects' webhook signing keys (default: read each time). The service
   * passes a memory of them that forgets a rotated key at once
   * (src/events/signing-keys.ts); the engine closes it when it stops.
   */
  signingKeys?: { get(projectId: string): Promise<string | undefined>; close?(): Promise<void> };
  /** How long a recording's end is tried again once the engine stops (ms; tests shorten it). */
  workRetryMs?: number;
}

export class CallEngine {
  private readonly active = new Map<string, ActiveCall>();
  private readonly background = new Set<Promise<unknown>>();
  private stopped = false;
  /** This engine's id in `call_engines` and on the calls it drives. */
  readonly id = `engine-${newResourceId()}`;
  readonly liveness: EngineLiveness;
  /** The recordings and transcriptions this engine is working on (src/work-holder.ts). */
  readonly holder: WorkHolder;
  /** Lengths of `<Play>` audio (fetched and measured, cached). */
  readonly playAudio: PlayAudio;
  /** The media streams open in this process (Streams.StreamCall), which `<Stream>` connects calls to. */
  readonly streams: StreamRegistry;

  constructor(readonly options: CallEngineOptions) {
    this.playAudio = new PlayAudio(options.delivery);
    this.streams = new StreamRegistry(options.scheduler);
    this.holder = new WorkHolder(this.id, options.workRetryMs);
    this.liveness = new EngineLiveness(this.id, {
      db: options.db,
      log: options.log,
      recordings: options.recordings,
      holder: this.holder,
      heartbeatSeconds: options.heartbeatSeconds ?? 10,
      callTime: () => options.scheduler.now(),
      onSwept: () => this.track(this.hangUpSwept()),
      ...(options.kick === undefined ? {} : { kick: options.kick }),
    });
  }

  /** Registers the engine, ends the calls of dead engines, and heartbeats from now on. */
  begin(): Promise<void> {
    return this.liveness.start();
  }

  /** This engine's id, once registered: what a call's insert stamps on it (liveness.ts). */
  async registeredId(): Promise<string> {
    await this.liveness.ready();
    return this.id;
  }

  /** A created call that will not be started (its create's outcome is unknown): ended soon (liveness.ts). */
  inDoubt(callId: string): void {
    this.liveness.inDoubt(callId);
  }

  /**
   * A lease for a new call's QUEUED state update (CallStarter.leaseQueued),
   * when this process's worker has room and the project's signing key is at
   * hand; undefined: the create enqueues it free.
   */
  async leaseQueued(row: CallRow): Promise<QueuedLease | undefined> {
    const lease = this.stopped ? undefined : this.options.webhookLeases?.leaseForEnqueue();
    if (lease === undefined) return undefined;
    const signingKey = await this.leaseKey(row);
    if (signingKey === undefined) {
      lease.release();
      return undefined;
    }
    const event = {
      id: newResourceId(),
      projectId: row.projectId,
      eventType: "CALL_STATE_UPDATE" as const,
      uris: [row.stateUpdateUri],
      body: callJson(row),
      orderingKey: callName(row),
      now: row.createTime,
    };
    return {
      id: event.id,
      body: event.body,
      owner: lease.owner,
      expiry: lease.expiry,
      release: () => lease.release(),
      lost: () => lease.lost(),
      take: (seq: number) => lease.take(leasedEvent(event, seq, lease, signingKey), false),
    };
  }

  /**
   * Starts driving a created call (QUEUED outgoing, RINGING incoming); never
   * throws. `queued`: its QUEUED state update was enqueued leased to the
   * worker (leaseQueued), which takes it now.
   */
  start(
    row: CallRow,
    plan: CallPlan = { kind: "control" },
    queued?: { lease: QueuedLease; seq: number },
  ): void {
    queued?.lease.take(queued.seq);
    if (this.stopped) {
      this.options.log.warn(
        { call: callName(row) },
        "call created while the engine is stopped; left as it is",
      );
      return;
    }
    // The create transaction may have enqueued the QUEUED state update free.
    if (queued === undefined) this.options.kick?.();
    const role: CallRole =
      row.direction === "OUTGOING" ? "outgoing" : plan.kind === "bridge" ? "trunk" : "incoming";
    const call = this.adopt(row, role);
    observeCallStarted(this.options.log, row);
    this.run(call, plan).catch((err) => call.fail(err));
  }

  private adopt(row: CallRow, role: CallRole, parent?: ActiveCall): ActiveCall {
    const call = new ActiveCall(this, row, role, parent);
    if (role !== "child") {
      call.recorder = new CallRecorder(call);
      if (row.recording !== null) call.recorder.arm(row.recording, "configuration");
    }
    this.active.set(row.id, call);
    return call;
  }

  private async run(call: ActiveCall, plan: CallPlan): Promise<void> {
    const carrier = this.options.carrier;
    // The call's insert named the engine driving it (liveness.ts).
    const row = call.row;
    switch (call.role) {
      case "outgoing":
      case "child": {
        await call.transition("STARTING", { startTime: call.now });
        if (call.terminal) return;
        const onAnswer = () => {
          if (call.role === "outgoing")
            runHandlers(call, call.row.handlerUris, { callerId: "" }).catch((err) => call.fail(err));
        };
        call.leg = await carrier.placeCall(
          { callId: row.id, to: row.to, from: row.from, timeoutSeconds: row.timeoutSeconds },
          call.events(onAnswer),
        );
        break;
      }
      case "incoming":
      case "trunk": {
        call.leg = await carrier.receiveCall(
          {
            callId: row.id,
            to: row.to,
            from: row.from,
            ...(row.sipCallId === null ? {} : { sipCallId: row.sipCallId }),
          },
          call.events(),
        );
        if (call.terminal) break;
        if (plan.kind === "bridge") {
          const callerId = await this.checkedCallerNumber(row, plan.from);
          const result = await dial(call, { ...forwardRequest(`tel:${plan.to}`, { callerId }) });
          if (!call.terminal)
            await (result.bridged ? call.finish("COMPLETED") : call.endWith(result.outcome));
        } else {
          // Forwarding presents the caller (presentedCaller).
          await runHandlers(call, row.handlerUris, await this.presentedCaller(row));
        }
        break;
      }
    }
    if (call.terminal && call.leg !== undefined && call.leg.state !== "ended") call.leg.hangUp();
  }

  /** Creates a child call of `parent` to `target` (QUEUED, its state update in the same transaction) and places it. */
  async startChild(
    parent: ActiveCall,
    target: DialTarget,
    request: Pick<DialRequest, "callerId" | "sipCallerId" | "timeoutSeconds">,
  ): Promise<ActiveCall> {
    const now = this.options.scheduler.now();
    const p = parent.row;
    const row = await this.options.db.transaction(async (tx) => {
      const [inserted] = (await tx
        .insert(calls)
        .values({
          id: newResourceId(),
          projectId: p.projectId,
          to: target.to,
          from:
            target.transport === "SIP" && request.sipCallerId !== undefined
              ? request.sipCallerId
              : request.callerId,
          labels: {},
          state: "QUEUED",
          direction: "OUTGOING",
          transport: target.transport,
          createMethod: "PARENT_CALL",
          handlerUris: [],
          stateUpdateUri: p.stateUpdateUri,
          timeoutSeconds: request.timeoutSeconds,
          originatingCallId: p.id,
          parentCallId: p.id,
          engineId: this.id,
          createTime: now,
        })
        .returning()) as [CallRow];
      if (inserted.stateUpdateUri !== "") {
        await enqueueWebhook(tx, {
          projectId: inserted.projectId,
          eventType: "CALL_STATE_UPDATE",
          uris: [inserted.stateUpdateUri],
          body: callJson(inserted),
          orderingKey: callName(inserted),
          now,
        });
      }
      return inserted;
    });
    this.options.kick?.();
    const child = this.adopt(row, "child", parent);
    observeCallStarted(this.options.log, row);
    if (parent.terminal || this.stopped) {
      await child.cancel("CANCELLED", "The parent call ended first");
      return child;
    }
    parent.children.add(child);
    this.run(child, { kind: "control" }).catch((err) => child.fail(err));
    return child;
  }

  /** Whether `row`'s call may present `callerId` to a `<Call>` endpoint. */
  async mayPresent(row: CallRow, callerId: string): Promise<boolean> {
    if (callerId === row.from || callerId === row.to) return true;
    return this.holds(row.projectId, callerId);
  }

  /**
   * The caller `row`'s child legs present (dial.ts callerOf), its number
   * checked when the call came from a SIP endpoint (checkedCallerNumber).
   * SIP endpoints still get the caller's user at the called domain.
   */
  async presentedCaller(row: CallRow): Promise<Presented> {
    const caller = callerOf(row);
    if (row.transport !== "SIP" || row.direction !== "INCOMING") return caller;
    return { ...caller, callerId: await this.checkedCallerNumber(row, caller.callerId) };
  }

  /**
   * `number`, the caller number a SIP endpoint's call (`row`) claims (its
   * From user part), when it is a number of an ACTIVE instance of the
   * call's project; "" (withheld) otherwise. An endpoint's From is only its
   * own claim: presented to the PSTN unchecked, any endpoint could show any
   * number (the rule an explicit CallerId already follows, mayPresent).
   */
  async checkedCallerNumber(row: CallRow, number: string): Promise<string> {
    if (number === "" || (await this.holds(row.projectId, number))) return number;
    this.options.log.info(
      { call: callName(row), callerId: number },
      "caller ID withheld: the SIP caller's number is not one of its project's",
    );
    callerIdsWithheldTotal.inc();
    return "";
  }

  /** Whether `number` is the number of an ACTIVE phone number instance of project `projectId`. */
  private async holds(projectId: string, number: string): Promise<boolean> {
    const owner = await this.options.numbers?.findByNumber(number);
    return owner !== undefined && owner.projectId === projectId && owner.lifecycleState === "ACTIVE";
  }

  /**
   * Hangs up the calls this engine drives whose rows another engine's sweep
   * ended (it took this one for dead): the network legs go, the rows keep
   * what the sweep wrote (a write to an ended call changes nothing).
   */
  private async hangUpSwept(): Promise<void> {
    const ids = [...this.active.keys()];
    if (ids.length === 0) return;
    const ended = await this.options.db
      .select({ id: calls.id })
      .from(calls)
      .where(and(inArray(calls.id, ids), inArray(calls.state, [...TERMINAL_STATES])));
    for (const { id } of ended) {
      void this.active.get(id)?.finish("FAILED", ENGINE_LOST, ENGINE_LOST_MESSAGE);
    }
  }

  /** Keeps background work (recording processing) for `stop()` to wait for; its failure is logged. */
  track(work: Promise<unknown>): void {
    const p = work.catch((err) => this.options.log.error({ err }, "call engine background work failed"));
    this.background.add(p);
    void p.finally(() => this.background.delete(p));
  }

  /** Calls in flight (tests, shutdown). */
  get activeCount(): number {
    return this.active.size;
  }

  /** Resolves once no call is in flight and no recording is being processed (tests). */
  async idle(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background]);
  }

  forget(call: ActiveCall): void {
    if (this.active.get(call.row.id) === call) this.active.delete(call.row.id);
  }

  /** Hangs up every live call, recording FAILED SERVICE_SHUTDOWN; resolves once written and recordings processed. */
  async stop(): Promise<void> {
    this.stopped = true;
    // From now on a recording's end is tried again for a bounded time: the stop waits for it.
    this.holder.stop();
    // Children first: a parent ending would otherwise cancel them (CANCELLED).
    const live = [...this.active.values()].sort(
      (a, b) => Number(b.role === "child") - Number(a.role === "child"),
    );
    await Promise.all(
      live.map((c) =>
        c.finish("FAILED", EngineErrorCode.ServiceShutdown, "The service stopped during the call"),
      ),
    );
    await this.idle();
    await this.liveness.stop();
    await this.options.signingKeys?.close?.();
  }

  async signingKey(projectId: string): Promise<string> {
    const key = await (this.options.signingKeys?.get(projectId) ?? signingKeyOf(this.options.db, projectId));
    if (key === undefined) throw new Error(`project ${projectId} not found`);
    return key;
  }

  /**
   * One write: the row (while not terminal) and, for a state change, its
   * state update, in one statement (so one transaction). The update's body
   * is `row`, the call as it is after the write: the engine is the only
   * writer of a call it drives (liveness.ts ends only calls of dead
   * engines and calls never started, and then this write changes nothing).
   * A write that failed transiently is sent again, the same (writes.ts
   * makes a repeat harmless), with a growing wait, until it answers or the
   * engine stops; the call's later writes wait for it (they are queued).
   */
  async write(row: CallRow, patch: Patch): Promise<void> {
    const enqueue = patch.state !== undefined && row.stateUpdateUri !== "";
    const event: (WebhookToEnqueue & { id: string }) | undefined = enqueue
      ? {
          id: newResourceId(),
          projectId: row.projectId,
          eventType: "CALL_STATE_UPDATE",
          uris: [row.stateUpdateUri],
          body: callJson(row),
          orderingKey: callName(row),
          now: this.options.scheduler.now(),
        }
      : undefined;
    // Leased to this process's worker when it has room: delivered from memory once committed.
    let lease = event === undefined ? undefined : this.options.webhookLeases?.leaseForEnqueue();
    // Read first: the lease is taken as the write resolves, before the call's next write is sent.
    const signingKey = lease === undefined ? undefined : await this.leaseKey(row);
    if (signingKey === undefined) {
      lease?.release();
      lease = undefined;
    }
    let repeated = false;
    let outcome: Enqueued;
    try {
      outcome = await retryWhileTransient(
        (n) => {
          repeated = n > 0;
          // A repeat goes free: the try whose reply was lost may have leased the event (reclaim finds it).
          if (n > 0) lease?.lost();
          return writeTransition(
            this.options.db,
            row,
            patch,
            event,
            n > 0 || lease === undefined ? undefined : { owner: lease.owner, expiry: lease.expiry },
          );
        },
        {
          keepGoing: () => !this.stopped,
          onRetry: (err, retryInMs) =>
            this.options.log.warn({ err, call: callName(row), retryInMs }, "call write failed; retrying"),
        },
      );
    } catch (err) {
      // Refused by the database (nothing committed), or transient when the engine stops (unknown).
      if (isTransientDatabaseError(err)) lease?.lost();
      else lease?.release();
      throw err;
    }
    if (outcome.enqueued && outcome.leased && lease !== undefined && event !== undefined) {
      lease.take(leasedEvent(event, outcome.seq, lease, signingKey!), outcome.behind);
      return;
    }
    lease?.release();
    // A repeat finds the state update enqueued by the try whose reply was lost.
    if (outcome.enqueued || (enqueue && repeated)) this.options.kick?.();
  }

  /** The signing key of `row`'s project for a state update enqueued leased; undefined: enqueue it free. */
  private async leaseKey(row: CallRow): Promise<string | undefined> {
    try {
      return await (this.options.signingKeys?.get(row.projectId) ??
        signingKeyOf(this.options.db, row.projectId));
    } catch (err) {
      this.options.log.warn({ err, call: callName(row) }, "signing key not read; the state update goes free");
      return undefined;
    }
  }
}

/** A state update enqueued leased to the worker, as a claim would have returned it. */
function leasedEvent(
  event: WebhookToEnqueue & { id: string },
  seq: number,
  lease: EnqueueLease,
  signingKey: string,
): ClaimedEvent {
  return {
    signingKey,
    event: {
      ...pendingEvent(event.id, event),
      seq,
      leaseOwner: lease.owner,
      leaseExpireTime: lease.expiry,
      completeTime: null,
    },
  };
}
