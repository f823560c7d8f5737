/**
 * Health: the gRPC health checking protocol (`grpc.health.v1.Health`) as an
 * ordinary Connect service, and plain HTTP probes for orchestrators:
 * `GET /healthz` (liveness: the process answers) and `GET /readyz`
 * (readiness: serving, and the optional readiness check — the database, for
 * instance — passes; with `details` when the operator should change
 * something: `{"status":"SERVING","details":[{...}]}`).
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  type Health,
  type HealthCheckRequest,
  type HealthCheckResponse,
  HealthCheckResponseSchema,
  HealthListResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";
import { clip, MAX_ECHO_CHARS } from "../api/errors.js";
import type { Fallback } from "./fallback.js";

export { ServingStatus };

type Listener = (status: ServingStatus | undefined) => void;

/**
 * The serving status of the server (`""`) and of each service by its full
 * name. Watchers hear every change.
 */
export class HealthStatus {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly listeners = new Map<string, Set<Listener>>();
  private stopped = false;

  /** Every name starts SERVING; `""` stands for the whole server. */
  constructor(serviceNames: Iterable<string> = []) {
    this.statuses.set("", ServingStatus.SERVING);
    for (const name of serviceNames) this.statuses.set(name, ServingStatus.SERVING);
  }

  /** The status of `service`, or undefined when the name is unknown. */
  get(service: string): ServingStatus | undefined {
    return this.statuses.get(service);
  }

  /** Every known name with its status. */
  entries(): IterableIterator<[string, ServingStatus]> {
    return this.statuses.entries();
  }

  set(service: string, status: ServingStatus): void {
    if (this.statuses.get(service) === status) return;
    this.statuses.set(service, status);
    for (const listener of this.listeners.get(service) ?? []) listener(status);
  }

  /**
   * Marks every name NOT_SERVING, as a server does when it starts shutting
   * down; watchers hear it and their streams then end.
   */
  shutdown(): void {
    this.stopped = true;
    for (const name of [...this.statuses.keys()]) this.set(name, ServingStatus.NOT_SERVING);
    for (const listeners of [...this.listeners.values()]) for (const l of [...listeners]) l(undefined);
  }

  /** True once shutdown() was called. */
  get shuttingDown(): boolean {
    return this.stopped;
  }

  /**
   * Resolves with the next status `service` takes, or with undefined when
   * `signal` aborts or the server shuts down first.
   */
  next(service: string, signal: AbortSignal): Promise<ServingStatus | undefined> {
    return new Promise((resolve) => {
      if (signal.aborted || this.stopped) {
        resolve(undefined);
        return;
      }
      let set = this.listeners.get(service);
      if (!set) {
        set = new Set();
        this.listeners.set(service, set);
      }
      const listeners = set;
      const finish = (status: ServingStatus | undefined) => {
        listeners.delete(listener);
        if (listeners.size === 0) this.listeners.delete(service);
        signal.removeEventListener("abort", onAbort);
        resolve(status);
      };
      const listener: Listener = (status) => finish(status);
      const onAbort = () => finish(undefined);
      listeners.add(listener);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}

function response(status: ServingStatus): HealthCheckResponse {
  return create(HealthCheckResponseSchema, { status });
}

/** `grpc.health.v1.Health` over `status`. */
export function createHealthService(status: HealthStatus): ServiceImpl<typeof Health> {
  return {
    check(req) {
      const s = status.get(req.service);
      if (s === undefined)
        throw new ConnectError(`unknown service ${clip(req.service, MAX_ECHO_CHARS)}`, Code.NotFound);
      return response(s);
    },
    list() {
      const out = create(HealthListResponseSchema);
      for (const [name, s] of status.entries()) out.statuses[name] = response(s);
      return out;
    },
    // The current status (SERVICE_UNKNOWN for a name the server does not
    // know, per the spec), then every change, until the client cancels or
    // the server shuts down.
    async *watch(req: HealthCheckRequest, ctx: HandlerContext) {
      let current = status.get(req.service) ?? ServingStatus.SERVICE_UNKNOWN;
      yield response(current);
      for (;;) {
        const next = await status.next(req.service, ctx.signal);
        if (next === undefined) return;
        if (next !== current) {
          current = next;
          yield response(current);
        }
        if (status.shuttingDown) return;
      }
    },
  };
}

export interface HealthHttpOptions {
  /**
   * Extra readiness condition for `/readyz` (the database answers, for
   * instance). Rejecting or resolving false makes the probe fail.
   */
  readiness?: (() => Promise<boolean>) | undefined;
  /** Bound on the readiness check. Default 2 s. */
  readinessTimeoutMs?: number;
  /**
   * What the operator should know about a ready server (a setting to
   * change): `/readyz` answers them as `details` beside the status. They do
   * not make it unready.
   */
  details?: (() => Promise<readonly object[]>) | undefined;
}

const SERVING_BODY = '{"status":"SERVING"}';
const NOT_SERVING_BODY = '{"status":"NOT_SERVING"}';

/** `GET /healthz` and `GET /readyz` as a link of the fallback chain. */
export function createHealthHttp(status: HealthStatus, options: HealthHttpOptions = {}): Fallback {
  const readinessTimeoutMs = options.readinessTimeoutMs ?? 2_000;
  const ready = async (): Promise<boolean> => {
    if (status.get("") !== ServingStatus.SERVING) return false;
    const check = options.readiness;
    if (!check) return true;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        check(),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), readinessTimeoutMs);
        }),
      ]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  };
  return (req, res) => {
    const url = req.url ?? "";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    if (path !== "/healthz" && path !== "/readyz") return false;
    const reply = (ok: boolean, details: readonly object[] = []) => {
      const body =
        details.length === 0
          ? ok
            ? SERVING_BODY
            : NOT_SERVING_BODY
          : JSON.stringify({ status: ok ? "SERVING" : "NOT_SERVING", details });
      res.writeHead(ok ? 200 : 503, {
        "Content-Type": "application/json",
        "Cache-Control": "no-store",
        "Content-Length": String(Buffer.byteLength(body)),
      });
      if (req.method === "HEAD") res.end();
      else res.end(body);
    };
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { Allow: "GET, HEAD" });
      res.end();
      return true;
    }
    if (path === "/healthz") {
      reply(true);
      return true;
    }
    const details = options.details;
    return Promise.all([ready(), details === undefined ? [] : details().catch(() => [])]).then(
      ([ok, found]) => {
        reply(ok, found);
        return true;
      },
    );
  };
}
