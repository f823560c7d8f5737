/**
 * The interceptors of items 5 and 6 of the hardening work, built from the
 * configuration: rate limits (admission, right after authentication) and
 * idempotent creates (innermost). See docs/idempotency-and-limits.md.
 */
import type { Policies } from "../auth/interceptor.js";
import type { Clock } from "../clock.js";
import type { Config } from "../config.js";
import type { Db } from "../db/client.js";
import type { Logger } from "../log.js";
import type { ServiceEntry } from "../services.js";
import { createIdempotencyInterceptor, readBackFrom } from "./idempotency/interceptor.js";
import { IdempotencyRepository } from "./idempotency/repository.js";
import type { ChainExtras } from "./interceptors.js";
import { createRateLimitInterceptor } from "./rate-limit/interceptor.js";
import type { MonotonicClock } from "./rate-limit/token-bucket.js";

export interface HardeningDeps {
  config: Config;
  clock: Clock;
  log: Logger;
  db: Db;
  services: ServiceEntry[];
  policies: Policies;
}

export function hardeningInterceptors(deps: HardeningDeps, rateLimitClock?: MonotonicClock): ChainExtras {
  return {
    admission: [
      createRateLimitInterceptor({
        limits: deps.config.limits,
        policies: deps.policies,
        ...(rateLimitClock === undefined ? {} : { clock: rateLimitClock }),
      }),
    ],
    inner: [
      createIdempotencyInterceptor({
        repository: new IdempotencyRepository(deps.db),
        clock: deps.clock,
        log: deps.log,
        readBack: readBackFrom(deps.services),
        ttlSeconds: deps.config.idempotencyKeyTtlSeconds,
        killAfterCommit: deps.config.faultKillAfterCreateCommit,
      }),
    ],
  };
}
