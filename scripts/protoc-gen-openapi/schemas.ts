/**
 * Proto types -> JSON Schema (OpenAPI 3.1 dialect) in their proto3 JSON
 * form: lowerCamelCase json names, 64-bit integers as decimal strings, enums
 * by name, bytes as base64, maps as objects, well-known types in their JSON
 * forms. Messages and enums become components (`#/components/schemas/<full
 * name>`), well-known types are inlined. Comments become descriptions,
 * `google.api.field_behavior` becomes `required` / `readOnly` / `writeOnly`,
 * and `buf.validate` rules the matching JSON Schema keywords.
 */
import {
  type DescEnum,
  type DescExtension,
  type DescField,
  type DescMessage,
  getOption,
  hasOption,
  type Registry,
  ScalarType,
} from "@bufbuild/protobuf";
import { getComments } from "@bufbuild/protoplugin";

export type Schema = { [key: string]: unknown };

/** google.api.FieldBehavior numbers (google/api/field_behavior.proto). */
export const FieldBehavior = {
  REQUIRED: 2,
  OUTPUT_ONLY: 3,
  INPUT_ONLY: 4,
  IMMUTABLE: 5,
} as const;

/** The custom options the generator reads, found by name in the request's files. */
export interface Extensions {
  http: DescExtension | undefined;
  fieldBehavior: DescExtension | undefined;
  validateField: DescExtension | undefined;
  validateOneof: DescExtension | undefined;
}

export function findExtensions(registry: Registry): Extensions {
  return {
    http: registry.getExtension("google.api.http"),
    fieldBehavior: registry.getExtension("google.api.field_behavior"),
    validateField: registry.getExtension("buf.validate.field"),
    validateOneof: registry.getExtension("buf.validate.oneof"),
  };
}

/** Leading comments of an element, without `(-- internal --)` notes, or undefined. */
export function describe(desc: Parameters<typeof getComments>[0]): string | undefined {
  const raw = getComments(desc).leading;
  if (raw === undefined) return undefined;
  const text = raw
    .replace(/\(--[\s\S]*?--\)/g, "")
    .split("\n")
    .map((line) => (line.startsWith(" ") ? line.slice(1) : line))
    .join("\n")
    .trim();
  return text === "" ? undefined : text;
}

export function fieldBehaviors(field: DescField, ext: Extensions): number[] {
  if (ext.fieldBehavior === undefined || !hasOption(field, ext.fieldBehavior)) return [];
  const value = getOption(field, ext.fieldBehavior) as unknown;
  return Array.isArray(value) ? (value as number[]) : [];
}

const INT64 = /^-?[0-9]+$/.source;
const UINT64 = /^[0-9]+$/.source;

/** The JSON form of a scalar. */
export function scalarSchema(type: ScalarType): Schema {
  switch (type) {
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
    case ScalarType.FLOAT:
      return { type: "number", format: "float" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "uint32", minimum: 0 };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { type: "string", format: "int64", pattern: INT64 };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "string", format: "uint64", pattern: UINT64 };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BYTES:
      return { type: "string", format: "byte", contentEncoding: "base64" };
  }
}

function nullable(schema: Schema): Schema {
  return { ...schema, type: [schema.type, "null"] };
}

/** Well-known types with a JSON form of their own, inlined wherever they are used. */
export function wellKnownSchema(typeName: string): Schema | undefined {
  switch (typeName) {
    case "google.protobuf.Timestamp":
      return {
        type: "string",
        format: "date-time",
        description: "RFC 3339 timestamp, e.g. `2026-01-02T03:04:05.678Z`.",
      };
    case "google.protobuf.Duration":
      return {
        type: "string",
        pattern: /^-?[0-9]+(\.[0-9]{1,9})?s$/.source,
        description: "Duration in seconds with an `s` suffix, e.g. `1.5s`.",
      };
    case "google.protobuf.FieldMask":
      return {
        type: "string",
        description: "Field mask: comma-separated field paths in lowerCamelCase, e.g. `displayName,labels`.",
      };
    case "google.protobuf.Struct":
      return { type: "object", additionalProperties: true };
    case "google.protobuf.Value":
      return { description: "Any JSON value." };
    case "google.protobuf.ListValue":
      return { type: "array", items: {} };
    case "google.protobuf.Empty":
      return { type: "object", description: "Empty: `{}`." };
    case "google.protobuf.Any":
      return {
        type: "object",
        description: "A message of any type: `@type` (`type.googleapis.com/<full name>`) and its fields.",
        properties: { "@type": { type: "string" } },
        required: ["@type"],
        additionalProperties: true,
      };
    case "google.protobuf.DoubleValue":
      return nullable(scalarSchema(ScalarType.DOUBLE));
    case "google.protobuf.FloatValue":
      return nullable(scalarSchema(ScalarType.FLOAT));
    case "google.protobuf.Int64Value":
      return nullable(scalarSchema(ScalarType.INT64));
    case "google.protobuf.UInt64Value":
      return nullable(scalarSchema(ScalarType.UINT64));
    case "google.protobuf.Int32Value":
      return nullable(scalarSchema(ScalarType.INT32));
    case "google.protobuf.UInt32Value":
      return nullable(scalarSchema(ScalarType.UINT32));
    case "google.protobuf.BoolValue":
      return nullable(scalarSchema(ScalarType.BOOL));
    case "google.protobuf.StringValue":
      return nullable(scalarSchema(ScalarType.STRING));
    case "google.protobuf.BytesValue":
      return nullable(scalarSchema(ScalarType.BYTES));
    default:
      return undefined;
  }
}

export function ref(typeName: string): Schema {
  return { $ref: `#/components/schemas/${typeName}` };
}

/**
 * Builds component schemas on demand: `message()` / `enumRef()` return a
 * reference and queue the type; `components()` has every type reached.
 */
export class SchemaBuilder {
  private readonly schemas = new Map<string, Schema>();

  constructor(private readonly ext: Extensions) {}

  components(): Record<string, Schema> {
    return Object.fromEntries([...this.schemas.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }

  /** The schema of a message (a reference, or the inline well-known form). */
  message(desc: DescMessage): Schema {
    const wkt = wellKnownSchema(desc.typeName);
    if (wkt !== undefined) return wkt;
    if (!this.schemas.has(desc.typeName)) {
      this.schemas.set(desc.typeName, {}); // placeholder: cycles end here
      this.schemas.set(desc.typeName, this.messageBody(desc));
    }
    return ref(desc.typeName);
  }

  enumRef(desc: DescEnum): Schema {
    if (desc.typeName === "google.protobuf.NullValue") return { type: "null" };
    if (!this.schemas.has(desc.typeName)) this.schemas.set(desc.typeName, this.enumBody(desc));
    return ref(desc.typeName);
  }

  /** The full object schema of a message, optionally without some top-level fields. */
  messageBody(desc: DescMessage, omit: ReadonlySet<DescField> = new Set()): Schema {
    const properties: Record<string, Schema> = {};
    const required: string[] = [];
    for (const field of desc.fields) {
      if (omit.has(field)) continue;
      const { schema, isRequired } = this.field(field);
      properties[field.jsonName] = schema;
      if (isRequired) required.push(field.jsonName);
    }
    const out: Schema = { type: "object" };
    const description = describe(desc);
    if (description !== undefined) out.description = description;
    out.properties = properties;
    if (required.length > 0) out.required = required;
    return out;
  }

  private enumBody(desc: DescEnum): Schema {
    const lines = desc.values
      .map((v) => {
        const d = describe(v);
        return d === undefined ? undefined : `- \`${v.name}\`: ${d.replace(/\s*\n\s*/g, " ")}`;
      })
      .filter((l) => l !== undefined);
    const description = [describe(desc), lines.join("\n")].filter((s) => s).join("\n\n");
    const out: Schema = { type: "string", enum: desc.values.map((v) => v.name) };
    if (description !== "") out.description = description;
    return out;
  }

  /** The schema of a field's value, ignoring its annotations. */
  private valueSchema(field: DescField): Schema {
    switch (field.fieldKind) {
      case "scalar":
        return scalarSchema(field.scalar);
      case "enum":
        return this.enumRef(field.enum);
      case "message":
        return this.message(field.message);
      case "list": {
        const items =
          field.listKind === "scalar"
            ? scalarSchema(field.scalar)
            : field.listKind === "enum"
              ? this.enumRef(field.enum)
              : this.message(field.message);
        return { type: "array", items };
      }
      case "map": {
        const values =
          field.mapKind === "scalar"
            ? scalarSchema(field.scalar)
            : field.mapKind === "enum"
              ? this.enumRef(field.enum)
              : this.message(field.message);
        const out: Schema = { type: "object", additionalProperties: values };
        const key = scalarSchema(field.mapKey);
        if (key.type === "integer" || key.format === "int64" || key.format === "uint64") {
          out.propertyNames = { pattern: INT64 };
        } else if (key.type === "boolean") {
          out.propertyNames = { enum: ["true", "false"] };
        }
        return out;
      }
    }
  }

  /** A field's schema with its description, behaviors and validation rules. */
  field(field: DescField): { schema: Schema; isRequired: boolean } {
    const schema: Schema = { ...this.valueSchema(field) };
    const notes: string[] = [];
    const behaviors = fieldBehaviors(field, this.ext);
    let isRequired = behaviors.includes(FieldBehavior.REQUIRED);
    if (behaviors.includes(FieldBehavior.OUTPUT_ONLY)) schema.readOnly = true;
    if (behaviors.includes(FieldBehavior.INPUT_ONLY)) schema.writeOnly = true;
    if (behaviors.includes(FieldBehavior.IMMUTABLE)) schema["x-immutable"] = true;
    const rules = validateRules(field, this.ext);
    if (rules !== undefined) {
      if (rules.required === true) isRequired = true;
      applyRules(schema, field, rules, notes);
    }
    // (Synthetic oneofs of proto3 `optional` fields are not listed in message.oneofs.)
    if (field.oneof !== undefined && field.parent.oneofs.includes(field.oneof)) {
      const others = field.oneof.fields.filter((f) => f !== field).map((f) => `\`${f.jsonName}\``);
      if (others.length > 0) notes.push(`At most one of this field and ${others.join(", ")} may be set.`);
    }
    const description = [describe(field), ...notes].filter((s) => s).join("\n\n");
    if (description !== "") schema.description = mergeDescription(schema.description, description);
    return { schema, isRequired };
  }
}

function mergeDescription(inherited: unknown, own: string): string {
  // A well-known type's own note (e.g. the Duration format) follows the field's comment.
  return typeof inherited === "string" ? `${own}\n\n${inherited}` : own;
}

// --- buf.validate ---------------------------------------------------------

/** The parts of buf.validate.FieldRules the generator maps (protobuf-es message shape). */
interface FieldRules {
  required?: boolean;
  ignore?: number;
  cel?: Array<{ id?: string; message?: string; expression?: string }>;
  type: { case: string | undefined; value?: Record<string, unknown> };
}

const IGNORE_ALWAYS = 3;

function validateRules(field: DescField, ext: Extensions): FieldRules | undefined {
  if (ext.validateField === undefined || !hasOption(field, ext.validateField)) return undefined;
  const rules = getOption(field, ext.validateField) as unknown as FieldRules;
  if (rules.ignore === IGNORE_ALWAYS) return undefined;
  return rules;
}

function num(v: unknown): number | undefined {
  if (typeof v === "bigint") return Number(v);
  if (typeof v === "number") return v;
  return undefined;
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/**
 * An RE2 pattern (protovalidate's dialect) as an ECMAScript one (JSON
 * Schema's): `\A` / `\z` anchors, `(?P<name>` groups, and a leading `(?i)`
 * spelled out as case pairs (`[hH]`); undefined when the result still does
 * not compile.
 */
export function ecmaPattern(re2: string): string | undefined {
  let p = re2
    .replace(/\\A/g, "^")
    .replace(/\\z/g, "$")
    .replace(/\(\?P</g, "(?<");
  const flag = /^(\^?)\(\?i\)/.exec(p);
  if (flag !== null) p = flag[1] + caseless(p.slice(flag[0].length));
  try {
    new RegExp(p, "u");
    return p;
  } catch {
    return undefined;
  }
}

function swapCase(c: string): string {
  const lower = c.toLowerCase();
  return c === lower ? c.toUpperCase() : lower;
}

/** Every letter of `p` matching either case, outside and inside character classes. */
function caseless(p: string): string {
  let out = "";
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === "\\") {
      out += c + (p[i + 1] ?? "");
      i++;
    } else if (c === "[") {
      const end = p.indexOf("]", i + 2);
      if (end < 0) return p;
      const body = p.slice(i + 1, end);
      let extra = "";
      for (const m of body.matchAll(/([A-Za-z])-([A-Za-z])|\\.|([A-Za-z])/g)) {
        if (m[1] !== undefined && m[2] !== undefined) extra += `${swapCase(m[1])}-${swapCase(m[2])}`;
        else if (m[3] !== undefined) extra += swapCase(m[3]);
      }
      out += `[${body}${extra}]`;
      i = end;
    } else if (/[A-Za-z]/.test(c)) {
      out += `[${c}${swapCase(c)}]`;
    } else {
      out += c;
    }
  }
  return out;
}

const STRING_FORMATS: Record<string, string> = {
  email: "email",
  hostname: "hostname",
  ipv4: "ipv4",
  ipv6: "ipv6",
  uri: "uri",
  uriRef: "uri-reference",
  uuid: "uuid",
};

/**
 * Writes the JSON Schema equivalents of `rules` into `schema` (the field's
 * schema; for lists and maps, `items` / `additionalProperties` get the
 * element rules). What JSON Schema cannot say goes to `notes`.
 */
function applyRules(schema: Schema, field: DescField, rules: FieldRules, notes: string[]): void {
  for (const rule of rules.cel ?? []) {
    if (rule.message) notes.push(`Rule: ${rule.message}`);
  }
  const kind = rules.type.case;
  // Unset proto2 fields of the rules read their defaults from the
  // prototype: only own properties were in the proto.
  const value = rules.type.value ?? {};
  const r: Record<string, unknown> = Object.fromEntries(Object.keys(value).map((k) => [k, value[k]]));
  if (kind === undefined) return;
  if (kind === "repeated") {
    const min = num(r.minItems);
    const max = num(r.maxItems);
    if (min !== undefined) schema.minItems = min;
    if (max !== undefined) schema.maxItems = max;
    if (r.unique === true) schema.uniqueItems = true;
    const items = r.items as FieldRules | undefined;
    if (items !== undefined && typeof schema.items === "object" && schema.items !== null) {
      const element = { ...(schema.items as Schema) };
      applyRules(element, field, items, notes);
      schema.items = element;
    }
    return;
  }
  if (kind === "map") {
    const min = num(r.minPairs);
    const max = num(r.maxPairs);
    if (min !== undefined) schema.minProperties = min;
    if (max !== undefined) schema.maxProperties = max;
    const keys = r.keys as FieldRules | undefined;
    if (keys !== undefined) {
      const names: Schema = { type: "string", ...((schema.propertyNames as Schema | undefined) ?? {}) };
      applyRules(names, field, keys, notes);
      delete names.type;
      schema.propertyNames = names;
    }
    const values = r.values as FieldRules | undefined;
    if (values !== undefined && typeof schema.additionalProperties === "object") {
      const v = { ...(schema.additionalProperties as Schema) };
      applyRules(v, field, values, notes);
      schema.additionalProperties = v;
    }
    return;
  }
  if (kind === "string") {
    const len = num(r.len);
    const min = num(r.minLen) ?? len;
    const max = num(r.maxLen) ?? len;
    if (min !== undefined) schema.minLength = min;
    if (max !== undefined) schema.maxLength = max;
    if (typeof r.const === "string") schema.const = r.const;
    if (Array.isArray(r.in) && r.in.length > 0) schema.enum = r.in;
    const patterns: string[] = [];
    if (typeof r.pattern === "string") patterns.push(r.pattern);
    if (typeof r.prefix === "string") patterns.push(`^${escapeRegex(r.prefix)}`);
    if (typeof r.suffix === "string") patterns.push(`${escapeRegex(r.suffix)}$`);
    if (typeof r.contains === "string") patterns.push(escapeRegex(r.contains));
    const ecma: string[] = [];
    for (const p of patterns) {
      const converted = ecmaPattern(p);
      if (converted !== undefined) ecma.push(converted);
      else notes.push(`Must match the RE2 expression \`${p}\`.`);
    }
    if (ecma.length === 1) schema.pattern = ecma[0];
    else if (ecma.length > 1) schema.allOf = ecma.map((pattern) => ({ pattern }));
    const wk = (r.wellKnown ?? { case: undefined }) as { case: string | undefined; value?: unknown };
    if (wk.case !== undefined && wk.value === true) {
      const format = STRING_FORMATS[wk.case];
      if (format !== undefined) schema.format = format;
      else notes.push(`Must be a valid ${wk.case.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`)}.`);
    }
    const maxBytes = num(r.maxBytes);
    if (maxBytes !== undefined) notes.push(`At most ${maxBytes} bytes (UTF-8).`);
    return;
  }
  if (kind === "enum") {
    const values = field.enum?.values ?? [];
    const names = (nums: unknown) =>
      Array.isArray(nums) ? values.filter((v) => nums.includes(v.number)).map((v) => v.name) : [];
    if (typeof r.const === "number") schema.const = values.find((v) => v.number === r.const)?.name;
    const allowed = names(r.in);
    if (allowed.length > 0) schema.enum = allowed;
    const refused = names(r.notIn);
    if (refused.length > 0) schema.not = { enum: refused };
    return;
  }
  if (kind === "bytes") {
    const min = num(r.minLen) ?? num(r.len);
    const max = num(r.maxLen) ?? num(r.len);
    if (min !== undefined) notes.push(`At least ${min} bytes.`);
    if (max !== undefined) notes.push(`At most ${max} bytes.`);
    return;
  }
  if (kind === "duration" || kind === "timestamp" || kind === "fieldMask" || kind === "any") return;
  // Numbers: lt/lte/gt/gte/const/in.
  const lt = r.lessThan as { case: string | undefined; value?: unknown } | undefined;
  const gt = r.greaterThan as { case: string | undefined; value?: unknown } | undefined;
  const asString = schema.type === "string"; // 64-bit integers travel as strings
  const limits: Array<[string, number | undefined, string]> = [
    ["exclusiveMaximum", lt?.case === "lt" ? num(lt.value) : undefined, "less than"],
    ["maximum", lt?.case === "lte" ? num(lt.value) : undefined, "at most"],
    ["exclusiveMinimum", gt?.case === "gt" ? num(gt.value) : undefined, "greater than"],
    ["minimum", gt?.case === "gte" ? num(gt.value) : undefined, "at least"],
  ];
  for (const [keyword, value, words] of limits) {
    if (value === undefined) continue;
    // JSON Schema bounds apply to numbers only: for a 64-bit integer (a
    // string in JSON) the bound is written out instead.
    if (asString) notes.push(`Must be ${words} ${value}.`);
    else schema[keyword] = value;
  }
  const c = num(r.const);
  if (c !== undefined) schema.const = asString ? String(c) : c;
  if (Array.isArray(r.in) && r.in.length > 0) {
    schema.enum = r.in.map((v) => (asString ? String(v) : num(v)));
  }
}
