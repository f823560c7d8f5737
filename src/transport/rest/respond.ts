/**
 * REST responses: proto3 JSON (lowerCamelCase) with status 200, and errors
 * in Google's REST shape
 *
 *     {"error": {"code": 404, "message": "...", "status": "NOT_FOUND",
 *                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", ...}]}}
 *
 * with the HTTP status of the google.rpc.Code (the table of Connect's
 * `codeToHttpStatus`). Details are decoded with a registry of the
 * google.rpc detail messages; INTERNAL, UNKNOWN and DATA_LOSS never carry
 * their message to the caller.
 */
import {
  create,
  type DescField,
  type DescMessage,
  type JsonValue,
  type Message,
  type Registry,
  toBinary,
  toJson,
} from "@bufbuild/protobuf";
import { AnySchema } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectError } from "@connectrpc/connect";
import { CodeSchema } from "../../../gen/google/rpc/code_pb.js";
import { rpcError } from "../../api/errors.js";
import { tagWithCurrentRequestId } from "../../observability/observe-interceptor.js";
import type { NodeServerRequest, NodeServerResponse } from "../types.js";

export const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

/** HTTP status per google.rpc.Code; the same table as Connect's `codeToHttpStatus`. */
export function httpStatusOf(code: Code): number {
  switch (code) {
    case Code.Canceled:
      return 499;
    case Code.InvalidArgument:
    case Code.FailedPrecondition:
    case Code.OutOfRange:
      return 400;
    case Code.DeadlineExceeded:
      return 504;
    case Code.NotFound:
      return 404;
    case Code.AlreadyExists:
    case Code.Aborted:
      return 409;
    case Code.PermissionDenied:
      return 403;
    case Code.ResourceExhausted:
      return 429;
    case Code.Unimplemented:
      return 501;
    case Code.Unavailable:
      return 503;
    case Code.Unauthenticated:
      return 401;
    default:
      return 500;
  }
}

const STATUS_NAMES = new Map(CodeSchema.values.map((v) => [v.number, v.name]));

/** The google.rpc.Code name of a code: `NOT_FOUND`. */
export function statusNameOf(code: Code): string {
  return STATUS_NAMES.get(code) ?? "UNKNOWN";
}

/** Codes whose message may describe our internals rather than the request. */
const OPAQUE = new Set([Code.Internal, Code.Unknown, Code.DataLoss]);

export interface RestErrorBody {
  error: { code: number; message: string; status: string; details: JsonValue[] };
}

/** The REST error body of a ConnectError; `httpStatus` overrides the status of the code. */
export function restErrorBody(err: ConnectError, registry: Registry, httpStatus?: number): RestErrorBody {
  const code = OPAQUE.has(err.code) ? Code.Internal : err.code;
  return {
    error: {
      code: httpStatus ?? httpStatusOf(code),
      message: OPAQUE.has(err.code) ? "internal error" : err.rawMessage,
      status: statusNameOf(code),
      details: OPAQUE.has(err.code) ? [] : detailsJson(err, registry),
    },
  };
}

/** Every detail the registry knows, as the JSON of a google.protobuf.Any (`@type` + fields). */
function detailsJson(err: ConnectError, registry: Registry): JsonValue[] {
  const out: JsonValue[] = [];
  for (const d of err.details) {
    try {
      const any =
        "desc" in d
          ? create(AnySchema, {
              typeUrl: `type.googleapis.com/${d.desc.typeName}`,
              value: encode(d.desc, d.value),
            })
          : create(AnySchema, { typeUrl: `type.googleapis.com/${d.type}`, value: d.value });
      // `@type` first, as Google's APIs write it.
      const { "@type": type, ...fields } = toJson(AnySchema, any, { registry }) as Record<string, JsonValue>;
      out.push({ "@type": type ?? any.typeUrl, ...fields });
    } catch {
      // A detail of a type the registry does not know is left out.
    }
  }
  return out;
}

function encode(desc: DescMessage, value: unknown): Uint8Array {
  // Outgoing details (thrown in-process) are message init shapes.
  return toBinary(desc, create(desc, value as never));
}

/** Whether anything may still be written to the response. */
export function writable(res: NodeServerResponse): boolean {
  return !res.headersSent && !res.writableEnded && !res.destroyed;
}

function isHttp1(req: NodeServerRequest): boolean {
  return req.httpVersionMajor < 2;
}

export function writeJson(
  req: NodeServerRequest,
  res: NodeServerResponse,
  status: number,
  body: JsonValue | RestErrorBody,
  headers: Record<string, string> = {},
  close = false,
): void {
  if (!writable(res)) return;
  const text = JSON.stringify(body);
  const all: Record<string, string | number> = {
    ...headers,
    "content-type": JSON_CONTENT_TYPE,
    "content-length": Buffer.byteLength(text),
    "x-content-type-options": "nosniff",
  };
  if (close && isHttp1(req)) all.connection = "close";
  res.writeHead(status, all);
  res.end(text);
}

export interface WriteErrorOptions {
  httpStatus?: number;
  headers?: Record<string, string>;
  /** Close the connection after the response (HTTP/1 only), e.g. after an unread body. */
  close?: boolean;
}

export function writeError(
  req: NodeServerRequest,
  res: NodeServerResponse,
  err: ConnectError,
  registry: Registry,
  options: WriteErrorOptions = {},
): void {
  // Errors of this layer itself (404, 405, 413) carry the request id too.
  tagWithCurrentRequestId(err);
  const body = restErrorBody(err, registry, options.httpStatus);
  writeJson(req, res, body.error.code, body, options.headers, options.close);
}

/** The JSON body of a response message, or of its `response_body` field. */
export function responseJson(
  desc: DescMessage,
  message: Message,
  responseBody: DescField | undefined,
  registry: Registry,
): JsonValue {
  const json = toJson(desc, message, { registry });
  if (responseBody === undefined) return json;
  const value = (json as Record<string, JsonValue>)[responseBody.jsonName];
  if (value !== undefined) return value;
  switch (responseBody.fieldKind) {
    case "list":
      return [];
    case "map":
    case "message":
      return {};
    default: {
      const full = toJson(desc, message, { registry, alwaysEmitImplicit: true }) as Record<string, JsonValue>;
      return full[responseBody.jsonName] ?? null;
    }
  }
}

/** A NOT_FOUND for a path no route (and nothing else on the port) serves. */
export function notFoundError(method: string | undefined, rawPath: string): ConnectError {
  const shown = rawPath.length > 200 ? `${rawPath.slice(0, 200)}…` : rawPath;
  return rpcError(Code.NotFound, "ROUTE_NOT_FOUND", `no method is mapped to ${method ?? "GET"} ${shown}`);
}

export function methodNotAllowedError(method: string | undefined, allow: readonly string[]): ConnectError {
  return rpcError(
    Code.Unimplemented,
    "METHOD_NOT_ALLOWED",
    `HTTP method ${method ?? ""} is not allowed on this path; allowed: ${allow.join(", ")}`,
    { allow: allow.join(", ") },
  );
}
