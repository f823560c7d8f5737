/**
 * Client errors that connect-node raises before any interceptor runs, and
 * RPCs to procedures the port does not serve, answered in each protocol's
 * own form.
 *
 * 1. `withClientErrors(routes)`: connect-node parses the request message
 *    (and decompresses it) before the interceptor chain, and reports a body
 *    that is not protobuf ("parse binary: invalid varint") or not valid gzip
 *    ("decompression failed") as INTERNAL. Both are the caller's fault: they
 *    become INVALID_ARGUMENT with a fixed message that says nothing about our
 *    internals. Its read limit errors become the REST transcoder's
 *    RESOURCE_EXHAUSTED REQUEST_TOO_LARGE (with ErrorInfo). Errors raised
 *    there (JSON parse errors may quote the input) are bounded as every
 *    error is (`boundedError`, src/api/errors.ts). The universal handlers of the
 *    router are wrapped once, at startup; the rewrite looks only at error
 *    responses (a status in the Connect unary body, the gRPC trailers, the
 *    gRPC-Web trailer frame).
 *
 * 2. `rpcUnimplemented`: a fallback link answering a gRPC, gRPC-Web or
 *    Connect request for an unknown `/package.Service/Method` with
 *    UNIMPLEMENTED: gRPC with HTTP 200 and `grpc-status: 12` in the trailers,
 *    gRPC-Web with HTTP 200 and its trailer frame, Connect with HTTP 501 and
 *    the Connect error JSON (`codeToHttpStatus(Unimplemented)` in the Connect
 *    protocol; its clients read `"code": "unimplemented"` from the body).
 *    REST paths are not RPC paths and keep their 404.
 */
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, errorFromJsonBytes, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { findTrailerError, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { trailerFlag, trailerParse, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import { boundedError, clip, rpcError } from "../api/errors.js";
import { tagWithCurrentRequestId } from "../observability/observe-interceptor.js";
import type { Fallback } from "./fallback.js";
import { encodeGrpcMessage } from "./grpc-message.js";
import { bodyTooLarge } from "./rest/body.js";
import type { NodeServerRequest } from "./types.js";

/** The error for a request message that does not decode. */
export function malformedMessage(): ConnectError {
  return rpcError(
    Code.InvalidArgument,
    "MALFORMED_MESSAGE",
    "the request message could not be decoded (not valid protobuf binary for the method's request type)",
  );
}

/** The error for a compressed request that does not decompress. */
export function malformedCompression(): ConnectError {
  return rpcError(Code.InvalidArgument, "MALFORMED_COMPRESSION", "the compressed request body is corrupt");
}

/**
 * What a pre-interceptor error becomes, or undefined to leave it as it is;
 * what it becomes carries the request's id in its ErrorInfo, as errors of
 * the interceptors do.
 */
export function rewriteClientError(err: ConnectError, maxRequestBytes?: number): ConnectError | undefined {
  const rewritten = rewriteError(err, maxRequestBytes);
  if (rewritten !== undefined) tagWithCurrentRequestId(rewritten);
  return rewritten;
}

function rewriteError(err: ConnectError, maxRequestBytes?: number): ConnectError | undefined {
  if (err.code === Code.Internal && err.rawMessage.startsWith("parse binary:")) return malformedMessage();
  // connect-node's read limit ("message size 20971525 is larger than
  // configured readMaxBytes 4194304"): the same error as REST's, with its
  // ErrorInfo. Other RESOURCE_EXHAUSTED errors (with details) are left alone.
  if (
    err.code === Code.ResourceExhausted &&
    err.details.length === 0 &&
    err.rawMessage.includes("readMaxBytes") &&
    maxRequestBytes !== undefined
  ) {
    return bodyTooLarge(maxRequestBytes);
  }
  if (err.code === Code.Internal && err.rawMessage === "decompression failed") return malformedCompression();
  const bounded = boundedError(err);
  return bounded === err ? undefined : bounded;
}

/**
 * `routes` with every universal handler it registers wrapped by
 * `wrapHandler`; `maxRequestBytes` is the read limit given to connect-node.
 */
export function withClientErrors(
  routes: (router: ConnectRouter) => void,
  maxRequestBytes: number,
): (router: ConnectRouter) => void {
  return (router) => {
    const before = router.handlers.length;
    routes(router);
    const handlers = router.handlers as UniversalHandler[];
    for (let i = before; i < handlers.length; i++) handlers[i] = wrapHandler(handlers[i]!, maxRequestBytes);
  };
}

function wrapHandler(handler: UniversalHandler, limit: number): UniversalHandler {
  const wrapped = async (req: Parameters<UniversalHandler>[0]): Promise<UniversalServerResponse> => {
    const res = await handler(req);
    const contentType = req.header.get("content-type") ?? "";
    if (contentType.startsWith("application/grpc-web")) {
      return res.body === undefined ? res : { ...res, body: grpcWebBody(res.body, limit) };
    }
    if (contentType.startsWith("application/grpc")) return grpcResponse(res, limit);
    return connectResponse(res, limit);
  };
  return Object.assign(wrapped, {
    protocolNames: handler.protocolNames,
    allowedMethods: handler.allowedMethods,
    supportedContentType: handler.supportedContentType,
    requestPath: handler.requestPath,
    service: handler.service,
    method: handler.method,
  }) as UniversalHandler;
}

type Body = AsyncIterable<Uint8Array>;

/** gRPC: the status is in the trailers, complete once the body is drained. */
function grpcResponse(res: UniversalServerResponse, limit: number): UniversalServerResponse {
  const trailer = res.trailer;
  if (trailer === undefined || res.body === undefined) return res;
  return { ...res, body: thenWhenDrained(res.body, () => fixTrailer(trailer, limit)) };
}

/**
 * `body`, calling `drained` once its last chunk is out (before the consumer
 * sees the end), as `yield* body; drained()` in an async generator would, without
 * the generator's promise and closure machinery on every response.
 */
export function thenWhenDrained(body: Body, drained: () => void): Body {
  return {
    [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
      const it = body[Symbol.asyncIterator]();
      let ended = false;
      return {
        next: () =>
          it.next().then((r) => {
            if (r.done === true && !ended) {
              ended = true;
              drained();
            }
            return r;
          }),
        return: (value?: unknown) =>
          it.return !== undefined
            ? it.return(value)
            : Promise.resolve({ done: true, value } as IteratorReturnResult<unknown>),
        throw: (err?: unknown) => (it.throw !== undefined ? it.throw(err) : Promise.reject(err)),
      };
    },
  };
}

function fixTrailer(trailer: Headers, limit?: number): boolean {
  const status = trailer.get("grpc-status");
  if (status === null || status === "0") return false;
  const replacement = rewriteClientError(
    findTrailerError(trailer) ?? new ConnectError("", Code.Unknown),
    limit,
  );
  if (replacement === undefined) return false;
  for (const name of ["grpc-status", "grpc-message", "grpc-status-details-bin"]) trailer.delete(name);
  setTrailerStatus(trailer, replacement);
  return true;
}

/** gRPC-Web: the status is in the trailer frame, the last envelope of the body. */
function grpcWebBody(body: Body, limit: number): Body {
  return (async function* () {
    for await (const chunk of body) yield rewriteTrailerFrame(chunk, limit);
  })();
}

function rewriteTrailerFrame(chunk: Uint8Array, limit: number): Uint8Array {
  // One envelope per chunk: flags, 4-byte length, data. Compressed trailer
  // frames (flag 0x01 too) are left alone; trailers are far below the
  // compression threshold.
  if (chunk.length < 5 || chunk[0] !== trailerFlag) return chunk;
  const length = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength).getUint32(1);
  if (length !== chunk.length - 5) return chunk;
  const trailer = trailerParse(chunk.subarray(5));
  if (!fixTrailer(trailer, limit)) return chunk;
  const data = trailerSerialize(trailer);
  const out = new Uint8Array(5 + data.length);
  out[0] = trailerFlag;
  new DataView(out.buffer).setUint32(1, data.length);
  out.set(data, 5);
  return out;
}

/** Connect unary: an error is a non-200 status with the error JSON as the whole body. */
async function connectResponse(
  res: UniversalServerResponse,
  limit: number,
): Promise<UniversalServerResponse> {
  if (res.status === 200 || res.body === undefined) return res;
  // Error bodies are small (and their messages cut below); read them whole.
  const chunks: Uint8Array[] = [];
  for await (const c of res.body) chunks.push(c);
  const bytes = Buffer.concat(chunks);
  let replacement: ConnectError | undefined;
  try {
    replacement = rewriteClientError(
      errorFromJsonBytes(bytes, undefined, new ConnectError("", Code.Unknown)),
      limit,
    );
  } catch {
    replacement = undefined;
  }
  if (replacement === undefined) return { ...res, body: once(bytes) };
  const json = errorToJsonBytes(replacement, {});
  const header = new Headers(res.header);
  header.delete("content-length");
  return {
    ...res,
    status: codeToHttpStatus(replacement.code),
    header,
    body: once(json),
  };
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

// ---------------------------------------------------------------------------
// Unknown procedures

/** `/package.Service/Method`, the path of every gRPC, gRPC-Web and Connect procedure. */
const PROCEDURE_PATH = /^\/[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*\/[A-Za-z_][\w]*$/;

type RpcProtocol = "grpc" | "grpc-web" | "connect";

/** The RPC protocol a request speaks, judged by its content type (Connect GET by its query). */
export function rpcProtocolOf(req: NodeServerRequest): RpcProtocol | undefined {
  const contentType = (req.headers["content-type"] ?? "").toLowerCase();
  if (contentType.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType.startsWith("application/grpc")) return "grpc";
  if (contentType.startsWith("application/connect+") || contentType.startsWith("application/proto")) {
    return "connect";
  }
  if (req.headers["connect-protocol-version"] !== undefined) return "connect";
  return undefined;
}

export const rpcUnimplemented: Fallback = (req, res) => {
  const url = req.url ?? "/";
  const q = url.indexOf("?");
  const path = q < 0 ? url : url.slice(0, q);
  if (!PROCEDURE_PATH.test(path)) return false;
  const protocol = rpcProtocolOf(req);
  if (protocol === undefined) return false;
  const err = rpcError(
    Code.Unimplemented,
    "UNKNOWN_METHOD",
    `the procedure ${clip(path.slice(1), 200)} is not served here`,
  );
  tagWithCurrentRequestId(err);
  // The request body is not read: discard it.
  req.resume();
  const contentType = req.headers["content-type"] ?? "";
  if (protocol === "connect") {
    const body = errorToJsonBytes(err, {});
    res.writeHead(501, { "content-type": "application/json", "content-length": body.length });
    res.end(body);
    return true;
  }
  const trailer = new Headers();
  setTrailerStatus(trailer, err);
  if (protocol === "grpc") {
    // Headers, then the status in trailers (grpc-js wants a trailers frame
    // when the headers frame does not end the stream).
    res.writeHead(200, { "content-type": contentType });
    const trailers: Record<string, string> = {};
    trailer.forEach((value, key) => {
      trailers[key] = value;
    });
    // As the spec encodes it, like every other gRPC response (grpc-message.ts).
    trailers["grpc-message"] = encodeGrpcMessage(err.rawMessage);
    res.addTrailers(trailers);
    res.end();
    return true;
  }
  const data = trailerSerialize(trailer);
  const frame = new Uint8Array(5 + data.length);
  frame[0] = trailerFlag;
  new DataView(frame.buffer).setUint32(1, data.length);
  frame.set(data, 5);
  const text = contentType.startsWith("application/grpc-web-text");
  const body = text ? Buffer.from(Buffer.from(frame).toString("base64")) : frame;
  res.writeHead(200, {
    "content-type": text ? "application/grpc-web-text+proto" : "application/grpc-web+proto",
    "content-length": body.length,
  });
  res.end(body);
  return true;
};
