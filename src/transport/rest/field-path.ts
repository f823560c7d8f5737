/**
 * Field paths of a request message (`regulatory_listing.name`,
 * `unsubscriber.phone`), resolved against its descriptor, and the
 * conversion of a URL string (path variable or query value) into the proto3
 * JSON value of a leaf field, so that protobuf-es parses it exactly as it
 * would parse a JSON body.
 */
import { type DescField, type DescMessage, type JsonValue, ScalarType } from "@bufbuild/protobuf";

/**
 * Finds the field named `name` in `desc`, by proto name and, when
 * `jsonNames` is set, by JSON (lowerCamelCase) name too.
 */
export function findField(desc: DescMessage, name: string, jsonNames: boolean): DescField | undefined {
  const byProto = desc.fields.find((f) => f.name === name);
  if (byProto !== undefined || !jsonNames) return byProto;
  return desc.fields.find((f) => f.jsonName === name);
}

/**
 * Resolves a dotted path; every field but the last must be a singular
 * message field. Returns the fields, or a reason when the path does not
 * resolve.
 */
export function resolveFieldPath(
  desc: DescMessage,
  path: readonly string[],
  jsonNames: boolean,
): DescField[] | { error: string } {
  const fields: DescField[] = [];
  let current: DescMessage = desc;
  for (let i = 0; i < path.length; i++) {
    const name = path[i]!;
    const field = findField(current, name, jsonNames);
    if (field === undefined) return { error: `no field ${quote(name)} in ${current.typeName}` };
    fields.push(field);
    if (i < path.length - 1) {
      if (field.fieldKind !== "message") return { error: `${field.name} is not a message field` };
      current = field.message;
    }
  }
  return fields;
}

/** The canonical (proto names) dotted path of resolved fields. */
export function protoPath(fields: readonly DescField[]): string {
  return fields.map((f) => f.name).join(".");
}

/** Wraps a leaf JSON value in objects along the path: `{a: {b: value}}`. */
export function nestJson(fields: readonly DescField[], value: JsonValue): JsonValue {
  let json = value;
  for (let i = fields.length - 1; i >= 0; i--) json = { [fields[i]!.name]: json };
  return json;
}

const STRING_WKT = new Set(["google.protobuf.Timestamp", "google.protobuf.Duration"]);
const WRAPPERS = new Set([
  "google.protobuf.DoubleValue",
  "google.protobuf.FloatValue",
  "google.protobuf.Int64Value",
  "google.protobuf.UInt64Value",
  "google.protobuf.Int32Value",
  "google.protobuf.UInt32Value",
  "google.protobuf.BoolValue",
  "google.protobuf.StringValue",
  "google.protobuf.BytesValue",
]);
const FIELD_MASK = "google.protobuf.FieldMask";

/** Whether a path variable may bind this field: singular, scalar or enum. */
export function isPathLeaf(field: DescField): boolean {
  return field.fieldKind === "scalar" || field.fieldKind === "enum";
}

/**
 * Whether a query parameter may set this field: a scalar or enum (repeated
 * or not), or a singular well-known type with a string form (Timestamp,
 * Duration, FieldMask, wrappers).
 */
export function isQueryLeaf(field: DescField): boolean {
  switch (field.fieldKind) {
    case "scalar":
    case "enum":
      return true;
    case "list":
      return field.listKind === "scalar" || field.listKind === "enum";
    case "message": {
      const t = field.message.typeName;
      return STRING_WKT.has(t) || WRAPPERS.has(t) || t === FIELD_MASK;
    }
    default:
      return false;
  }
}

export class LeafValueError extends Error {
  override name = "LeafValueError";
}

/**
 * The JSON value of a leaf field from its URL string values. Repeated
 * fields take every value; singular ones exactly one (a FieldMask joins its
 * values: `a,b` and `?m=a&m=b` are the same mask).
 */
export function leafJson(field: DescField, values: readonly string[]): JsonValue {
  if (field.fieldKind === "list") {
    if (field.listKind === "scalar") return values.map((v) => scalarJson(field.scalar, v));
    if (field.listKind === "enum") return values.map(enumJson);
    throw new LeafValueError("cannot be set from the URL");
  }
  if (field.fieldKind === "message" && field.message.typeName === FIELD_MASK) {
    return fieldMaskJson(values);
  }
  if (values.length !== 1) throw new LeafValueError("set more than once (not a repeated field)");
  const value = values[0]!;
  switch (field.fieldKind) {
    case "scalar":
      return scalarJson(field.scalar, value);
    case "enum":
      return enumJson(value);
    case "message": {
      const t = field.message.typeName;
      if (STRING_WKT.has(t)) return value;
      const inner = field.message.fields[0];
      if (WRAPPERS.has(t) && inner?.fieldKind === "scalar") return scalarJson(inner.scalar, value);
      throw new LeafValueError("cannot be set from the URL");
    }
    default:
      throw new LeafValueError("cannot be set from the URL");
  }
}

function scalarJson(type: ScalarType, value: string): JsonValue {
  if (type === ScalarType.BOOL) {
    switch (value.toLowerCase()) {
      case "true":
      case "1":
        return true;
      case "false":
      case "0":
        return false;
      default:
        throw new LeafValueError(`expected true or false, got ${quote(value)}`);
    }
  }
  // Proto3 JSON accepts strings for every number type (64-bit ones must be
  // strings), and base64 strings for bytes: protobuf-es checks the rest.
  return value;
}

/** Enum values by name, or by number. */
function enumJson(value: string): JsonValue {
  return /^-?\d+$/.test(value) ? Number(value) : value;
}

/**
 * A FieldMask in the URL is `a,b.c` with proto (snake_case) or JSON
 * (lowerCamelCase) names; its JSON form wants lowerCamelCase.
 */
function fieldMaskJson(values: readonly string[]): JsonValue {
  const paths = values
    .flatMap((v) => v.split(","))
    .map((p) => p.trim())
    .filter((p) => p !== "");
  return paths.map((p) => p.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())).join(",");
}

/** A value quoted for an error message, shortened when long. */
export function quote(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
}
