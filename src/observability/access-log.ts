/**
 * The access log and request metrics, at the HTTP layer (outermost, so
 * every transport and every route is seen once): a request id (the
 * caller's `X-Request-Id` when sane, otherwise generated) echoed in the
 * `X-Request-Id` response header, and at the end of the response one JSON
 * line at info:
 *
 *   {"msg":"request","requestId","transport","service","method","project",
 *    "credential","code","status","ms","bytesIn","bytesOut"}
 *
 * Service, method, project, credential and code come from the observe
 * interceptor through the request's context (request-context.ts). Health
 * probes (/healthz, /readyz, grpc.health.v1.Health) are logged at debug.
 */
import type { Logger } from "../log.js";
import type { NodeHandlerFn, NodeServerRequest, NodeServerResponse } from "../transport/types.js";
import { requestDuration, requestsInFlight, requestsTotal } from "./metrics.js";
import { type RequestContext, requestContext, requestIdFrom, type TransportName } from "./request-context.js";
import { type Span, SpanStatusCode, startRequestSpan, tracingEnabled } from "./tracing.js";

/** The transport a request arrived on, as far as its headers tell (Connect unary and REST look alike here). */
function transportOf(req: NodeServerRequest): TransportName {
  const ct = req.headers["content-type"];
  if (ct !== undefined) {
    const lower = ct.toLowerCase();
    if (lower.startsWith("application/grpc-web")) return "grpc-web";
    if (lower.startsWith("application/grpc")) return "grpc";
    if (lower.startsWith("application/connect+")) return "connect";
  }
  return "http";
}

/** HTTP routes served outside RPCs, by path; anything else counts as `other` (bounded labels). */
const HTTP_ROUTES: Record<string, string> = {
  "/healthz": "healthz",
  "/readyz": "readyz",
  "/metrics": "metrics",
  "/openapi.json": "openapi",
};

function httpRouteOf(url: string | undefined): string {
  const path = (url ?? "/").split("?", 1)[0]!;
  return (
    HTTP_ROUTES[path] ??
    (path.includes("/recordings/") && path.includes("/audio/")
      ? "recording_audio"
      : path.startsWith("/u/")
        ? "opt_out"
        : "other")
  );
}

/** The path as logged: the secret token of an opt-out link (/u/{token}) is never written. */
function loggedPath(url: string | undefined): string {
  const path = (url ?? "/").split("?", 1)[0]!;
  return path.startsWith("/u/") ? "/u/{token}" : path;
}

/** Code of a plain HTTP answer, from its status (google.rpc.Code names). */
function codeOfStatus(status: number): string {
  if (status < 400) return "OK";
  switch (status) {
    case 400:
      return "INVALID_ARGUMENT";
    case 401:
      return "UNAUTHENTICATED";
    case 403:
      return "PERMISSION_DENIED";
    case 404:
      return "NOT_FOUND";
    case 405:
      return "UNIMPLEMENTED";
    case 409:
      return "ALREADY_EXISTS";
    case 413:
    case 429:
      return "RESOURCE_EXHAUSTED";
    case 499:
      return "CANCELLED";
    case 501:
      return "UNIMPLEMENTED";
    case 503:
      return "UNAVAILABLE";
    case 504:
      return "DEADLINE_EXCEEDED";
    default:
      return status >= 500 ? "INTERNAL" : "UNKNOWN";
  }
}

function isHealthProbe(ctx: RequestContext, route: string): boolean {
  return ctx.service === "grpc.health.v1.Health" || route === "healthz" || route === "readyz";
}

/** Counts the bytes written through `res.write` / `res.end`. */
function countWrites(res: NodeServerResponse): { bytes: number } {
  const counter = { bytes: 0 };
  const size = (chunk: unknown) =>
    typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk instanceof Uint8Array ? chunk.byteLength : 0;
  const r = res as unknown as { write: (...a: unknown[]) => boolean; end: (...a: unknown[]) => unknown };
  const write = r.write;
  const end = r.end;
  r.write = function (this: unknown, ...args: unknown[]) {
    counter.bytes += size(args[0]);
    return write.apply(this, args);
  };
  r.end = function (this: unknown, ...args: unknown[]) {
    if (typeof args[0] !== "function") counter.bytes += size(args[0]);
    return end.apply(this, args);
  };
  return counter;
}

export function withAccessLog(handler: NodeHandlerFn, log: Logger): NodeHandlerFn {
  // The access log's lines hold no secret (ids, names, codes, sizes): written
  // without the redaction pass the service logger makes over every line.
  const accessLog = log.child({}, { redact: { paths: [] } });
  return (req, res) => {
    const started = performance.now();
    const ctx: RequestContext = {
      id: requestIdFrom(req.headers["x-request-id"]),
      transport: transportOf(req),
    };
    res.setHeader("x-request-id", ctx.id);
    ctx.setResponseHeader = (name, values) => {
      if (!res.headersSent) res.setHeader(name, values);
    };
    const written = countWrites(res);
    requestsInFlight.inc();
    let done = false;
    let span: Span | undefined;
    const finish = () => {
      if (done) return;
      done = true;
      requestsInFlight.dec();
      const seconds = (performance.now() - started) / 1000;
      const rpc = ctx.service !== undefined;
      // Plain HTTP routes only: an RPC's labels are its service and method.
      const route = rpc ? "" : httpRouteOf(req.url);
      const code = ctx.code ?? (res.headersSent ? codeOfStatus(res.statusCode) : "CANCELLED");
      const labels = {
        service: rpc ? ctx.service! : "http",
        method: rpc ? ctx.method! : route,
        transport: ctx.transport,
        code,
      };
      requestsTotal.inc(labels);
      requestDuration.observe(labels, seconds);
      if (span !== undefined) endSpan(span, ctx, code, res.statusCode);
      const level = isHealthProbe(ctx, route) ? "debug" : "info";
      if (!accessLog.isLevelEnabled(level)) return;
      // Built field by field (no spreads): the same keys, in the same order.
      const line: Record<string, unknown> = { requestId: ctx.id, transport: ctx.transport };
      if (rpc) {
        line.service = ctx.service;
        line.method = ctx.method;
      } else {
        line.httpMethod = req.method;
        line.path = loggedPath(req.url);
      }
      if (ctx.project !== undefined) line.project = ctx.project;
      if (ctx.credential !== undefined) line.credential = ctx.credential;
      line.code = code;
      line.status = res.statusCode;
      line.ms = Math.round(seconds * 1000);
      const contentLength = req.headers["content-length"];
      if (contentLength !== undefined) line.bytesIn = Number(contentLength);
      line.bytesOut = written.bytes;
      accessLog[level](line, "request");
    };
    res.once("close", finish);
    res.once("finish", finish);
    if (!tracingEnabled()) {
      requestContext.run(ctx, () => handler(req, res));
      return;
    }
    startRequestSpan(req.headers, `${req.method ?? "GET"} ${httpRouteOf(req.url)}`, (s) => {
      span = s;
      requestContext.run(ctx, () => handler(req, res));
    });
  };
}

/** Names the request's span after its RPC, sets its attributes and status, and ends it. */
function endSpan(span: Span, ctx: RequestContext, code: string, status: number): void {
  const rpc = ctx.service !== undefined;
  if (rpc) span.updateName(`${ctx.service}/${ctx.method}`);
  span.setAttributes({
    "rpc.system": rpc
      ? ctx.transport === "grpc" || ctx.transport === "grpc-web"
        ? "grpc"
        : "connect_rpc"
      : "",
    ...(rpc ? { "rpc.service": ctx.service!, "rpc.method": ctx.method! } : {}),
    "switchboard.transport": ctx.transport,
    "switchboard.request_id": ctx.id,
    "switchboard.code": code,
    "http.response.status_code": status,
    ...(ctx.project === undefined ? {} : { "switchboard.project": ctx.project }),
  });
  if (code !== "OK") span.setStatus({ code: SpanStatusCode.ERROR, message: code });
  span.end();
}

/** A fallback-chain link that marks the requests reaching it as REST (the google.api.http routes). */
export function markRest<A extends unknown[], R>(link: (...args: A) => R): (...args: A) => R {
  return (...args) => {
    const ctx = requestContext.getStore();
    if (ctx !== undefined) ctx.transport = "rest";
    return link(...args);
  };
}
