/**
 * The interceptors of every route, in order, shared by the server and by
 * in-process tests so that both run requests through the same chain:
 * observation (request id in errors, what the access log and metrics say
 * about the RPC; src/observability/), errors (anything unexpected becomes a
 * bare INTERNAL), then authentication and authorization (no lookups), then
 * protovalidate, then the private-destination warnings, then the existence
 * of the projects the request names.
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

/**
 * `policies` defaults to the service's method table (tests may add their own
 * services' policies). `allowPrivateDestinations` false adds the Warning of
 * src/observability/destination-warnings.ts to requests naming private URIs.
 */
export function createInterceptors(
  log: Logger,
  auth: Authenticator,
  policies: Policies = METHOD_POLICIES,
  options: { allowPrivateDestinations?: boolean } = {},
): Interceptor[] {
  return [
    createObserveInterceptor(policies),
    createErrorInterceptor(log),
    createAuthInterceptor(auth, policies),
    createValidationInterceptor(),
    createDestinationWarningInterceptor(options.allowPrivateDestinations ?? true),
    createProjectExistsInterceptor(auth.store, policies),
  ];
}
