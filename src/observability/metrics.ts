/**
 * Prometheus metrics (prom-client), one registry per process. Label sets
 * are bounded: service and method come from the served descriptors only,
 * transports, codes, states and event types from fixed lists; never a
 * project id or a resource name.
 *
 * Counters and histograms are process-wide (a test building several apps
 * in one process reads differences). Gauges that read an app's state
 * (active calls, the webhook queue) ask every registered source at scrape
 * time; an app registers its sources on build() and removes them on close().
 */
import { PgPreparedQuery } from "drizzle-orm/pg-core";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** Latency buckets in seconds, from 1 ms to 30 s. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export const requestsTotal = new Counter({
  name: "switchboard_requests_total",
  help: "Requests served, by service, method, transport and canonical code (HTTP routes: service 'http').",
  labelNames: ["service", "method", "transport", "code"] as const,
  registers: [registry],
});

export const requestDuration = new Histogram({
  name: "switchboard_request_duration_seconds",
  help: "Time from the request's arrival to the end of its response.",
  labelNames: ["service", "method", "transport", "code"] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const requestsInFlight = new Gauge({
  name: "switchboard_requests_in_flight",
  help: "Requests being served.",
  registers: [registry],
});

export const dbQueryDuration = new Histogram({
  name: "switchboard_db_query_duration_seconds",
  help: "Database statements through drizzle, by operation (select, insert, update, delete, other) and outcome.",
  labelNames: ["operation", "outcome"] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const webhookRequestsTotal = new Counter({
  name: "switchboard_webhook_requests_total",
  help: "Outbound webhook HTTP requests, by event (X-Enfonica-Event) and outcome (success, http_error, refused, timeout, error).",
  labelNames: ["event", "outcome"] as const,
  registers: [registry],
});

export const webhookDeliveriesTotal = new Counter({
  name: "switchboard_webhook_deliveries_total",
  help: "Webhook delivery rounds finished, by event and outcome (delivered, retry, failed).",
  labelNames: ["event", "outcome"] as const,
  registers: [registry],
});

export const webhookEventsTakenTotal = new Counter({
  name: "switchboard_webhook_events_taken_total",
  help: "Webhook rounds a worker took to deliver, by how: claim, hand_over (a recording passed on its key's next event), enqueue (enqueued leased to the worker) or reclaim (taken back after the reply to the statement that leased it was lost: a claim's or an enqueue's).",
  labelNames: ["how"] as const,
  registers: [registry],
});

export const webhookDeliveryLag = new Histogram({
  name: "switchboard_webhook_delivery_lag_seconds",
  help: "From when a webhook round was due to when a destination answered 2xx.",
  labelNames: ["event"] as const,
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200],
  registers: [registry],
});

export const callsEndedTotal = new Counter({
  name: "switchboard_calls_ended_total",
  help: "Calls ended, by final state and direction.",
  labelNames: ["state", "direction"] as const,
  registers: [registry],
});

export const callsStartedTotal = new Counter({
  name: "switchboard_calls_started_total",
  help: "Calls this process started driving, by direction.",
  labelNames: ["direction"] as const,
  registers: [registry],
});

export const callerIdsWithheldTotal = new Counter({
  name: "switchboard_caller_ids_withheld_total",
  help: "Caller numbers of SIP endpoints withheld from the legs they placed: not a number of the call's project.",
  registers: [registry],
});

export const sipTrunkAttemptsTotal = new Counter({
  name: "switchboard_sip_trunk_attempts_total",
  help: "Outgoing calls tried through a carrier trunk, by trunk id and outcome (answered, rejected by the far end, cancelled, failed: the next trunk is tried).",
  labelNames: ["trunk", "outcome"] as const,
  registers: [registry],
});

export const recordingsProcessedTotal = new Counter({
  name: "switchboard_recordings_processed_total",
  help: "Recordings processed, by final state (SUCCEEDED, EMPTY, FAILED).",
  labelNames: ["state"] as const,
  registers: [registry],
});

export const recordingProcessingDuration = new Histogram({
  name: "switchboard_recording_processing_duration_seconds",
  help: "Time to process a recording (encode, measure, store).",
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [registry],
});

export const engineHeartbeatsTotal = new Counter({
  name: "switchboard_engine_heartbeats_total",
  help: "Call engine liveness heartbeats, by outcome (ok, error).",
  labelNames: ["outcome"] as const,
  registers: [registry],
});

export const logLinesDroppedTotal = new Counter({
  name: "switchboard_log_lines_dropped_total",
  help: "Log lines dropped because stdout fell LOG_BUFFER_BYTES behind (its reader slow or stopped).",
  registers: [registry],
});

/** What an app reports at scrape time. */
export interface GaugeSource {
  /** Calls this app's engine drives now. */
  activeCalls(): number;
  /** Webhook events by state (PENDING, FAILED); undefined when unknown. */
  webhookQueue(): Promise<Record<string, number> | undefined>;
}

const sources = new Set<GaugeSource>();

/** Registers an app's gauges; returns the function that removes them. */
export function addGaugeSource(source: GaugeSource): () => void {
  sources.add(source);
  return () => sources.delete(source);
}

new Gauge({
  name: "switchboard_calls_active",
  help: "Calls driven by this process's call engine now.",
  registers: [registry],
  collect() {
    let n = 0;
    for (const s of sources) n += s.activeCalls();
    this.set(n);
  },
});

new Gauge({
  name: "switchboard_webhook_queue_depth",
  help: "Webhook events waiting (PENDING) or abandoned (FAILED), read from the database at scrape time.",
  labelNames: ["state"] as const,
  registers: [registry],
  async collect() {
    this.reset();
    // Every app of a process shares its database in practice; the first answer is taken.
    for (const s of sources) {
      const counts = await s.webhookQueue();
      if (counts === undefined) continue;
      for (const state of ["PENDING", "FAILED"]) this.set({ state }, counts[state] ?? 0);
      return;
    }
  },
});

/** The operation of a SQL statement, from its first word. */
function operationOf(sql: string): string {
  const word = /^\s*\(?\s*(\w+)/.exec(sql)?.[1]?.toLowerCase();
  switch (word) {
    case "select":
    case "insert":
    case "update":
    case "delete":
      return word;
    case "with":
      return "select";
    default:
      return "other";
  }
}

/** Hook for tracing (tracing.ts wraps database work in a span through it). */
export type QueryWrapper = <T>(operation: string, sql: string, run: () => Promise<T>) => Promise<T>;
let queryWrapper: QueryWrapper | undefined;
export function setQueryWrapper(wrapper: QueryWrapper | undefined): void {
  queryWrapper = wrapper;
}

/**
 * Runs one statement timed as every drizzle statement is (the
 * db_query_duration histogram; a span when tracing is on): for statements
 * run on the driver directly (src/db/direct.ts).
 */
export function timedStatement<T>(sql: string, run: () => Promise<T>): Promise<T> {
  const operation = operationOf(sql);
  const timed = () => {
    const end = dbQueryDuration.startTimer({ operation });
    return run().then(
      (value) => {
        end({ outcome: "ok" });
        return value;
      },
      (err: unknown) => {
        end({ outcome: "error" });
        throw err;
      },
    );
  };
  return queryWrapper === undefined ? timed() : queryWrapper(operation, sql, timed);
}

let patched = false;
/**
 * Times every statement drizzle runs, on both drivers: both prepared query
 * classes run their SQL through PgPreparedQuery.queryWithCache. Idempotent.
 */
export function instrumentDrizzle(): void {
  if (patched) return;
  patched = true;
  const proto = PgPreparedQuery.prototype as unknown as {
    queryWithCache(sql: string, params: unknown[], query: () => Promise<unknown>): Promise<unknown>;
  };
  const original = proto.queryWithCache;
  proto.queryWithCache = function (
    this: unknown,
    sql: string,
    params: unknown[],
    query: () => Promise<unknown>,
  ) {
    return timedStatement(sql, () => original.call(this, sql, params, query));
  };
}
