/**
 * Delivering one webhook: a round tries each URI in order until one answers
 * 2xx (fall-through, contract/WIRE.md); every request is signed afresh
 * (signing.ts) with the time it is made. `signedPost` is the same thing for
 * callers that need the answer at once (the call engine's call-control
 * requests); the outbox worker (worker.ts) uses `deliverRound` and retries.
 */
import { performance } from "node:perf_hooks";
import { newResourceId } from "../api/ids.js";
import type { Clock } from "../clock.js";
import type { WebhooksConfig } from "../config.js";
import type { NewWebhookAttemptRow } from "../db/schema/index.js";
import { injectTraceHeaders, inSpan, SpanKind, SpanStatusCode } from "../observability/tracing.js";
import { type HttpResponse, httpPost } from "./http.js";
import { signedHeaders } from "./signing.js";

/**
 * Delays before the retries that follow a failed first round (seconds):
 * 8 more rounds, then the event is abandoned (contract/WIRE.md).
 */
export const RETRY_DELAYS_SECONDS: readonly number[] = [1, 2, 4, 8, 60, 1800, 3600, 7200];

/** Rounds an event gets in all: the first and the retries. */
export const MAX_ROUNDS = RETRY_DELAYS_SECONDS.length + 1;

/** One HTTP request made for a webhook. */
export interface Attempt {
  uri: string;
  startTime: Date;
  finishTime: Date;
  /** Status of the final response (after redirects), when one came. */
  statusCode: number | undefined;
  /** Why no response came (timeout, refused destination, connection error). */
  error: string | undefined;
  durationMs: number;
}

/** An attempt as the outbox stores it: a webhook_attempts row (repository.ts). */
export function attemptRow(eventId: string, round: number, a: Attempt): NewWebhookAttemptRow {
  return {
    eventId,
    round,
    uri: a.uri,
    startTime: a.startTime,
    finishTime: a.finishTime,
    statusCode: a.statusCode ?? null,
    error: a.error ?? null,
    durationMs: a.durationMs,
  };
}

export interface SignedRequest {
  /** The project's signing key, base64. */
  signingKey: string;
  /** Destinations in order. */
  uris: readonly string[];
  eventType: string;
  /** `webhook-id`; the same on every retry of an event. */
  eventId: string;
  body: string;
}

export type DeliveryOptions = Pick<WebhooksConfig, "timeoutMs" | "allowPrivateDestinations">;

export interface RoundResult {
  attempts: Attempt[];
  /** The 2xx response, when one URI gave one. */
  response: HttpResponse | undefined;
}

function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

/** Tries each URI in order until one answers 2xx. Never throws for HTTP or network failures. */
export async function deliverRound(
  request: SignedRequest,
  clock: Clock,
  options: DeliveryOptions,
): Promise<RoundResult> {
  const attempts: Attempt[] = [];
  for (const uri of request.uris) {
    const startTime = clock.now();
    const started = performance.now();
    const headers = signedHeaders({
      signingKey: request.signingKey,
      url: uri,
      eventType: request.eventType,
      eventId: request.eventId,
      body: request.body,
      time: startTime,
    });
    let response: HttpResponse | undefined;
    let error: string | undefined;
    await inSpan(
      `webhook ${request.eventType}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          "url.full": uri,
          "http.request.method": "POST",
          "webhook.event": request.eventType,
          "webhook.id": request.eventId,
        },
      },
      async (span) => {
        injectTraceHeaders(headers);
        try {
          response = await httpPost(uri, headers, request.body, options);
          span?.setAttribute("http.response.status_code", response.status);
          if (!isSuccess(response.status)) span?.setStatus({ code: SpanStatusCode.ERROR });
        } catch (err) {
          error = err instanceof Error ? err.message : String(err);
          span?.setStatus({ code: SpanStatusCode.ERROR, message: error });
        }
      },
    );
    attempts.push({
      uri,
      startTime,
      finishTime: clock.now(),
      statusCode: response?.status,
      error,
      durationMs: Math.round(performance.now() - started),
    });
    if (response !== undefined && isSuccess(response.status)) return { attempts, response };
  }
  return { attempts, response: undefined };
}

/** No URI of a signedPost answered 2xx. */
export class SignedPostError extends Error {
  override name = "SignedPostError";
  constructor(readonly attempts: Attempt[]) {
    super(
      `no destination answered 2xx: ${attempts
        .map((a) => `${a.uri} -> ${a.statusCode ?? a.error}`)
        .join("; ")}`,
    );
  }
}

export interface SignedPostResult {
  /** The URI that answered 2xx. */
  uri: string;
  status: number;
  /** The response body (for call control: the markup). */
  body: string;
  contentType: string | undefined;
  attempts: Attempt[];
}

/**
 * A signed POST made now, for callers that need the answer (call-control
 * markup requests): the same headers and signatures as queued webhooks, the
 * same fall-through over `uris`, no retries. `eventId` defaults to a fresh
 * id. Rejects with SignedPostError (carrying every attempt) when no URI
 * answers 2xx.
 */
export async function signedPost(
  request: Omit<SignedRequest, "eventId"> & { eventId?: string },
  clock: Clock,
  options: DeliveryOptions,
): Promise<SignedPostResult> {
  const round = await deliverRound(
    { ...request, eventId: request.eventId ?? newResourceId() },
    clock,
    options,
  );
  const ok = round.response;
  if (ok === undefined) throw new SignedPostError(round.attempts);
  const contentType = ok.headers["content-type"];
  return {
    uri: round.attempts[round.attempts.length - 1]!.uri,
    status: ok.status,
    body: ok.body.toString("utf8"),
    contentType,
    attempts: round.attempts,
  };
}
