/**
 * The connection pools of outbound webhook and media requests (http.ts):
 * keep-alive agents, so a busy destination is not paid a TCP (and TLS)
 * handshake per request.
 *
 * Guarded and unguarded requests never share a pool: the guarded agents
 * connect through `guardedLookup` (destinations.ts), so every socket they
 * hold was connected to an address the guard accepted, and a socket is only
 * reused for the same host and port (Node's agent keys its pool by them).
 * IP literals, which connect without a lookup, are still checked before
 * every request and every redirect hop (http.ts). Idle sockets are closed
 * after IDLE_MS, or earlier when the server's `Keep-Alive: timeout` says so.
 */
import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { guardedLookup } from "./destinations.js";

/** How long an idle pooled socket is kept. */
const IDLE_MS = 4_000;

const common = { keepAlive: true, keepAliveMsecs: 1_000, timeout: IDLE_MS, scheduling: "lifo" } as const;

const agents = {
  guarded: {
    http: new HttpAgent({ ...common, lookup: guardedLookup }),
    https: new HttpsAgent({ ...common, lookup: guardedLookup }),
  },
  open: { http: new HttpAgent(common), https: new HttpsAgent(common) },
};

/** The pool for `protocol` ("http:" or "https:"), guarded unless private destinations are allowed. */
export function agentFor(protocol: string, allowPrivateDestinations: boolean): HttpAgent {
  const set = allowPrivateDestinations ? agents.open : agents.guarded;
  return protocol === "https:" ? set.https : set.http;
}
