/**
 * HTTP request -> request message, per google/api/http.proto:
 *
 * 1. the body: `*` is the whole message; a field name is that field; no
 *    body rule means the request must not have one (a non-empty body is
 *    rejected rather than silently dropped);
 * 2. path variables, which win over the same field in the body;
 * 3. query parameters for every field not bound by the path or the body
 *    (none at all with `body: "*"`): nested `a.b`, repeated `?x=1&x=2`,
 *    enums by name or number, well-known types in their JSON string form;
 *    proto and lowerCamelCase names both accepted.
 *
 * Everything is parsed as proto3 JSON by protobuf-es with unknown fields
 * rejected. Every failure is an INVALID_ARGUMENT naming the field.
 */
import {
  create,
  type DescField,
  type DescMessage,
  type DescOneof,
  fromJson,
  type JsonReadOptions,
  type JsonValue,
  type Message,
  mergeFromJson,
  mergeFromJsonString,
  type Registry,
} from "@bufbuild/protobuf";
import { isFieldError, reflect } from "@bufbuild/protobuf/reflect";
import { Code, type ConnectError } from "@connectrpc/connect";
import { invalidArgument, rpcError } from "../../api/errors.js";
import {
  findField,
  isQueryLeaf,
  LeafValueError,
  leafJson,
  nestJson,
  protoPath,
  quote,
  resolveFieldPath,
} from "./field-path.js";
import type { Bindings } from "./path-template.js";
import type { Route } from "./routes.js";

export interface RequestParts {
  bindings: Bindings;
  /** The raw query string, without `?`. */
  query: string;
  /** The raw body; empty when there was none. */
  body: Uint8Array;
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Builds the request message of `route`; throws a ConnectError (INVALID_ARGUMENT). */
export function buildRequest(route: Route, parts: RequestParts, registry: Registry | undefined): Message {
  const schema = route.method.input;
  const options: Partial<JsonReadOptions> = { ignoreUnknownFields: false, registry };
  const message = create(schema);
  mergeBody(route, message, parts.body, options);

  for (const { variable, value } of parts.bindings) {
    const binding = route.pathBindings.find((b) => b.variable === variable)!;
    mergeValue(schema, message, binding.fields, [value], options, "path");
  }

  if (parts.query !== "") {
    // Grouped by field, so `update_mask` and `updateMask` are one parameter.
    const grouped = new Map<string, { fields: DescField[]; values: string[] }>();
    for (const [key, value] of new URLSearchParams(parts.query)) {
      const fields = queryFields(route, key);
      const path = protoPath(fields);
      const group = grouped.get(path);
      if (group === undefined) grouped.set(path, { fields, values: [value] });
      else group.values.push(value);
    }
    for (const { fields, values } of grouped.values()) {
      mergeValue(schema, message, fields, values, options, "query");
    }
  }
  return message;
}

function mergeBody(
  route: Route,
  message: Message,
  body: Uint8Array,
  options: Partial<JsonReadOptions>,
): void {
  const mapping = route.body;
  if (mapping.kind === "none") {
    if (body.length > 0) {
      throw rpcError(
        Code.InvalidArgument,
        "BODY_NOT_ALLOWED",
        "this method takes no request body; pass its fields as query parameters",
      );
    }
    return;
  }
  if (body.length === 0) return;
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw rpcError(Code.InvalidArgument, "INVALID_JSON", "request body is not valid UTF-8");
  }
  if (text.trim() === "") return;
  const schema = route.method.input;
  if (mapping.kind === "all") {
    try {
      mergeFromJsonString(schema, message, text, options);
    } catch (err) {
      throw jsonError(err, schema, text, "", options);
    }
    return;
  }
  const field = mapping.field;
  if (field.fieldKind === "message") {
    const sub = create(field.message);
    try {
      mergeFromJsonString(field.message, sub, text, options);
    } catch (err) {
      throw jsonError(err, field.message, text, field.name, options);
    }
    reflect(schema, message).set(field, reflect(field.message, sub));
    return;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw invalidJson(err);
  }
  try {
    mergeFromJson(schema, message, { [field.name]: json as never }, options);
  } catch (err) {
    throw invalidArgument([{ field: field.name, description: describe(err) }]);
  }
}

/** The fields a query parameter names; throws when it may not set them. */
function queryFields(route: Route, key: string): DescField[] {
  const schema = route.method.input;
  if (route.body.kind === "all") {
    throw invalidArgument([
      {
        field: clip(key),
        description: `query parameter ${quote(key)} is not allowed: the request body carries every field of this method`,
      },
    ]);
  }
  const fields = resolveFieldPath(schema, key.split("."), true);
  if (!Array.isArray(fields)) {
    throw invalidArgument([{ field: clip(key), description: `unknown query parameter: ${fields.error}` }]);
  }
  const path = protoPath(fields);
  if (route.body.kind === "field" && fields[0] === route.body.field) {
    throw invalidArgument([
      { field: path, description: `${path} is in the request body and cannot be set by a query parameter` },
    ]);
  }
  for (const b of route.pathBindings) {
    if (overlaps(b.fields, fields)) {
      throw invalidArgument([
        {
          field: path,
          description: `${path} is bound by the URL path and cannot be set by a query parameter`,
        },
      ]);
    }
  }
  const leaf = fields[fields.length - 1]!;
  if (!isQueryLeaf(leaf)) {
    throw invalidArgument([
      { field: path, description: `${path} cannot be set by a query parameter (not a primitive field)` },
    ]);
  }
  return fields;
}

/** One field path is the other or lies inside it. */
function overlaps(a: readonly DescField[], b: readonly DescField[]): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

function mergeValue(
  schema: DescMessage,
  message: Message,
  fields: DescField[],
  values: string[],
  options: Partial<JsonReadOptions>,
  where: "path" | "query",
): void {
  const path = protoPath(fields);
  try {
    mergeFromJson(schema, message, nestJson(fields, leafJson(fields[fields.length - 1]!, values)), options);
  } catch (err) {
    const what = where === "path" ? "URL path value" : "query parameter";
    throw invalidArgument([{ field: path, description: `invalid ${what}: ${describe(err)}` }]);
  }
}

/** A message for people from a protobuf-es or LeafValueError error. */
function describe(err: unknown): string {
  if (err instanceof LeafValueError) return err.message;
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    if (isFieldError(cause)) return cause.message;
    const badEnum = /^cannot decode enum ([\w.]+) from JSON: (.*)$/.exec(err.message);
    if (badEnum !== null) return `expected ${badEnum[1]}, got ${badEnum[2]}`;
    return err.message.replace(/^cannot decode (message |field )?[\w.]+ from JSON: /, "");
  }
  return "invalid value";
}

function invalidJson(err: unknown): ConnectError {
  const detail = err instanceof Error ? err.message : "syntax error";
  return rpcError(Code.InvalidArgument, "INVALID_JSON", `invalid JSON in request body: ${detail}`);
}

/**
 * The error for a body protobuf-es rejected: bad JSON syntax, or the field
 * path (from `base`, proto names) of the unknown key or bad value.
 */
function jsonError(
  err: unknown,
  desc: DescMessage,
  text: string,
  base: string,
  options: Partial<JsonReadOptions>,
): ConnectError {
  const cause = err instanceof Error ? (err as { cause?: unknown }).cause : undefined;
  if (cause instanceof SyntaxError) return invalidJson(cause);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (syntax) {
    return invalidJson(syntax);
  }
  const message = err instanceof Error ? err.message : "";
  const unknown = /^cannot decode message ([\w.]+) from JSON: key "(.*)" is unknown$/.exec(message);
  if (unknown !== null) {
    const key = unknown[2]!;
    const field = locate(desc, json, base, { unknownKey: key }, 0) ?? joinPath(base, key);
    return invalidArgument([{ field, description: `unknown field ${quote(key)} in ${unknown[1]}` }]);
  }
  if (isFieldError(cause)) {
    const target = cause.field();
    const found = locate(desc, json, base, { target, options }, 0);
    const field = found ?? joinPath(base, target.name);
    return invalidArgument([{ field, description: cause.message }]);
  }
  const badEnum = /^cannot decode enum ([\w.]+) from JSON: (.*)$/.exec(message);
  if (badEnum !== null) {
    const found = locate(desc, json, base, { enumType: badEnum[1]! }, 0);
    return invalidArgument([
      { field: found ?? base, description: `expected ${badEnum[1]}, got ${badEnum[2]}` },
    ]);
  }
  // A well-known type with a bad JSON form (Timestamp, Duration, ...).
  const badMessage = /^cannot decode message ([\w.]+) from JSON/.exec(message);
  const found =
    badMessage === null ? undefined : locate(desc, json, base, { badMessage: badMessage[1]!, options }, 0);
  return invalidArgument([{ field: found ?? base, description: describe(err) }]);
}

type Wanted =
  | { unknownKey: string }
  | { target: DescField | DescOneof; options: Partial<JsonReadOptions> }
  | { enumType: string }
  | { badMessage: string; options: Partial<JsonReadOptions> };

/** Finds where in the JSON the problem protobuf-es reported is, as a field path. */
function locate(
  desc: DescMessage,
  json: unknown,
  path: string,
  wanted: Wanted,
  depth: number,
): string | undefined {
  if (depth > 64 || json === null || typeof json !== "object" || Array.isArray(json)) return undefined;
  if (desc.typeName.startsWith("google.protobuf.")) return undefined;
  const entries = Object.entries(json);
  if ("target" in wanted && wanted.target.parent === desc) {
    // The keys of the field (or oneof) here, checked on their own.
    const target = wanted.target;
    const subset = entries.filter(([key]) => {
      const f = findField(desc, key, true);
      return f !== undefined && (f === target || f.oneof === target);
    });
    if (subset.length > 0 && !decodes(desc, Object.fromEntries(subset), wanted.options)) {
      return joinPath(path, target.name);
    }
  }
  for (const [key, value] of entries) {
    const field = findField(desc, key, true);
    if (field === undefined) {
      if ("unknownKey" in wanted && key === wanted.unknownKey) return joinPath(path, key);
      continue;
    }
    const fieldPath = joinPath(path, field.name);
    if ("enumType" in wanted && field.enum?.typeName === wanted.enumType && hasUnknownName(field, value)) {
      return fieldPath;
    }
    if ("badMessage" in wanted && field.message?.typeName === wanted.badMessage) {
      const bad = firstUndecodable(field, value, fieldPath, wanted.options);
      if (bad !== undefined) return bad;
    }
    const found = locateIn(field, value, fieldPath, wanted, depth);
    if (found !== undefined) return found;
  }
  return undefined;
}

function locateIn(
  field: DescField,
  value: unknown,
  path: string,
  wanted: Wanted,
  depth: number,
): string | undefined {
  if (field.fieldKind === "message") return locate(field.message, value, path, wanted, depth + 1);
  if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = locate(field.message, value[i], `${path}[${i}]`, wanted, depth + 1);
      if (found !== undefined) return found;
    }
  }
  if (
    field.fieldKind === "map" &&
    field.mapKind === "message" &&
    value !== null &&
    typeof value === "object"
  ) {
    for (const [k, v] of Object.entries(value)) {
      const found = locate(field.message, v, `${path}[${JSON.stringify(k)}]`, wanted, depth + 1);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** The path of the first value of a message field (singular, list or map) that does not decode. */
function firstUndecodable(
  field: DescField,
  value: unknown,
  path: string,
  options: Partial<JsonReadOptions>,
): string | undefined {
  const desc = field.message;
  if (desc === undefined) return undefined;
  const fails = (v: unknown) => !decodes(desc, v, options);
  if (field.fieldKind === "list" && Array.isArray(value)) {
    const i = value.findIndex(fails);
    return i < 0 ? undefined : `${path}[${i}]`;
  }
  if (field.fieldKind === "map" && value !== null && typeof value === "object") {
    const entry = Object.entries(value).find(([, v]) => fails(v));
    return entry === undefined ? undefined : `${path}[${JSON.stringify(entry[0])}]`;
  }
  return fails(value) ? path : undefined;
}

function decodes(desc: DescMessage, json: unknown, options: Partial<JsonReadOptions>): boolean {
  try {
    fromJson(desc, json as JsonValue, options);
    return true;
  } catch {
    return false;
  }
}

/** The JSON of an enum field (singular, list or map values) has a name the enum lacks. */
function hasUnknownName(field: DescField, value: unknown): boolean {
  const values = field.enum!.values;
  const unknown = (v: unknown) => typeof v === "string" && !values.some((e) => e.name === v);
  if (Array.isArray(value)) return value.some(unknown);
  if (value !== null && typeof value === "object") return Object.values(value).some(unknown);
  return unknown(value);
}

function joinPath(base: string, name: string): string {
  return clip(base === "" ? name : `${base}.${name}`);
}

/** Client-chosen names in error details are kept short. */
function clip(s: string): string {
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}
