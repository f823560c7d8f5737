/**
 * OpenTelemetry tracing, off by default. On when OTEL_TRACES_EXPORTER is
 * `otlp` or an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT,
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), off with OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none; spans go to the OTLP HTTP exporter, which
 * reads the other standard variables itself (headers, timeout,
 * compression). OTEL_SERVICE_NAME names the service (default switchboard).
 *
 * Spans: one per request on every transport (REST included; the parent
 * comes from an incoming W3C `traceparent`), a child per database
 * statement made while a span is active, and for webhooks a span per
 * delivery round with a child per HTTP attempt, whose `traceparent` is
 * sent to the receiver.
 *
 * The provider is not registered globally (tests build several apps in one
 * process): this module keeps its tracer and its own AsyncLocalStorage
 * context, and does nothing at all while tracing is off. The SDK, the
 * exporter and the propagator are loaded when tracing starts, not before:
 * a server without tracing never loads them (~7 MB of resident memory,
 * measured on the embedded default's idle RSS).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import {
  type Attributes,
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { W3CTraceContextPropagator } from "@opentelemetry/core";
import type { BasicTracerProvider, SpanExporter } from "@opentelemetry/sdk-trace-base";
import { setQueryWrapper } from "./metrics.js";

export interface TracingConfig {
  enabled: boolean;
  serviceName: string;
}

/** Reads the standard OTEL_* variables (config.ts calls this). */
export function loadTracingConfig(env: NodeJS.ProcessEnv): TracingConfig {
  const exporter = (env.OTEL_TRACES_EXPORTER ?? "").trim().toLowerCase();
  const disabled = (env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true" || exporter === "none";
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return {
    enabled: !disabled && (exporter === "otlp" || (endpoint !== undefined && endpoint !== "")),
    serviceName: env.OTEL_SERVICE_NAME?.trim() || "switchboard",
  };
}

let propagator: W3CTraceContextPropagator | undefined;
const contexts = new AsyncLocalStorage<Context>();
let tracer: Tracer | undefined;
let provider: BasicTracerProvider | undefined;

/** Whether spans are being recorded. */
export function tracingEnabled(): boolean {
  return tracer !== undefined;
}

/**
 * Starts tracing for the process with the OTLP HTTP exporter, or with
 * `exporter` (tests: an InMemorySpanExporter, exported at once). Returns
 * the function that flushes and stops it; undefined when tracing is off.
 */
export async function startTracing(
  config: TracingConfig,
  exporter?: SpanExporter,
): Promise<(() => Promise<void>) | undefined> {
  if (tracer !== undefined || (!config.enabled && exporter === undefined)) return undefined;
  const [{ W3CTraceContextPropagator }, { resourceFromAttributes }, sdk, otlp] = await Promise.all([
    import("@opentelemetry/core"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/sdk-trace-base"),
    exporter === undefined ? import("@opentelemetry/exporter-trace-otlp-http") : undefined,
  ]);
  if (tracer !== undefined) return undefined; // started by another caller meanwhile
  const { BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor } = sdk;
  propagator ??= new W3CTraceContextPropagator();
  const mine = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": config.serviceName }),
    spanProcessors: [
      exporter === undefined
        ? new BatchSpanProcessor(new otlp!.OTLPTraceExporter())
        : new SimpleSpanProcessor(exporter),
    ],
  });
  provider = mine;
  tracer = mine.getTracer("switchboard");
  setQueryWrapper((operation, _sql, run) => {
    const parent = contexts.getStore();
    if (parent === undefined || trace.getSpan(parent) === undefined) return run();
    return inSpan(
      `db ${operation}`,
      {
        kind: SpanKind.CLIENT,
        attributes: { "db.system.name": "postgresql", "db.operation.name": operation },
      },
      () => run(),
    );
  });
  return async () => {
    if (provider !== mine) return;
    setQueryWrapper(undefined);
    tracer = undefined;
    provider = undefined;
    await mine.shutdown();
  };
}

/** Runs `fn` in a new span (a child of the active one), ending it when `fn` settles; errors mark the span. */
export async function inSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; parent?: Context },
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  const t = tracer;
  if (t === undefined) return fn(undefined);
  const parent = options.parent ?? contexts.getStore() ?? ROOT_CONTEXT;
  const span = t.startSpan(
    name,
    {
      kind: options.kind ?? SpanKind.INTERNAL,
      ...(options.attributes ? { attributes: options.attributes } : {}),
    },
    parent,
  );
  try {
    return await contexts.run(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    span.recordException(err instanceof Error ? err : String(err));
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}

/**
 * Starts the server span of an HTTP request (parent: the request's
 * `traceparent`) and runs `fn` in it; undefined span when tracing is off.
 * The caller ends the span when the response closes.
 */
export function startRequestSpan<T>(
  headers: Record<string, string | string[] | undefined>,
  name: string,
  fn: (span: Span | undefined) => T,
): T {
  const t = tracer;
  if (t === undefined || propagator === undefined) return fn(undefined);
  const parent = propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
  const span = t.startSpan(name, { kind: SpanKind.SERVER }, parent);
  return contexts.run(trace.setSpan(parent, span), () => fn(span));
}

/** Adds `traceparent` (and `tracestate`) of the active span to outbound `headers`. */
export function injectTraceHeaders(headers: Record<string, string>): void {
  if (tracer === undefined || propagator === undefined) return;
  const active = contexts.getStore();
  if (active !== undefined) propagator.inject(active, headers, defaultTextMapSetter);
}

export { type Span, SpanKind, SpanStatusCode };
