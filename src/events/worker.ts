/**
 * The webhook delivery worker. Any number of them (in one process or in
 * many replicas) share the outbox:
 *
 * - a claim takes a batch of due events with a lease (repository.ts:
 *   `FOR UPDATE SKIP LOCKED`); each event's round is delivered at once (in
 *   parallel; events sharing an ordering key are never claimed together:
 *   the next waits until the previous one's round is recorded), and the
 *   round is recorded — DELIVERED on a 2xx, otherwise the next round at the
 *   retry delay, or FAILED after the last retry. Rounds that finish while a
 *   recording is being written are recorded together, in one statement.
 *   In the loop, that statement also hands this worker, leased, the next
 *   event of each key whose event is done with: a call's state updates
 *   follow each other without a claim.
 * - `runOnce()` claims one batch, delivers it and records it (tests, tools).
 * - `start()` runs a loop that keeps claiming while there is room (at most
 *   25 batches' worth of events in flight): a batch at first, and after a
 *   full one, one claim of as many as there is room for; at once while
 *   claims come back full, after `kick()` (an enqueue committed: in this
 *   process, or in another replica whose own worker could not take it,
 *   through LISTEN/NOTIFY: listener.ts, server.ts), after a
 *   recording when the loop was out of room, and otherwise every
 *   `pollIntervalMs`. A recording needs no claim for what it made due: it
 *   hands over each key's next event itself (an event enqueued after it is
 *   claimed on its enqueue's kick). `stop()` waits until every round in
 *   flight is recorded.
 * - A recording that fails on the way (the database away, or its reply lost
 *   after it committed) is sent again, the same, until it answers: a repeat records
 *   nothing twice and returns the first one's hand-over, so a call's next
 *   state update goes out when the database is back, not when its lease
 *   expires.
 * - An enqueue may come leased to this worker (`leaseForEnqueue`: the call
 *   engine's state updates, when the worker has room). Its statement leases
 *   the event when every pending event of its key is this worker's too (or
 *   there is none), and the worker delivers it from memory as the statement
 *   commits: no claim, no lease write, no kick. Behind an event of its key
 *   that is in flight here, it waits in memory and goes out once that one is
 *   recorded done (DELIVERED or FAILED); when that one is not done (a retry
 *   is due later, its lease was lost, its recording failed), the events
 *   waiting behind it are set free, for claims and hand-overs to take in
 *   their key's order.
 * - A claim, or a leased enqueue, that fails on the way may have committed:
 *   the loop's next turn takes back what it leased (found by its lease's
 *   expiry, which no other statement of the worker grants) and delivers it
 *   (or sets it free when it is not its key's head), rather than leave it
 *   until the lease expires.
 * - A worker that dies holding leases loses nothing: once the leases expire
 *   another worker claims those events again. A round whose lease expired
 *   before it finished still records its attempts but changes nothing else.
 *
 * All times (due times, leases, attempt times) come from the injected clock.
 */
import { randomBytes } from "node:crypto";
import type { Clock } from "../clock.js";
import type { WebhooksConfig } from "../config.js";
import type { Db } from "../db/client.js";
import type { WebhookEventRow } from "../db/schema/index.js";
import { isTransientDatabaseError, retryWhileTransient } from "../db/transient.js";
import type { Logger } from "../log.js";
import { webhookEventsTakenTotal } from "../observability/metrics.js";
import { inSpan } from "../observability/tracing.js";
import { observeRound } from "../observability/webhooks.js";
import { type Attempt, attemptRow, deliverRound, MAX_ROUNDS, RETRY_DELAYS_SECONDS } from "./delivery.js";
import { type ClaimedEvent, type RoundOutcome, WebhookEventsRepository } from "./repository.js";

export interface WebhookWorkerOptions {
  db: Db;
  clock: Clock;
  config: WebhooksConfig;
  log: Logger;
  /** Identifies this worker in leases; random by default. */
  id?: string;
}

/**
 * A lease granted before its event exists (`WebhookWorker.leaseForEnqueue`):
 * the enqueuing statement writes the event already leased to this worker
 * (`owner`, until `expiry`) when every pending event of its ordering key is
 * leased to this worker too (or there is none), and the worker delivers it
 * from memory: no claim, no lease write, no kick. Behind an event of its key
 * (`behind`), it waits in memory until this worker is done with that one.
 * Exactly one of `take`, `release` and `lost` settles it (later calls do
 * nothing).
 */
export interface EnqueueLease {
  readonly owner: string;
  readonly expiry: Date;
  /**
   * The statement committed the event leased: deliver it now or, `behind`
   * pending events of its key, after them. Call it before the key's next
   * enqueue is sent.
   */
  take(claimed: ClaimedEvent, behind: boolean): void;
  /** The statement committed the event without a lease, or wrote nothing: nothing is held. */
  release(): void;
  /** Whether the statement committed is unknown (its reply was lost): the loop takes back what it may have leased. */
  lost(): void;
}

/** How a worker took an event to deliver (webhookEventsTakenTotal). */
export type TakenHow = "claim" | "hand_over" | "enqueue" | "reclaim";

/** Batches' worth of events a worker may have in flight at once (claimed, not yet recorded). */
const BATCHES_IN_FLIGHT = 25;

/** Keys remembered as recently done (WebhookWorker.recentlyDone), at most. */
const RECENTLY_DONE = 10_000;

/** A recording that failed is sent again after this long, doubling each time up to the max (ms). */
const RECORD_RETRY_FIRST_MS = 50;
const RECORD_RETRY_MAX_MS = 5_000;

/** How long a kicked worker lets further kicks gather before it claims (ms). */
const KICK_COALESCE_MS = 5;

export class WebhookWorker {
  readonly id: string;
  private readonly repo: WebhookEventsRepository;
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private kicked = false;
  /** The loop stopped claiming for want of room: a recording (which makes room) kicks it. */
  private waitingForRoom = false;
  /** Rounds this worker took, by how (the metric's counts, for tests and benches). */
  readonly taken: Record<TakenHow, number> = { claim: 0, hand_over: 0, enqueue: 0, reclaim: 0 };
  /**
   * The ordering keys (keyOf) with an event in flight here: that event's id,
   * and the events enqueued leased behind it, in order, each delivered when
   * the one before it is done with (takeEnqueued, afterRecord).
   */
  private readonly keys = new Map<string, { id: string; waiting: ClaimedEvent[] }>();
  /**
   * The keys whose last event here was recorded done (DELIVERED or FAILED)
   * with nothing after it, most recent last: an enqueue whose statement
   * read that event still pending finds it done (takeEnqueued).
   */
  private readonly recentlyDone = new Set<string>();
  /** Events claimed by the loop and not yet recorded. */
  private inFlight = 0;
  /** Rounds delivered and waiting to be recorded, with what to do once they are. */
  private finished: Finished[] = [];
  private recording: Promise<void> | undefined;
  /** Every round the loop started, until recorded (stop() waits for them). */
  private readonly rounds = new Set<Promise<void>>();
  /** The lease expiry last granted (ms): each statement that grants leases gets one of its own. */
  private lastLease = 0;
  /** Lease expiries (ms) of claims that failed on the way: they may have committed. */
  private readonly lostLeases = new Set<number>();

  constructor(private readonly options: WebhookWorkerOptions) {
    this.id = options.id ?? `worker-${randomBytes(6).toString("hex")}`;
    this.repo = new WebhookEventsRepository(options.db);
  }

  /** Claims, delivers and records one batch of due events; resolves with how many it handled. */
  async runOnce(): Promise<number> {
    const claimed = await this.claim(this.options.config.batchSize);
    this.taken.claim += claimed.length;
    webhookEventsTakenTotal.inc({ how: "claim" }, claimed.length);
    const rounds = await Promise.all(claimed.map((c) => this.deliver(c)));
    await this.record(rounds);
    return claimed.length;
  }

  private claim(limit: number): Promise<ClaimedEvent[]> {
    const now = this.options.clock.now();
    const lease = this.leaseFrom(now);
    return this.repo.claim(this.id, now, lease, limit).catch((err: unknown) => {
      // It may have committed: its events would wait for this lease to expire.
      if (isTransientDatabaseError(err)) this.lostLeases.add(lease.getTime());
      throw err;
    });
  }

  /** Takes back, and delivers, the events of claims whose replies were lost (the loop, before claiming). */
  private async reclaim(): Promise<void> {
    if (this.lostLeases.size === 0) return;
    const lost = [...this.lostLeases];
    const now = this.options.clock.now();
    const claimed = await this.repo.reclaim(
      this.id,
      lost.map((ms) => new Date(ms)),
      this.leaseFrom(now),
    );
    for (const ms of lost) this.lostLeases.delete(ms);
    for (const c of claimed) this.start1(c, "reclaim");
  }

  /**
   * The expiry of the leases a statement sent at `now` grants: a millisecond
   * later than the last one if need be, so that this worker's leases say
   * which statement granted them (a recording sent again finds its own
   * hand-over by it: repository.ts, FINISH_ROUNDS).
   */
  private leaseFrom(now: Date): Date {
    const ms = Math.max(now.getTime() + this.options.config.leaseSeconds * 1000, this.lastLease + 1);
    this.lastLease = ms;
    return new Date(ms);
  }

  /** Delivers one round of a claimed event (never throws for HTTP failures). */
  private async deliver({ event, signingKey }: ClaimedEvent): Promise<Finished> {
    const { clock, config } = this.options;
    const round = event.attemptCount + 1;
    const result = await inSpan(
      `webhook delivery ${event.eventType}`,
      { attributes: { "webhook.event": event.eventType, "webhook.id": event.id, "webhook.round": round } },
      () =>
        deliverRound(
          { signingKey, uris: event.uris, eventType: event.eventType, eventId: event.id, body: event.body },
          clock,
          config,
        ),
    );
    const now = clock.now();
    return {
      event,
      round,
      attempts: result.attempts,
      outcome: nextState(round, result.response !== undefined, now),
      now,
    };
  }

  /**
   * Records finished rounds in one statement, then logs and counts them.
   * Given `handOver` (the loop runs), the next event of each ordering key
   * that is done with comes leased to this worker and is delivered at once.
   */
  private async record(rounds: readonly Finished[], handOver = false): Promise<void> {
    if (rounds.length === 0) return;
    const { log, clock } = this.options;
    const now = clock.now();
    const finished = rounds.map(({ event, round, attempts, outcome }) => ({
      eventId: event.id,
      round,
      outcome,
      attempts: attempts.map((a) => attemptRow(event.id, round, a)),
    }));
    const handOverAt = handOver ? { now, leaseExpireTime: this.leaseFrom(now) } : undefined;
    // A recording that failed on the way (the connection, the server) may have
    // committed (its reply lost): it is sent again, the same, until it answers
    // (FINISH_ROUNDS answers a repeat as the first), so that what it handed
    // over is delivered now, not once its leases expire. Not a recording the
    // database refused (it would be refused again: its events deleted since,
    // say), and not once the worker is stopping: then the leases expire.
    const { kept, next } = await retryWhileTransient(
      (retry) => this.repo.finish(this.id, finished, handOverAt, retry > 0),
      {
        keepGoing: () => this.running,
        onRetry: (err, retryInMs) =>
          log.warn({ err, events: rounds.length, retryInMs }, "could not record webhook rounds; retrying"),
        firstMs: RECORD_RETRY_FIRST_MS,
        maxMs: RECORD_RETRY_MAX_MS,
      },
    );
    for (const c of next) this.start1(c, "hand_over");
    for (const { event, outcome } of rounds)
      this.afterRecord(event, kept.has(event.id) && outcome.state !== "PENDING");
    for (const { event, round, attempts, outcome, now } of rounds) {
      if (!kept.has(event.id)) {
        log.warn({ eventId: event.id, worker: this.id }, "webhook lease lost before the round was recorded");
      } else {
        observeRound(log, event, round, attempts, outcome.state, now);
      }
    }
  }

  /** Starts the loop (idempotent). */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.poll();
  }

  /**
   * Whether a kick now leads to a claim for as much as a batch: the loop
   * runs and has room. A replica's enqueues need wake no other replica's
   * worker while its own has (listener.ts, `enqueueKicker`).
   */
  hasRoom(): boolean {
    return this.running && this.room() > 0;
  }

  /**
   * The events this worker holds: in flight, waiting behind their key's, or
   * reserved for an enqueue not yet settled (EnqueueLease). 0 when idle.
   */
  get held(): number {
    return this.inFlight;
  }

  /** How many more events the loop may claim now. */
  private room(): number {
    return BATCHES_IN_FLIGHT * this.options.config.batchSize - this.inFlight;
  }

  /**
   * A lease for an event about to be enqueued (see EnqueueLease), or
   * undefined when the loop does not run or has no room: then the event is
   * enqueued free, and a kick (or another replica) claims it. The lease
   * holds a place among the events in flight until it is settled.
   */
  leaseForEnqueue(): EnqueueLease | undefined {
    if (!this.running || this.room() <= 0) return undefined;
    this.inFlight++;
    const expiry = this.leaseFrom(this.options.clock.now());
    let settled = false;
    const settle = () => {
      const first = !settled;
      settled = true;
      return first;
    };
    return {
      owner: this.id,
      expiry,
      take: (claimed, behind) => {
        if (settle()) this.takeEnqueued(claimed, behind);
      },
      release: () => {
        if (settle()) this.freed(1);
      },
      lost: () => {
        if (!settle()) return;
        // Its event, if committed, is found by this lease's expiry (reclaim, at the loop's next turn).
        this.lostLeases.add(expiry.getTime());
        this.freed(1);
        this.kick();
      },
    };
  }

  /** An event enqueued leased to this worker (EnqueueLease.take): delivered now, or after its key's event in flight. */
  private takeEnqueued(claimed: ClaimedEvent, behind: boolean): void {
    const key = keyOf(claimed.event);
    const entry = key === undefined ? undefined : this.keys.get(key);
    if (!behind || key === undefined) this.start1(claimed, "enqueue", true);
    else if (entry !== undefined) entry.waiting.push(claimed);
    // What it was behind was recorded done since its statement read it (and no lost
    // statement's lease can be before it): it is its key's head.
    else if (this.recentlyDone.has(key) && this.lostLeases.size === 0) this.start1(claimed, "enqueue", true);
    // Otherwise a claim takes it, when it is its key's head.
    else this.release([claimed]);
  }

  /**
   * An event of this worker's is done with here (`done`: recorded
   * DELIVERED or FAILED) or not (a retry is due later, the lease was lost,
   * or nothing was recorded): the next event waiting behind it is
   * delivered, or, when it was not done, every one waiting behind it is
   * released, for the claims to take in the key's order.
   */
  private afterRecord(event: WebhookEventRow, done: boolean): void {
    const key = keyOf(event);
    const entry = key === undefined ? undefined : this.keys.get(key);
    if (key === undefined || entry === undefined || entry.id !== event.id) return;
    const next = done ? entry.waiting.shift() : undefined;
    if (next !== undefined) {
      this.start1(next, "enqueue", true);
      return;
    }
    this.keys.delete(key);
    this.recentlyDone.delete(key);
    if (done) {
      this.recentlyDone.add(key);
      if (this.recentlyDone.size > RECENTLY_DONE) {
        this.recentlyDone.delete(this.recentlyDone.values().next().value!);
      }
    }
    if (entry.waiting.length > 0) this.release(entry.waiting);
  }

  /** Gives up this worker's leases of `events` (enqueued leased, not delivered): they are free for a claim. */
  private release(events: readonly ClaimedEvent[]): void {
    const ids = events.map((c) => c.event.id);
    this.repo
      .release(this.id, ids)
      .catch((err: unknown) =>
        this.options.log.warn({ err, events: ids }, "could not release webhook leases; they expire"),
      )
      .finally(() => {
        this.freed(events.length);
        this.kick();
      });
  }

  /** `n` places among the events in flight are free again: a loop waiting for room claims. */
  private freed(n: number): void {
    this.inFlight -= n;
    if (this.waitingForRoom) {
      this.waitingForRoom = false;
      this.kick();
    }
  }

  /** Delivers due events now rather than at the next poll (after an enqueue committed). */
  kick(): void {
    this.kicked = true;
    this.wake?.();
  }

  /** Stops claiming; resolves once every round in flight is recorded. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    this.loop = undefined;
    while (this.rounds.size > 0 || this.recording !== undefined) {
      await Promise.all([...this.rounds, this.recording]);
    }
  }

  private async poll(): Promise<void> {
    const { config, log } = this.options;
    let full = false;
    while (this.running) {
      this.kicked = false;
      this.wake = undefined;
      // After a full claim there is likely more: one claim of as many as
      // there is room for (one statement, rather than a batch's worth each).
      const limit = Math.min(this.room(), full ? BATCHES_IN_FLIGHT * config.batchSize : config.batchSize);
      full = false;
      try {
        await this.reclaim();
      } catch (err) {
        if (this.running) log.warn({ err }, "could not take back the events of a lost claim; retrying");
      }
      if (limit > 0) {
        try {
          const claimed = await this.claim(limit);
          full = claimed.length >= limit;
          for (const c of claimed) this.start1(c, "claim");
        } catch (err) {
          if (this.running) log.error({ err }, "webhook worker round failed");
        }
      }
      if (!this.running) break;
      // Out of room: the next recording kicks the loop (and it claims again).
      this.waitingForRoom = this.room() <= 0;
      if (full && this.room() > 0) continue;
      if (this.kicked) {
        // Kicks come in bursts (every transition, every recording): one claim takes them all.
        await new Promise<void>((resolve) => setTimeout(resolve, KICK_COALESCE_MS));
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, config.pollIntervalMs);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.wake = done;
      });
      this.wake = undefined;
    }
  }

  /**
   * Delivers a claimed event and queues its round for recording; `how` it
   * was taken is counted, and `counted`: its place is held already.
   */
  private start1(claimed: ClaimedEvent, how: TakenHow, counted = false): void {
    if (!counted) this.inFlight++;
    this.taken[how]++;
    webhookEventsTakenTotal.inc({ how });
    const key = keyOf(claimed.event);
    if (key !== undefined) {
      const entry = this.keys.get(key);
      if (entry === undefined) this.keys.set(key, { id: claimed.event.id, waiting: [] });
      else entry.id = claimed.event.id;
    }
    const round: Promise<void> = this.deliver(claimed).then(
      (finished) => this.queueRecord(finished),
      (err: unknown) => {
        // Not delivered (nothing recorded): the lease expires and the event is claimed again.
        this.options.log.error({ err, eventId: claimed.event.id }, "webhook delivery failed");
        this.afterRecord(claimed.event, false);
        this.freed(1);
      },
    );
    this.rounds.add(round);
    void round.finally(() => this.rounds.delete(round));
  }

  /** Rounds that finish while a recording is written are recorded together, next. */
  private queueRecord(finished: Finished): Promise<void> {
    this.finished.push(finished);
    this.recording ??= this.recordQueued();
    return this.recording;
  }

  private async recordQueued(): Promise<void> {
    try {
      // Let the rounds finishing in this turn of the event loop join.
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (this.finished.length > 0) {
        const batch = this.finished;
        this.finished = [];
        try {
          await this.record(batch, this.running);
        } catch (err) {
          // Unrecorded rounds are delivered again once their leases expire.
          this.options.log.error({ err, events: batch.length }, "could not record webhook rounds");
          for (const { event } of batch) this.afterRecord(event, false);
        }
        // Room for more, when the loop was waiting for it. What the
        // recording made due (a key's next event) it handed over itself.
        this.freed(batch.length);
      }
    } finally {
      this.recording = undefined;
    }
  }
}

interface Finished {
  event: WebhookEventRow;
  round: number;
  attempts: Attempt[];
  outcome: RoundOutcome;
  now: Date;
}

/** An event's ordering key with its project (keys are per project); undefined without one. */
function keyOf(event: WebhookEventRow): string | undefined {
  return event.orderingKey === null ? undefined : `${event.projectId}\u0000${event.orderingKey}`;
}

/** The event's state after round `round` (1-based). */
export function nextState(round: number, delivered: boolean, now: Date): RoundOutcome {
  if (delivered) return { state: "DELIVERED", completeTime: now };
  if (round >= MAX_ROUNDS) return { state: "FAILED", completeTime: now };
  const delay = RETRY_DELAYS_SECONDS[round - 1]!;
  return { state: "PENDING", nextAttemptTime: new Date(now.getTime() + delay * 1000) };
}
