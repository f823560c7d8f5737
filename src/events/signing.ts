/**
 * Signing of outbound webhooks, with the project's signing key (64 random
 * bytes, stored and shown base64).
 *
 * Every request carries two independent signatures over the same bytes:
 *
 * - `X-Enfonica-Signature` (contract/WIRE.md): base64(HMAC-SHA256(key,
 *   utf8(full request URL including the query + X-Enfonica-Event value +
 *   raw body))).
 * - Standard Webhooks (https://www.standardwebhooks.com): `webhook-id` (the
 *   event id, the same on every retry: an idempotency key), `webhook-timestamp`
 *   (unix seconds of this request) and `webhook-signature` = `v1,` +
 *   base64(HMAC-SHA256(secret, `${id}.${timestamp}.${body}`)). The secret is
 *   the project key's 64 raw bytes: a Standard Webhooks library configured
 *   with `whsec_` + the base64 key (what GetSigningKey returns in JSON)
 *   verifies these requests.
 *
 * The URL signed is the URL as configured (before any redirect).
 */
import { createHmac, createSecretKey, type KeyObject } from "node:crypto";

export const CONTENT_TYPE = "application/json; charset=utf-8";

/** What one signed request is about. */
export interface SignInput {
  /** The project's signing key, base64 (as stored in `projects.signing_key`). */
  signingKey: string;
  /** The full destination URL, query included. */
  url: string;
  /** The `X-Enfonica-Event` value. */
  eventType: string;
  /** The event id (`webhook-id`). */
  eventId: string;
  /** The exact body bytes, as text. */
  body: string;
  /** When this request is made. */
  time: Date;
}

/** `X-Enfonica-Signature` of a request. */
export function enfonicaSignature(
  key: Buffer | KeyObject,
  url: string,
  eventType: string,
  body: string,
): string {
  return createHmac("sha256", key).update(`${url}${eventType}${body}`, "utf8").digest("base64");
}

/** `webhook-signature` (Standard Webhooks v1) of a request. */
export function standardWebhookSignature(
  key: Buffer | KeyObject,
  id: string,
  timestamp: number,
  body: string,
): string {
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`, "utf8").digest("base64")}`;
}

/**
 * Signing keys as KeyObjects, by their base64 text: an HMAC keyed by a
 * KeyObject costs a fraction of one keyed by a Buffer (Node checks and
 * copies a raw key on every createHmac). Emptied when it grows past
 * KEYS_KEPT (a rotation leaves the old key behind).
 */
const keyObjects = new Map<string, KeyObject>();
const KEYS_KEPT = 1000;

function keyObjectOf(signingKey: string): KeyObject {
  let key = keyObjects.get(signingKey);
  if (key === undefined) {
    if (keyObjects.size >= KEYS_KEPT) keyObjects.clear();
    key = createSecretKey(Buffer.from(signingKey, "base64"));
    keyObjects.set(signingKey, key);
  }
  return key;
}

/** Every header of a signed webhook request. */
export function signedHeaders(input: SignInput): Record<string, string> {
  const key = keyObjectOf(input.signingKey);
  const timestamp = Math.floor(input.time.getTime() / 1000);
  return {
    "content-type": CONTENT_TYPE,
    "x-enfonica-event": input.eventType,
    "x-enfonica-signature": enfonicaSignature(key, input.url, input.eventType, input.body),
    "webhook-id": input.eventId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": standardWebhookSignature(key, input.eventId, timestamp, input.body),
  };
}
