/**
 * Call-control exchanges recorded like webhook deliveries, for the
 * inspector: the CallRequest sent (event CALL, the `webhook-id` sent), every
 * destination tried with its status or why no response came (a refused
 * private destination, a timeout), the duration, and the markup received,
 * cut at RESPONSE_BODY_LIMIT bytes. State DELIVERED when a destination
 * answered 2xx, FAILED otherwise; never queued (the call waited for it).
 */
import type { Db } from "../db/client.js";
import type { Logger } from "../log.js";
import { countAttempts } from "../observability/webhooks.js";
import { type Attempt, attemptRow } from "./delivery.js";
import { WebhookEventsRepository } from "./repository.js";

/** Markup kept per exchange: 64 KiB. */
export const RESPONSE_BODY_LIMIT = 64 * 1024;

export interface Exchange {
  id: string;
  projectId: string;
  callId: string;
  uris: readonly string[];
  /** The CallRequest sent. */
  body: string;
  attempts: readonly Attempt[];
  /** The 2xx answer's body (the markup), when one came. */
  responseBody: string | undefined;
  createTime: Date;
  completeTime: Date;
}

function cut(body: string): { text: string; truncated: boolean } {
  const bytes = Buffer.from(body, "utf8");
  if (bytes.length <= RESPONSE_BODY_LIMIT) return { text: body, truncated: false };
  return { text: bytes.subarray(0, RESPONSE_BODY_LIMIT).toString("utf8"), truncated: true };
}

/** Records `exchange`; a storage failure is logged, never thrown (the call goes on). */
export async function recordExchange(db: Db, log: Logger, exchange: Exchange): Promise<void> {
  countAttempts("CALL", exchange.attempts);
  const delivered = exchange.responseBody !== undefined;
  const last = exchange.attempts.length - 1;
  try {
    await new WebhookEventsRepository(db).insertFinished(
      {
        id: exchange.id,
        projectId: exchange.projectId,
        eventType: "CALL",
        orderingKey: null,
        uris: [...exchange.uris],
        body: exchange.body,
        state: delivered ? "DELIVERED" : "FAILED",
        attemptCount: 1,
        nextAttemptTime: null,
        createTime: exchange.createTime,
        completeTime: exchange.completeTime,
        callId: exchange.callId,
      },
      exchange.attempts.map((a, i) => {
        const response = delivered && i === last ? cut(exchange.responseBody!) : undefined;
        return {
          ...attemptRow(exchange.id, 1, a),
          responseBody: response?.text ?? null,
          responseTruncated: response?.truncated ?? false,
        };
      }),
    );
  } catch (err) {
    log.warn(
      { err, call: `projects/${exchange.projectId}/calls/${exchange.callId}` },
      "could not record a call-control exchange",
    );
  }
  if (!delivered) {
    log.info(
      {
        delivery: `projects/${exchange.projectId}/webhookDeliveries/${exchange.id}`,
        call: `projects/${exchange.projectId}/calls/${exchange.callId}`,
        eventType: "CALL",
        attempts: exchange.attempts.map((a) => ({
          uri: a.uri,
          status: a.statusCode,
          error: a.error,
          ms: a.durationMs,
        })),
      },
      "call-control request failed",
    );
  }
}
