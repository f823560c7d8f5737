/**
 * Canonical errors (AIP-193): a code, a message safe to show to callers, and
 * `google.rpc` details — always an ErrorInfo with a stable UPPER_SNAKE reason,
 * plus BadRequest field violations for INVALID_ARGUMENT and ResourceInfo for
 * NOT_FOUND / ALREADY_EXISTS. Domain code throws these; the error interceptor
 * turns anything else into a bare INTERNAL.
 */
import { create } from "@bufbuild/protobuf";
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
