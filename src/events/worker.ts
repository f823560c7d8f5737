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
 * - A claim that fails on the way may have committed: the loop's next turn
 *   takes back what it leased (found by its lease's expiry, which no other
 *   statement of the worker grants) and delivers it, rather than leave it
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

/** Batches' worth of events a worker may have in flight at once (claimed, not yet recorded). */
const BATCHES_IN_FLIGHT = 25;

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
    for (const c of claimed) this.start1(c);
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
    for (const c of next) this.start1(c);
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

  /** How many more events the loop may claim now. */
  private room(): number {
    return BATCHES_IN_FLIGHT * this.options.config.batchSize - this.inFlight;
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
          for (const c of claimed) this.start1(c);
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

  /** Delivers a claimed event and queues its round for recording. */
  private start1(claimed: ClaimedEvent): void {
    this.inFlight++;
    const round: Promise<void> = this.deliver(claimed).then(
      (finished) => this.queueRecord(finished),
      (err: unknown) => {
        // Not delivered (nothing recorded): the lease expires and the event is claimed again.
        this.options.log.error({ err, eventId: claimed.event.id }, "webhook delivery failed");
        this.inFlight--;
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
        }
        this.inFlight -= batch.length;
        // Room for more, when the loop was waiting for it. What the
        // recording made due (a key's next event) it handed over itself.
        if (this.waitingForRoom) {
          this.waitingForRoom = false;
          this.kick();
        }
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

/** The event's state after round `round` (1-based). */
export function nextState(round: number, delivered: boolean, now: Date): RoundOutcome {
  if (delivered) return { state: "DELIVERED", completeTime: now };
  if (round >= MAX_ROUNDS) return { state: "FAILED", completeTime: now };
  const delay = RETRY_DELAYS_SECONDS[round - 1]!;
  return { state: "PENDING", nextAttemptTime: new Date(now.getTime() + delay * 1000) };
}
