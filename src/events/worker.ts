/**
 * The webhook delivery worker. Any number of them (in one process or in
 * many replicas) share the outbox:
 *
 * - `runOnce()` claims a batch of due events with a lease (repository.ts:
 *   `FOR UPDATE SKIP LOCKED`), delivers one round of each (in parallel;
 *   events sharing an ordering key are never in the same batch), and
 *   records the round: DELIVERED on a 2xx, otherwise the next round at the
 *   retry delay, or FAILED after the last retry.
 * - A worker that dies holding leases loses nothing: once the leases expire
 *   another worker claims those events again. A round whose lease expired
 *   before it finished still records its attempts but changes nothing else.
 * - `start()` polls every `pollIntervalMs`, at once again while batches come
 *   back full, and at once after `kick()`; `stop()` waits for the batch in
 *   progress to be recorded.
 *
 * All times (due times, leases, attempt times) come from the injected clock.
 */
import { randomBytes } from "node:crypto";
import type { Clock } from "../clock.js";
import type { WebhooksConfig } from "../config.js";
import type { Db } from "../db/client.js";
import type { Logger } from "../log.js";
import { inSpan } from "../observability/tracing.js";
import { observeRound } from "../observability/webhooks.js";
import { type Attempt, deliverRound, MAX_ROUNDS, RETRY_DELAYS_SECONDS } from "./delivery.js";
import { type ClaimedEvent, type RoundOutcome, WebhookEventsRepository } from "./repository.js";

export interface WebhookWorkerOptions {
  db: Db;
  clock: Clock;
  config: WebhooksConfig;
  log: Logger;
  /** Identifies this worker in leases; random by default. */
  id?: string;
}

export class WebhookWorker {
  readonly id: string;
  private readonly repo: WebhookEventsRepository;
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private kicked = false;

  constructor(private readonly options: WebhookWorkerOptions) {
    this.id = options.id ?? `worker-${randomBytes(6).toString("hex")}`;
    this.repo = new WebhookEventsRepository(options.db);
  }

  /** Claims and delivers one batch of due events; resolves with how many it handled. */
  async runOnce(): Promise<number> {
    const { clock, config } = this.options;
    const now = clock.now();
    const claimed = await this.repo.claim(
      this.id,
      now,
      new Date(now.getTime() + config.leaseSeconds * 1000),
      config.batchSize,
    );
    await Promise.all(claimed.map((c) => this.deliver(c)));
    return claimed.length;
  }

  private async deliver({ event, signingKey }: ClaimedEvent): Promise<void> {
    const { clock, config, log } = this.options;
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
    const outcome = nextState(round, result.response !== undefined, now);
    const kept = await this.repo.finishRound(
      event.id,
      this.id,
      round,
      result.attempts.map((a: Attempt) => ({
        eventId: event.id,
        round,
        uri: a.uri,
        startTime: a.startTime,
        finishTime: a.finishTime,
        statusCode: a.statusCode ?? null,
        error: a.error ?? null,
        durationMs: a.durationMs,
      })),
      outcome,
    );
    if (!kept) {
      log.warn({ eventId: event.id, worker: this.id }, "webhook lease lost before the round was recorded");
    } else {
      observeRound(log, event, round, result.attempts, outcome.state, now);
    }
  }

  /** Starts polling (idempotent). */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.poll();
  }

  /** Delivers due events now rather than at the next poll (after an enqueue committed). */
  kick(): void {
    this.kicked = true;
    this.wake?.();
  }

  /** Stops polling; resolves once the batch in progress is recorded. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    this.loop = undefined;
  }

  private async poll(): Promise<void> {
    const { config, log } = this.options;
    while (this.running) {
      this.kicked = false;
      let handled = 0;
      try {
        handled = await this.runOnce();
      } catch (err) {
        if (this.running) log.error({ err }, "webhook worker round failed");
      }
      if (!this.running) break;
      if (handled >= config.batchSize || this.kicked) continue;
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
}

/** The event's state after round `round` (1-based). */
export function nextState(round: number, delivered: boolean, now: Date): RoundOutcome {
  if (delivered) return { state: "DELIVERED", completeTime: now };
  if (round >= MAX_ROUNDS) return { state: "FAILED", completeTime: now };
  const delay = RETRY_DELAYS_SECONDS[round - 1]!;
  return { state: "PENDING", nextAttemptTime: new Date(now.getTime() + delay * 1000) };
}
