/**
 * What is known about the request being served, shared by the HTTP layer
 * (access-log.ts: request id, transport, status, bytes, duration) and the
 * RPC interceptors (observe-interceptor.ts: service, method, project,
 * credential, code) through one AsyncLocalStorage store per request. REST
 * requests reach the interceptors through an in-memory transport inside the
 * same async context, so they share their HTTP request's store and are
 * logged once.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";

export type TransportName = "grpc" | "grpc-web" | "connect" | "rest" | "http";

export interface RequestContext {
  /** The request id: the caller's `X-Request-Id` when sane, generated otherwise. */
  readonly id: string;
  transport: TransportName;
  /** `package.Service` and method of the RPC served (REST included); unset for plain HTTP routes. */
  service?: string;
  method?: string;
  /** The project the request names (first of the method's policy). */
  project?: string;
  /** `operator` or `apiKeys/{id}`; never a secret. */
  credential?: string;
  /** The canonical code, UPPER_SNAKE (`OK`, `NOT_FOUND`), once the RPC finished. */
  code?: string;
  /**
   * Sets a header of the HTTP response (before it is written), whatever the
   * transport: REST answers through its own writer, not the RPC response.
   */
  setResponseHeader?: (name: string, values: string[]) => void;
}

export const requestContext = new AsyncLocalStorage<RequestContext>();

/** The context of the request being served, if any. */
export function currentRequest(): RequestContext | undefined {
  return requestContext.getStore();
}

/** Ids we accept from callers: visible ASCII without quotes or commas, at most 128 characters. */
const SANE_ID = /^[A-Za-z0-9._:/+=@-]{1,128}$/;

/** The caller's request id when sane, otherwise a fresh UUID. */
export function requestIdFrom(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value !== undefined && SANE_ID.test(value) ? value : randomUUID();
}

/** UPPER_SNAKE name of a connect Code name (`NotFound` -> `NOT_FOUND`). */
export function codeName(name: string): string {
  return name.replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}
