/**
 * The console's one transport: Connect (JSON) to the origin that served it,
 * with the session's bearer token on every call. Every request goes through
 * the generated clients (gen/), never a hand-written fetch.
 */
import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";

export function createConsoleTransport(token: string): Transport {
  const bearer: Interceptor = (next) => (req) => {
    req.header.set("Authorization", `Bearer ${token}`);
    return next(req);
  };
  return createConnectTransport({
    baseUrl: window.location.origin,
    useBinaryFormat: false,
    interceptors: [bearer],
    // No cookies: the bearer header is the only credential.
    fetch: (input, init) => fetch(input, { ...init, credentials: "omit" }),
  });
}
