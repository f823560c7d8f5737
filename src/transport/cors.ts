/**
 * CORS for browser clients (connect-web over Connect or gRPC-Web, and REST
 * from scripts): preflights are answered here, actual responses get the
 * allow-origin and expose-headers fields. An origin not on the allow-list
 * gets no CORS fields at all, so the browser refuses the response; the
 * request itself is served as usual (CORS is not access control).
 */
import { cors } from "@connectrpc/connect";
import type { NodeHandlerFn } from "./types.js";

export interface CorsOptions {
  /** Allowed origins, e.g. `https://app.example.com`; `*` allows any. */
  allowedOrigins: readonly string[];
  /** How long a browser may cache a preflight answer. Default 2 hours. */
  maxAgeSeconds?: number;
}

export const corsAllowedMethods: readonly string[] = unique([
  ...cors.allowedMethods,
  "GET",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
]);

export const corsAllowedHeaders: readonly string[] = unique([
  ...cors.allowedHeaders,
  "Authorization",
  "Idempotency-Key",
]);

export const corsExposedHeaders: readonly string[] = unique([
  ...cors.exposedHeaders,
  "Grpc-Status",
  "Grpc-Message",
  "Grpc-Status-Details-Bin",
  "Retry-After",
  "Idempotent-Replayed",
  "X-Request-Id",
  "Warning",
]);

function unique(names: string[]): string[] {
  const seen = new Map<string, string>();
  for (const name of names) if (!seen.has(name.toLowerCase())) seen.set(name.toLowerCase(), name);
  return [...seen.values()];
}

/** Whether `origin` is allowed by `allowedOrigins`, for callers that need the rule alone. */
export function createOriginCheck(allowedOrigins: readonly string[]): (origin: string) => boolean {
  if (allowedOrigins.includes("*")) return () => true;
  // Origins are scheme://host[:port]; compare without a trailing slash, case-insensitively.
  const normalize = (o: string) => o.trim().replace(/\/+$/, "").toLowerCase();
  const allowed = new Set(allowedOrigins.map(normalize));
  return (origin) => allowed.has(normalize(origin));
}

/** Wraps `handler` with CORS; the per-request cost is a header lookup and a few setHeader calls. */
export function withCors(handler: NodeHandlerFn, options: CorsOptions): NodeHandlerFn {
  const isAllowed = createOriginCheck(options.allowedOrigins);
  const methods = corsAllowedMethods.join(", ");
  const headers = corsAllowedHeaders.join(", ");
  const exposed = corsExposedHeaders.join(", ");
  const maxAge = String(options.maxAgeSeconds ?? 7200);

  return (req, res) => {
    const origin = req.headers.origin;
    if (origin === undefined) {
      // A cache must not hand this answer to a cross-origin request.
      res.setHeader("Vary", "Origin");
      handler(req, res);
      return;
    }
    const allowed = isAllowed(origin);
    if (req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined) {
      const out: Record<string, string> = {
        Vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
      };
      if (allowed) {
        out["Access-Control-Allow-Origin"] = origin;
        out["Access-Control-Allow-Methods"] = methods;
        out["Access-Control-Allow-Headers"] = headers;
        out["Access-Control-Max-Age"] = maxAge;
      }
      res.writeHead(204, out);
      res.end();
      return;
    }
    res.setHeader("Vary", "Origin");
    if (allowed) {
      res.setHeader("Access-Control-Allow-Origin", origin);
      res.setHeader("Access-Control-Expose-Headers", exposed);
    }
    handler(req, res);
  };
}
