/**
 * Reads a request body into memory, up to a limit. A declared or actual
 * size over the limit is RESOURCE_EXHAUSTED, sent as HTTP 413.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { rpcError } from "../../api/errors.js";
import type { NodeServerRequest } from "../types.js";

/** 4 MiB, the gRPC default message size limit. */
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

/** The error for a body over the limit (RESOURCE_EXHAUSTED; the handler answers 413). */
export function bodyTooLarge(limit: number): ConnectError {
  return rpcError(Code.ResourceExhausted, "REQUEST_TOO_LARGE", `request body exceeds ${limit} bytes`, {
    limit: String(limit),
  });
}

const EMPTY = new Uint8Array(0);

export function readBody(req: NodeServerRequest, limit: number): Promise<Uint8Array> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(bodyTooLarge(limit));
  if (declared === "0" || req.readableEnded) return Promise.resolve(EMPTY);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Error | undefined) => {
      if (done) return;
      done = true;
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("aborted", onAborted);
      if (err !== undefined) reject(err);
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer | string) => {
      const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      size += buf.length;
      if (size > limit) {
        // Stop buffering; what is left is discarded.
        req.pause();
        finish(bodyTooLarge(limit));
        return;
      }
      chunks.push(buf);
    };
    const onEnd = () => finish(undefined);
    const onError = (err: Error) => finish(err);
    const onAborted = () => finish(new ConnectError("client closed the request", Code.Canceled));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("aborted", onAborted);
  });
}
