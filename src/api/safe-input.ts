/**
 * Input the database cannot store, caught before any handler runs: one
 * generic rule over the whole request message instead of a check per field.
 *
 * - strings (singular, repeated, map keys and values, in nested messages at
 *   any depth) must not contain NUL (U+0000), which PostgreSQL's text types
 *   refuse ("invalid byte sequence for encoding UTF8: 0x00"), and must be
 *   well-formed UTF-16 (no lone surrogates, which cannot be encoded as
 *   UTF-8 and would be stored as U+FFFD);
 * - google.protobuf.Timestamp values must lie in the range the type
 *   documents (0001-01-01 to 9999-12-31, nanos 0-999,999,999), which
 *   PostgreSQL's timestamptz can hold; proto3 JSON enforces it, the binary
 *   format does not.
 *
 * Each violation names the field by its proto path, as protovalidate's do:
 * `labels["env"]`, `regulatory_listing.address.address_lines[2]`.
 */
import type { DescField, DescMessage, Message } from "@bufbuild/protobuf";
import type { FieldViolation } from "./errors.js";

/** Seconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z. */
const MIN_SECONDS = -62_135_596_800n;
const MAX_SECONDS = 253_402_300_799n;

/** The most violations one request reports (the error keeps 25 anyway). */
const MAX_REPORTED = 25;

/** Deeper messages than this are not walked (protobuf-es itself limits nesting). */
const MAX_DEPTH = 100;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `s` cannot be stored, or undefined when it can. */
export function unsafeText(s: string): string | undefined {
  if (s.includes("\u0000")) return "must not contain NUL (U+0000) characters";
  if (LONE_SURROGATE.test(s)) return "must be valid UTF-8 text (it contains an unpaired surrogate)";
  return undefined;
}

/** Whether `s` can be stored in a text column (no NUL, well-formed). */
export function isStorableText(s: string): boolean {
  return unsafeText(s) === undefined;
}

/** The violations of `message`: strings the database cannot store, timestamps out of range. */
export function unsafeInput(desc: DescMessage, message: Message): FieldViolation[] {
  const out: FieldViolation[] = [];
  walkMessage(desc, message as unknown as Record<string, unknown>, "", out, 0);
  return out;
}

type Obj = Record<string, unknown>;

function walkMessage(desc: DescMessage, m: Obj, path: string, out: FieldViolation[], depth: number): void {
  if (depth > MAX_DEPTH) return;
  if (desc.typeName === "google.protobuf.Timestamp") {
    checkTimestamp(m, path, out);
    return;
  }
  for (const field of desc.fields) {
    if (out.length >= MAX_REPORTED) return;
    let value: unknown;
    if (field.oneof === undefined) {
      value = m[field.localName];
    } else {
      const o = m[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
      if (o?.case !== field.localName) continue;
      value = o.value;
    }
    if (value === undefined || value === null) continue;
    walkField(field, value, join(path, field.name), out, depth);
  }
}

function walkField(
  field: DescField,
  value: unknown,
  path: string,
  out: FieldViolation[],
  depth: number,
): void {
  switch (field.fieldKind) {
    case "scalar":
      if (typeof value === "string") checkText(value, path, out);
      return;
    case "enum":
      return;
    case "message":
      walkMessage(field.message, value as Obj, path, out, depth + 1);
      return;
    case "list": {
      const list = value as unknown[];
      for (let i = 0; i < list.length && out.length < MAX_REPORTED; i++) {
        const item = list[i];
        if (field.listKind === "message")
          walkMessage(field.message, item as Obj, `${path}[${i}]`, out, depth + 1);
        else if (typeof item === "string") checkText(item, `${path}[${i}]`, out);
      }
      return;
    }
    case "map": {
      for (const [key, item] of Object.entries(value as Obj)) {
        if (out.length >= MAX_REPORTED) return;
        const keyPath = `${path}[${quoteKey(key)}]`;
        const bad = unsafeText(key);
        if (bad !== undefined)
          out.push({ field: keyPath, description: `key ${bad}`, reason: "string.storable" });
        if (field.mapKind === "message") walkMessage(field.message, item as Obj, keyPath, out, depth + 1);
        else if (typeof item === "string") checkText(item, keyPath, out);
      }
      return;
    }
  }
}

function checkText(s: string, path: string, out: FieldViolation[]): void {
  const bad = unsafeText(s);
  if (bad !== undefined) out.push({ field: path, description: `value ${bad}`, reason: "string.storable" });
}

function checkTimestamp(m: Obj, path: string, out: FieldViolation[]): void {
  const seconds = BigInt((m.seconds as bigint | number | undefined) ?? 0);
  const nanos = Number(m.nanos ?? 0);
  if (seconds < MIN_SECONDS || seconds > MAX_SECONDS || nanos < 0 || nanos > 999_999_999) {
    out.push({
      field: path || "timestamp",
      description: "timestamp must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z",
      reason: "timestamp.range",
    });
  }
}

function join(path: string, name: string): string {
  return path === "" ? name : `${path}.${name}`;
}

/** A map key as it appears in a field path: quoted, control characters and surrogates escaped, short. */
function quoteKey(key: string): string {
  const shown = key.length > 64 ? `${key.slice(0, 63)}…` : key;
  return JSON.stringify(shown);
}

/** Whether `s` contains a C0 control character or DEL (U+0000-U+001F, U+007F). */
export function hasControlCharacters(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}
