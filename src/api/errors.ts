/**
 * Canonical errors (AIP-193): a code, a message safe to show to callers, and
 * `google.rpc` details — always an ErrorInfo with a stable UPPER_SNAKE reason,
 * plus BadRequest field violations for INVALID_ARGUMENT and ResourceInfo for
 * NOT_FOUND / ALREADY_EXISTS. Domain code throws these; the error interceptor
 * turns anything else into a bare INTERNAL.
 */
import { create, type DescMessage, type Message, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  BadRequest_FieldViolationSchema,
  BadRequestSchema,
  ErrorInfoSchema,
  ResourceInfoSchema,
} from "../../gen/google/rpc/error_details_pb.js";

/** The `domain` of every ErrorInfo this service emits. */
export const ERROR_DOMAIN = "switchboard";

export interface FieldViolation {
  /** Path of the field in the request, proto names: `regulatory_listing.address.postal_code`. */
  field: string;
  /** What is wrong with it, for people. */
  description: string;
  /** Optional machine-readable reason, e.g. `string.max_len`. */
  reason?: string;
}

type Details = ConstructorParameters<typeof ConnectError>[3];

function errorInfo(reason: string, metadata: Record<string, string> = {}) {
  return {
    desc: ErrorInfoSchema,
    value: create(ErrorInfoSchema, { reason, domain: ERROR_DOMAIN, metadata }),
  };
}

/**
 * Bounds on what one error carries. gRPC sends the message and the details in
 * HTTP/2 trailers, which Node (and most gRPC clients) cap near 64 KiB; a
 * client-chosen label key of 20,000 characters must still come back as
 * INVALID_ARGUMENT, not as a reset stream.
 */
const MAX_VIOLATIONS = 25;
const MAX_FIELD_CHARS = 256;
const MAX_DESCRIPTION_CHARS = 256;
const MESSAGE_VIOLATIONS = 3;

/** `s` cut to `max` characters, marked with an ellipsis when cut. */
export function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

/** INVALID_ARGUMENT naming every bad field (the first 25 when there are more). */
export function invalidArgument(violations: FieldViolation[], message?: string): ConnectError {
  const kept = violations.slice(0, MAX_VIOLATIONS).map((v) => ({
    field: clip(v.field, MAX_FIELD_CHARS),
    description: clip(v.description, MAX_DESCRIPTION_CHARS),
    reason: v.reason ?? "",
  }));
  const shown = kept
    .slice(0, MESSAGE_VIOLATIONS)
    .map((v) => `${v.field}: ${v.description}`)
    .join("; ");
  const text =
    message ??
    (violations.length === 1
      ? shown
      : `${violations.length} invalid fields: ${shown}${violations.length > MESSAGE_VIOLATIONS ? "; …" : ""}`);
  const badRequest = create(BadRequestSchema, {
    fieldViolations: kept.map((v) => create(BadRequest_FieldViolationSchema, v)),
  });
  return new ConnectError(text, Code.InvalidArgument, undefined, [
    errorInfo("INVALID_ARGUMENT", { violations: String(violations.length) }),
    { desc: BadRequestSchema, value: badRequest },
  ] satisfies Details);
}

/** The longest error message a caller gets (anything longer is cut). */
export const MAX_MESSAGE_CHARS = 1024;

/**
 * The most bytes the encoded details of one error may take. gRPC sends them
 * base64-encoded in the `grpc-status-details-bin` trailer, next to
 * `grpc-message`; clients refuse trailers over their header list limit
 * (Node's http2, which grpc-js and connect-node use: 64 KiB) with a reset
 * stream, which they report as INTERNAL. 16 KiB of details and a message of
 * MAX_MESSAGE_CHARS, percent-encoded, stay well below that whatever the
 * script of the text.
 */
export const MAX_DETAILS_BYTES = 16 * 1024;

type AnyDetail = ConnectError["details"][number];
type OutgoingDetail = Extract<AnyDetail, { desc: DescMessage }>;

/**
 * `err` bounded for the wire, whoever built it: the message cut to
 * MAX_MESSAGE_CHARS; in the details, every ErrorInfo metadata key and value,
 * BadRequest field path and description and ResourceInfo name cut as the
 * helpers above cut them (at most MAX_VIOLATIONS violations); then details
 * kept in order while they fit in MAX_DETAILS_BYTES: a BadRequest that does
 * not fit keeps its first violations (at least one), an ErrorInfo always
 * stays, others are left out. `err` itself when nothing needed cutting, so
 * the errors of the helpers above pass unchanged. The error interceptor
 * applies this to every error a call ends with, so that an error echoing
 * client input at length (a 60 KB `to` in ErrorInfo metadata) cannot grow
 * gRPC trailers past what clients accept.
 */
export function boundedError(err: ConnectError): ConnectError {
  let changed = err.rawMessage.length > MAX_MESSAGE_CHARS;
  const kept: AnyDetail[] = [];
  let bytes = 0;
  for (const original of err.details) {
    let d = "desc" in original ? boundedDetail(original) : original;
    let size = detailBytes(d);
    if (bytes + size > MAX_DETAILS_BYTES && "desc" in d && d.desc.typeName === BadRequestSchema.typeName) {
      d = fewerViolations(d, MAX_DETAILS_BYTES - bytes);
      size = detailBytes(d);
    }
    if (d !== original) changed = true;
    const isErrorInfo = ("desc" in d ? d.desc.typeName : d.type) === ErrorInfoSchema.typeName;
    if (bytes + size > MAX_DETAILS_BYTES && !isErrorInfo) {
      changed = true;
      continue;
    }
    bytes += size;
    kept.push(d);
  }
  if (!changed) return err;
  const out = new ConnectError(clip(err.rawMessage, MAX_MESSAGE_CHARS), err.code, err.metadata);
  out.details.push(...kept);
  return out;
}

/** A BadRequest with its first violations only, as many as fit in `room` bytes (at least one). */
function fewerViolations(d: OutgoingDetail, room: number): OutgoingDetail {
  const violations = create(BadRequestSchema, d.value as never).fieldViolations;
  let n = violations.length;
  let out = d;
  while (n > 1) {
    n--;
    out = {
      desc: BadRequestSchema,
      value: create(BadRequestSchema, { fieldViolations: violations.slice(0, n) }),
    };
    if (detailBytes(out) <= room) break;
  }
  return out;
}

function boundedDetail(d: OutgoingDetail): OutgoingDetail {
  switch (d.desc.typeName) {
    case ErrorInfoSchema.typeName: {
      const info = create(ErrorInfoSchema, d.value as never);
      const entries = Object.entries(info.metadata);
      if (entries.every(([k, v]) => k.length <= MAX_ECHO_CHARS && v.length <= MAX_ECHO_CHARS)) return d;
      const metadata = Object.fromEntries(
        entries.map(([k, v]) => [clip(k, MAX_ECHO_CHARS), clip(v, MAX_ECHO_CHARS)]),
      );
      return {
        desc: ErrorInfoSchema,
        value: create(ErrorInfoSchema, { reason: info.reason, domain: info.domain, metadata }),
      };
    }
    case BadRequestSchema.typeName: {
      const br = create(BadRequestSchema, d.value as never);
      const fits = (v: { field: string; description: string }) =>
        v.field.length <= MAX_FIELD_CHARS && v.description.length <= MAX_DESCRIPTION_CHARS;
      if (br.fieldViolations.length <= MAX_VIOLATIONS && br.fieldViolations.every(fits)) return d;
      const fieldViolations = br.fieldViolations.slice(0, MAX_VIOLATIONS).map((v) =>
        create(BadRequest_FieldViolationSchema, {
          ...v,
          field: clip(v.field, MAX_FIELD_CHARS),
          description: clip(v.description, MAX_DESCRIPTION_CHARS),
        }),
      );
      return { desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations }) };
    }
    case ResourceInfoSchema.typeName: {
      const ri = create(ResourceInfoSchema, d.value as never);
      const parts = [ri.resourceType, ri.resourceName, ri.owner, ri.description];
      if (parts.every((p) => p.length <= MAX_ECHO_CHARS)) return d;
      return {
        desc: ResourceInfoSchema,
        value: create(ResourceInfoSchema, {
          resourceType: clip(ri.resourceType, MAX_ECHO_CHARS),
          resourceName: clip(ri.resourceName, MAX_ECHO_CHARS),
          owner: clip(ri.owner, MAX_ECHO_CHARS),
          description: clip(ri.description, MAX_DESCRIPTION_CHARS),
        }),
      };
    }
    default:
      return d;
  }
}

function detailBytes(d: AnyDetail): number {
  if (!("desc" in d)) return d.value.length;
  try {
    return toBinary(d.desc, create(d.desc, d.value as never) as Message).length;
  } catch {
    return MAX_DETAILS_BYTES + 1;
  }
}

/** Shorthand for one bad field. */
export function badField(field: string, description: string, reason?: string): ConnectError {
  return invalidArgument([reason === undefined ? { field, description } : { field, description, reason }]);
}

function resourceInfo(resourceType: string, resourceName: string, description: string) {
  return {
    desc: ResourceInfoSchema,
    value: create(ResourceInfoSchema, { resourceType, resourceName, description }),
  };
}

/**
 * Client input (names, values) echoed in an error is cut to this many
 * characters, so that an error never grows with the request.
 */
export const MAX_ECHO_CHARS = 200;

/** NOT_FOUND for a named resource. */
export function notFound(resourceType: string, resourceName: string): ConnectError {
  const name = clip(resourceName, MAX_ECHO_CHARS);
  return new ConnectError(`${name} not found`, Code.NotFound, undefined, [
    errorInfo("RESOURCE_NOT_FOUND", { resource: name }),
    resourceInfo(resourceType, name, "not found"),
  ]);
}

/** ALREADY_EXISTS, e.g. a unique field taken. */
export function alreadyExists(
  resourceType: string,
  resourceName: string,
  message: string,
  metadata: Record<string, string> = {},
): ConnectError {
  const name = clip(resourceName, MAX_ECHO_CHARS);
  return new ConnectError(message, Code.AlreadyExists, undefined, [
    errorInfo("RESOURCE_ALREADY_EXISTS", { resource: name, ...metadata }),
    resourceInfo(resourceType, name, message),
  ]);
}

/** FAILED_PRECONDITION with a stable reason, e.g. `LISTING_IN_USE`. */
export function failedPrecondition(
  reason: string,
  message: string,
  metadata: Record<string, string> = {},
): ConnectError {
  return new ConnectError(message, Code.FailedPrecondition, undefined, [errorInfo(reason, metadata)]);
}

/** UNIMPLEMENTED: a feature that is not built yet says so. */
export function unimplemented(what: string): ConnectError {
  return new ConnectError(`${what} is not implemented yet`, Code.Unimplemented, undefined, [
    errorInfo("NOT_IMPLEMENTED", { feature: what }),
  ]);
}

/** Any other canonical error with a reason. */
export function rpcError(
  code: Code,
  reason: string,
  message: string,
  metadata: Record<string, string> = {},
): ConnectError {
  return new ConnectError(message, code, undefined, [errorInfo(reason, metadata)]);
}
