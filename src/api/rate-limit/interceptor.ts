/**
 * Rate limits, right after authentication: token buckets per API key, per
 * project named by the request, and a lower one per project for CreateCall
 * and CreateMessage. The operator is exempt; methods that name no project
 * count against the key only. A refused request is RESOURCE_EXHAUSTED with
 * ErrorInfo reason RATE_LIMIT_EXCEEDED (metadata `limit`: `api_key`,
 * `project` or `create_call`) and google.rpc.RetryInfo `retry_delay`, on
 * every transport; the response also carries `Retry-After` (whole seconds),
 * and REST answers 429. A refused request takes no token from any bucket.
 *
 * The buckets are in memory, per replica: a limit holds for each replica
 * (N replicas admit up to N times the rate). See docs/idempotency-and-limits.md.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { ErrorInfoSchema, RetryInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { credentialName, type Policies, principalKey, projectOf, readPath } from "../../auth/interceptor.js";
import type { LimitsConfig } from "../../config.js";
import { ERROR_DOMAIN } from "../errors.js";
import { procedureOf } from "../procedure.js";
import { type MonotonicClock, monotonicClock, TokenBuckets } from "./token-bucket.js";

/** The methods under the lower `createCall` limit. */
export const CALL_CREATING_METHODS: ReadonlySet<string> = new Set([
  "enfonica.voice.v1beta1.Calls/CreateCall",
  "enfonica.messaging.v1.Messages/CreateMessage",
]);

export interface RateLimitOptions {
  limits: Pick<LimitsConfig, "project" | "apiKey" | "createCall">;
  policies: Policies;
  /** Default: performance.now(). */
  clock?: MonotonicClock;
}

/** RESOURCE_EXHAUSTED with RetryInfo and a Retry-After header. */
export function rateLimited(limit: string, subject: string, retryMs: number): ConnectError {
  const seconds = Math.max(1, Math.ceil(retryMs / 1000));
  return new ConnectError(
    `rate limit of ${subject} exceeded: retry in ${seconds} s`,
    Code.ResourceExhausted,
    { "retry-after": String(seconds) },
    [
      {
        desc: ErrorInfoSchema,
        value: create(ErrorInfoSchema, {
          reason: "RATE_LIMIT_EXCEEDED",
          domain: ERROR_DOMAIN,
          metadata: { limit, subject },
        }),
      },
      {
        desc: RetryInfoSchema,
        value: create(RetryInfoSchema, {
          retryDelay: { seconds: BigInt(Math.floor(retryMs / 1000)), nanos: (retryMs % 1000) * 1_000_000 },
        }),
      },
    ],
  );
}

export function createRateLimitInterceptor(options: RateLimitOptions): Interceptor {
  const clock = options.clock ?? monotonicClock;
  const keys = new TokenBuckets(options.limits.apiKey, clock);
  const projects = new TokenBuckets(options.limits.project, clock);
  const calls = new TokenBuckets(options.limits.createCall, clock);
  // No limit configured (all 0): nothing to count, nothing in the chain.
  if (!keys.enabled && !projects.enabled && !calls.enabled) return (next) => next;
  return (next) => (req) => {
    const principal = req.contextValues.get(principalKey);
    if (principal === undefined || principal.kind === "operator") return next(req);
    const procedure = procedureOf(req.method);
    // Only what a limit is on for is looked at (no key name, no project ids otherwise).
    const policy =
      !req.stream && (projects.enabled || (calls.enabled && CALL_CREATING_METHODS.has(procedure)))
        ? options.policies[procedure]
        : undefined;
    if (!keys.enabled && policy === undefined) return next(req);
    // Taken so far: [buckets, key], given back when a later limit refuses.
    const taken: [TokenBuckets, string][] = [];
    const take = (buckets: TokenBuckets, key: string, limit: string, subject: string) => {
      const wait = buckets.take(key);
      if (wait > 0) {
        for (const [b, k] of taken) b.refund(k);
        throw rateLimited(limit, subject, wait);
      }
      if (buckets.enabled) taken.push([buckets, key]);
    };
    // One bucket per credential: an API key, or a service account (all its tokens).
    if (keys.enabled) {
      const credential = credentialName(principal);
      take(keys, credential, "api_key", credential);
    }
    if (policy !== undefined && !req.stream) {
      const ids = new Set<string>();
      for (const path of policy.projects) {
        const id = projectOf(readPath(req.method.input, req.message, path));
        if (id !== undefined) ids.add(id);
      }
      for (const id of ids) take(projects, id, "project", `projects/${id}`);
      if (CALL_CREATING_METHODS.has(procedure)) {
        for (const id of ids) take(calls, id, "create_call", `projects/${id}`);
      }
    }
    return next(req);
  };
}
