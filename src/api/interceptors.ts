/**
 * The interceptors of every route, in order, shared by the server and by
 * in-process tests so that both run requests through the same chain:
 * observation (request id in errors, what the access log and metrics say
 * about the RPC; src/observability/), errors (anything unexpected becomes a
 * bare INTERNAL), then authentication and authorization (no lookups), then
 * the `admission` interceptors (rate limits, src/api/rate-limit/), then
 * protovalidate, then the private-destination warnings, then the existence
 * of the projects the request names, then the `inner` ones (idempotent
 * creates, src/api/idempotency/). server.ts builds the extras; in-process
 * tests may leave them out.
 */
import type { Interceptor } from "@connectrpc/connect";
import {
  type Authenticator,
  createAuthInterceptor,
  createProjectExistsInterceptor,
  type Policies,
} from "../auth/interceptor.js";
import { METHOD_POLICIES } from "../auth/permissions.js";
import type { Logger } from "../log.js";
import { createDestinationWarningInterceptor } from "../observability/destination-warnings.js";
import { createObserveInterceptor } from "../observability/observe-interceptor.js";
import { createErrorInterceptor } from "./error-interceptor.js";
import { createValidationInterceptor } from "./validation.js";

/** Interceptors placed inside the standard chain. */
export interface ChainExtras {
  /** Right after authentication and authorization: admission (rate limits). */
  admission?: Interceptor[];
  /** Innermost, right before the service: idempotency. */
  inner?: Interceptor[];
  /** False adds the Warning of src/observability/destination-warnings.ts to requests naming private URIs. */
  allowPrivateDestinations?: boolean;
}

/** `policies` defaults to the service's method table (tests may add their own services' policies). */
export function createInterceptors(
  log: Logger,
  auth: Authenticator,
  policies: Policies = METHOD_POLICIES,
  extras: ChainExtras = {},
): Interceptor[] {
  return [
    createObserveInterceptor(policies),
    createErrorInterceptor(log),
    createAuthInterceptor(auth, policies),
    ...(extras.admission ?? []),
    createValidationInterceptor(),
    createDestinationWarningInterceptor(extras.allowPrivateDestinations ?? true),
    createProjectExistsInterceptor(auth.store, policies),
    ...(extras.inner ?? []),
  ];
}
