/**
 * Webhook deliveries in the log and the metrics: every request by event and
 * outcome, every finished round (delivered, retry, failed), the lag from
 * when a round was due to when it was delivered; failed rounds at info and
 * abandoned deliveries at warn, with the delivery's name and what each
 * destination answered.
 */
import type { WebhookEventRow } from "../db/schema/index.js";
import type { Attempt } from "../events/delivery.js";
import type { Logger } from "../log.js";
import { webhookDeliveriesTotal, webhookDeliveryLag, webhookRequestsTotal } from "./metrics.js";

/** Event types are a fixed set; anything else is counted as `other` (bounded labels). */
const EVENTS = new Set([
  "CALL",
  "CALL_STATE_UPDATE",
  "RECORDING_READY",
  "TRANSCRIPTION_READY",
  "INCOMING_MESSAGE",
  "MESSAGE_STATUS_UPDATE",
]);
export const eventLabel = (eventType: string) => (EVENTS.has(eventType) ? eventType : "other");

/** The outcome of one request: success, http_error, refused, timeout or error. */
export function attemptOutcome(a: Pick<Attempt, "statusCode" | "error">): string {
  if (a.statusCode !== undefined && a.statusCode !== null) {
    return a.statusCode >= 200 && a.statusCode < 300 ? "success" : "http_error";
  }
  const error = a.error ?? "";
  if (error.includes("WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS")) return "refused";
  if (error.startsWith("timed out")) return "timeout";
  return "error";
}

export function countAttempts(eventType: string, attempts: readonly Attempt[]): void {
  const event = eventLabel(eventType);
  for (const a of attempts) webhookRequestsTotal.inc({ event, outcome: attemptOutcome(a) });
}

export function observeRound(
  log: Logger,
  event: WebhookEventRow,
  round: number,
  attempts: readonly Attempt[],
  state: "DELIVERED" | "FAILED" | "PENDING",
  now: Date,
): void {
  countAttempts(event.eventType, attempts);
  const label = eventLabel(event.eventType);
  const outcome = state === "DELIVERED" ? "delivered" : state === "FAILED" ? "failed" : "retry";
  webhookDeliveriesTotal.inc({ event: label, outcome });
  if (state === "DELIVERED") {
    const due = event.nextAttemptTime ?? event.createTime;
    webhookDeliveryLag.observe({ event: label }, Math.max(0, (now.getTime() - due.getTime()) / 1000));
    return;
  }
  const fields = {
    delivery: `projects/${event.projectId}/webhookDeliveries/${event.id}`,
    project: event.projectId,
    eventType: event.eventType,
    ...(event.orderingKey ? { orderingKey: event.orderingKey } : {}),
    round,
    attempts: attempts.map((a) => ({ uri: a.uri, status: a.statusCode, error: a.error, ms: a.durationMs })),
  };
  if (state === "FAILED") log.warn(fields, "webhook delivery abandoned");
  else log.info(fields, "webhook round failed");
}
