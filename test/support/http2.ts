/**
 * HTTP/2 sessions for the connect-node clients of the tests (gRPC, and
 * Connect over HTTP/2).
 *
 * Node's http2 client counts a request body waiting to be sent against its
 * session memory (`maxSessionMemory`, 10 MB by default) and, when one
 * request message is larger than that, resets its own stream with
 * ENHANCE_YOUR_CALM: connect-node then reports INTERNAL "Stream closed with
 * error code NGHTTP2_ENHANCE_YOUR_CALM" and the server's answer is never
 * read (the server, whatever its limits, sees a reset stream). @grpc/grpc-js
 * lifts that limit on its clients (`grpc-node.max_session_memory`, default
 * Number.MAX_SAFE_INTEGER); so do these sessions, so that an oversized
 * request gets the server's own answer (RESOURCE_EXHAUSTED, see
 * docs/limits-and-errors.md) on every transport.
 */
import { Http2SessionManager } from "@connectrpc/connect-node";

/** `maxSessionMemory` of the test clients, in MB (Node's unit), as grpc-js sets it. */
export const CLIENT_SESSION_MEMORY_MB = Number.MAX_SAFE_INTEGER;

/** A session manager for `baseUrl` whose client sends request messages of any size. */
export function http2SessionManager(baseUrl: string): Http2SessionManager {
  return new Http2SessionManager(baseUrl, undefined, { maxSessionMemory: CLIENT_SESSION_MEMORY_MB });
}
