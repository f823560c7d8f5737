/**
 * The REST handler: finds the route of a request, maps it to the request
 * message, and calls the method's implementation through the same
 * interceptors as the RPC protocols (connect's own unary invocation, with a
 * handler context of its own), so a REST call is validated, authorized and
 * answered exactly like an RPC — without the binary encode and decode of
 * request and response an in-memory transport would add.
 *
 * It resolves to false, without writing anything, when no route's path
 * matches, so the caller can try something else or answer 404.
 */
import { createRegistry, type DescMethod, type DescService, type Registry } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  createHandlerContext,
  createMethodImplSpec,
  createServiceImplSpec,
  type Interceptor,
  type MethodImplSpec,
} from "@connectrpc/connect";
import { invokeUnaryImplementation } from "@connectrpc/connect/protocol";
import { file_google_rpc_error_details } from "../../../gen/google/rpc/error_details_pb.js";
import type { Logger } from "../../log.js";
import type { NodeServerRequest, NodeServerResponse } from "../types.js";
import { DEFAULT_MAX_BODY_BYTES, readBody } from "./body.js";
import { buildRequest } from "./request.js";
import {
  methodNotAllowedError,
  notFoundError,
  responseJson,
  writable,
  writeError,
  writeJson,
} from "./respond.js";
import { compileRoutes, type RouteTable } from "./routes.js";

export interface RestHandlerOptions {
  /** The services whose `google.api.http` rules are served. */
  services: ReadonlyArray<{ desc: DescService }>;
  /** The same routes function given to the Connect adapter. */
  routes: (router: ConnectRouter) => void;
  /** The same interceptors as the RPC protocols. */
  interceptors?: Interceptor[];
  /** Request bodies above this many bytes are refused with 413; 4 MiB by default. */
  maxBodyBytes?: number;
  /** Where defects (never client errors) are logged. */
  log?: Logger;
}

/** Resolves true when it answered the request, false when no route's path matches. */
export type RestHandler = (req: NodeServerRequest, res: NodeServerResponse) => Promise<boolean>;

/** Request headers passed on to the interceptors and services: credentials, `x-*`, tracing, Idempotency-Key. */
function forwardedHeaders(req: NodeServerRequest): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (
      lower !== "authorization" &&
      lower !== "idempotency-key" &&
      !lower.startsWith("x-") &&
      lower !== "traceparent" &&
      lower !== "tracestate"
    ) {
      continue;
    }
    for (const v of Array.isArray(value) ? value : [value]) headers.append(lower, v);
  }
  return headers;
}

/** Response headers of the interceptors that REST passes on: Retry-After (rate limits), Idempotent-Replayed. */
function passedResponseHeaders(from: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ["retry-after", "idempotent-replayed"]) {
    const value = from.get(name);
    if (value !== null) out[name] = value;
  }
  return out;
}

/**
 * The google.rpc detail messages plus every type of the services' files:
 * decodes error details, and reads and writes google.protobuf.Any in JSON.
 */
function createErrorRegistry(services: ReadonlyArray<{ desc: DescService }>): Registry {
  return createRegistry(file_google_rpc_error_details, ...services.map((s) => s.desc.file));
}

/** The implementation of every method `routes` registers, by `package.Service/Method`. */
function collectImplementations(routes: (router: ConnectRouter) => void): Map<string, MethodImplSpec> {
  const specs = new Map<string, MethodImplSpec>();
  const collector = {
    handlers: [],
    service(desc: DescService, impl: object) {
      const spec = createServiceImplSpec(desc, impl);
      for (const m of Object.values(spec.methods)) specs.set(methodKey(m.method), m);
      return collector;
    },
    rpc(method: DescMethod, impl: never) {
      specs.set(methodKey(method), createMethodImplSpec(method, impl));
      return collector;
    },
  };
  routes(collector as unknown as ConnectRouter);
  return specs;
}

function methodKey(method: DescMethod): string {
  return `${method.parent.typeName}/${method.name}`;
}

/** Headers of `a`, then those of `b` (b wins). */
function mergedHeaders(a: Headers, b: Headers): Headers {
  const out = new Headers(a);
  for (const [name, value] of b) out.set(name, value);
  return out;
}

export function createRestHandler(options: RestHandlerOptions): RestHandler {
  const table: RouteTable = compileRoutes(options.services);
  const registry = createErrorRegistry(options.services);
  const implementations = collectImplementations(options.routes);
  const interceptors = options.interceptors ?? [];
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const log = options.log;

  return async (req, res) => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const rawPath = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? "" : url.slice(q + 1);
    const httpMethod = (req.method ?? "GET").toUpperCase();

    const found = table.lookup(httpMethod, rawPath);
    if (found.kind === "not-found") return false;
    if (found.kind === "method-not-allowed") {
      writeError(req, res, methodNotAllowedError(httpMethod, found.allow), registry, {
        httpStatus: 405,
        headers: { allow: found.allow.join(", ") },
      });
      return true;
    }

    const route = found.route;
    const abort = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) abort.abort();
    };
    res.once("close", onClose);
    let context: ReturnType<typeof createHandlerContext> | undefined;
    try {
      let body: Uint8Array;
      try {
        body = await readBody(req, maxBodyBytes);
      } catch (err) {
        if (err instanceof ConnectError && err.code === Code.ResourceExhausted) {
          writeError(req, res, err, registry, { httpStatus: 413, close: true });
          return true;
        }
        throw err;
      }
      const input = buildRequest(route, { bindings: found.bindings, query, body }, registry);
      const spec = implementations.get(methodKey(route.method));
      if (spec === undefined || spec.kind !== "unary") {
        throw new ConnectError(`${methodKey(route.method)} is not implemented`, Code.Unimplemented);
      }
      context = createHandlerContext({
        service: route.method.parent,
        method: route.method,
        protocolName: "connect",
        requestMethod: "POST",
        url,
        requestSignal: abort.signal,
        requestHeader: forwardedHeaders(req),
      });
      const output = await invokeUnaryImplementation(spec, context, input, interceptors);
      const json = responseJson(route.method.output, output, route.responseBody, registry);
      writeJson(req, res, 200, json, passedResponseHeaders(context.responseHeader));
    } catch (err) {
      if (!writable(res)) return true;
      if (err instanceof ConnectError) {
        // The error interceptor logs the defects of services; what is left
        // is a failure outside the interceptors.
        const opaque = err.code === Code.Internal || err.code === Code.Unknown || err.code === Code.DataLoss;
        if (opaque && err.rawMessage !== "internal error") {
          log?.error({ err, procedure: route.method.name }, "REST call failed");
        }
        // As on the wire: the context's response headers, then the error's metadata.
        const headers =
          context === undefined ? err.metadata : mergedHeaders(context.responseHeader, err.metadata);
        writeError(req, res, err, registry, { headers: passedResponseHeaders(headers) });
      } else {
        log?.error({ err, procedure: route.method.name }, "REST transcoding defect");
        writeError(req, res, new ConnectError("internal error", Code.Internal), registry);
      }
    } finally {
      res.off("close", onClose);
    }
    return true;
  };
}

/** Answers 404 in the REST error shape: the end of the fallback chain. */
export function writeNotFound(req: NodeServerRequest, res: NodeServerResponse): void {
  const url = req.url ?? "/";
  const q = url.indexOf("?");
  writeError(req, res, notFoundError(req.method, q < 0 ? url : url.slice(0, q)), detailsRegistry);
}

const detailsRegistry = createRegistry(file_google_rpc_error_details);
