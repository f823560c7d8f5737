/**
 * Refused destinations said early. When private destinations are not
 * allowed (WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS=false), a request that sets
 * a webhook or handler URI (any `*_uri`, `*_uris`, `*_url` string field, at
 * any depth) whose host is a loopback, private, link-local or reserved IP
 * literal, or `localhost`, is still accepted — a name may resolve
 * elsewhere later, and the operator may allow private destinations — but
 * the response carries, on every transport, one header per such URI:
 *
 *   Warning: 299 switchboard "handler_uris[0]: http://127.0.0.1:9000/x is a
 *     private or loopback destination; requests to it will be refused"
 *
 * (RFC 7234 warn-code 299, "miscellaneous persistent warning"; gRPC: the
 * `warning` response header metadata.) Each later request to it is refused
 * and recorded with its reason in the webhook inspector.
 */
import { isIP } from "node:net";
import type { DescMessage, Message } from "@bufbuild/protobuf";
import type { Interceptor, UnaryRequest, UnaryResponse } from "@connectrpc/connect";
import { isPublicAddress } from "../events/destinations.js";
import { currentRequest } from "./request-context.js";

const URI_FIELD = /_(uri|uris|url)$/;

/** Whether an http(s) URI names a destination the guard will refuse. */
export function isRefusedDestination(uri: string): boolean {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return false;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return false;
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  return isIP(host) !== 0 && !isPublicAddress(host);
}

/** `[path, uri]` of every refused destination in `message`. */
export function refusedDestinations(
  desc: DescMessage,
  message: Message,
  prefix = "",
  depth = 0,
): [string, string][] {
  const out: [string, string][] = [];
  if (depth > 8) return out;
  const m = message as unknown as Record<string, unknown>;
  for (const field of desc.fields) {
    const value = m[field.localName];
    const path = `${prefix}${field.name}`;
    if (field.fieldKind === "scalar" && typeof value === "string" && URI_FIELD.test(field.name)) {
      if (isRefusedDestination(value)) out.push([path, value]);
    } else if (field.fieldKind === "list" && field.listKind === "scalar" && URI_FIELD.test(field.name)) {
      (value as unknown[]).forEach((v, i) => {
        if (typeof v === "string" && isRefusedDestination(v)) out.push([`${path}[${i}]`, v]);
      });
    } else if (field.fieldKind === "message" && value !== undefined) {
      out.push(...refusedDestinations(field.message, value as Message, `${path}.`, depth + 1));
    } else if (field.fieldKind === "list" && field.listKind === "message") {
      (value as Message[]).forEach((v, i) => {
        out.push(...refusedDestinations(field.message, v, `${path}[${i}].`, depth + 1));
      });
    }
  }
  return out;
}

/** The Warning header value of one refused destination. */
export function destinationWarning(path: string, uri: string): string {
  const text = `${path}: ${uri} is a private or loopback destination; requests to it will be refused`;
  return `299 switchboard "${text.replace(/["\\]/g, "\\$&").replace(/[^\x20-\x7e]/g, "?")}"`;
}

const uriFieldsCache = new WeakMap<DescMessage, boolean>();

/** Whether messages of `desc` can hold a URI field (at the depths refusedDestinations reads). */
function hasUriFields(desc: DescMessage, depth = 0, seen = new Set<DescMessage>()): boolean {
  const cached = uriFieldsCache.get(desc);
  if (cached !== undefined) return cached;
  if (depth > 8 || seen.has(desc)) return false;
  seen.add(desc);
  let found = false;
  for (const field of desc.fields) {
    if ((field.fieldKind === "scalar" || field.fieldKind === "list") && URI_FIELD.test(field.name))
      found = true;
    else if (field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message")) {
      found = hasUriFields(field.message, depth + 1, seen);
    }
    if (found) break;
  }
  seen.delete(desc);
  // Only answers reached from the top are complete (a cycle cut short answers false).
  if (depth === 0) uriFieldsCache.set(desc, found);
  return found;
}

/** Runs after validation; a no-op when private destinations are allowed, or the request has no URI field. */
export function createDestinationWarningInterceptor(allowPrivateDestinations: boolean): Interceptor {
  if (allowPrivateDestinations) return (next) => next;
  return (next) => (req) => {
    if (req.stream || !hasUriFields(req.method.input)) return next(req);
    return warned(next, req);
  };
}

async function warned(next: Parameters<Interceptor>[0], req: UnaryRequest): Promise<UnaryResponse> {
  const found = refusedDestinations(req.method.input, req.message);
  const res = (await next(req)) as UnaryResponse;
  if (found.length > 0) {
    const warnings = found.map(([path, uri]) => destinationWarning(path, uri));
    const ctx = currentRequest();
    if (ctx?.setResponseHeader !== undefined) ctx.setResponseHeader("warning", warnings);
    else for (const w of warnings) res.header.append("warning", w);
  }
  return res;
}
