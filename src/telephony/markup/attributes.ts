/**
 * Typed, validated reading of an element's attributes. Names are case-insensitive; unknown
 * attributes are ignored (forward compatibility); an attribute given twice (in any spelling)
 * is an error, as is any value outside its type or range.
 */
import type { DtmfKey, PostProcessing } from "./types.js";
import { checkUriReference } from "./uri.js";
import { MarkupError, quote, shortName, type XmlElement } from "./xml.js";

const DTMF_KEYS: readonly string[] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "*", "#"];
const E164 = /^\+[1-9][0-9]{1,14}$/;
const INTEGER = /^[0-9]{1,9}$/;

export function isDtmfKey(value: string): value is DtmfKey {
  return DTMF_KEYS.includes(value);
}

export function isE164(value: string): boolean {
  return E164.test(value);
}

export class Attributes {
  private readonly values = new Map<string, string>();

  /** `element` is the canonical element name used in messages. */
  constructor(
    readonly element: string,
    node: XmlElement,
  ) {
    for (const [name, value] of node.attributes) {
      const key = name.toLowerCase();
      if (this.values.has(key)) {
        throw new MarkupError(
          "MARKUP_INVALID_ATTRIBUTE",
          `<${element}> has the attribute ${quote(name)} more than once (names are case-insensitive)`,
          element,
          shortName(name),
        );
      }
      this.values.set(key, value);
    }
  }

  /** Raw value (as written, entities decoded) or undefined when absent. */
  raw(name: string): string | undefined {
    return this.values.get(name.toLowerCase());
  }

  /** All attributes, lower-cased names (for unsupported actions). */
  all(): Record<string, string> {
    // fromEntries defines own properties, so a name like "__proto__" cannot reach the prototype.
    return Object.fromEntries(this.values);
  }

  invalid(name: string, value: string, allowed: string): MarkupError {
    return new MarkupError(
      "MARKUP_INVALID_ATTRIBUTE",
      `<${this.element}> attribute ${name}=${quote(value)} is invalid: ${allowed}`,
      this.element,
      name,
    );
  }

  /** An integer in [min, max]; surrounding whitespace tolerated; no sign, fraction or exponent. */
  optionalInt(name: string, min: number, max: number): number | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    const trimmed = value.trim();
    const n = INTEGER.test(trimmed) ? Number(trimmed) : Number.NaN;
    if (!(n >= min && n <= max)) throw this.invalid(name, value, `expected an integer from ${min} to ${max}`);
    return n;
  }

  int(name: string, min: number, max: number, fallback: number): number {
    return this.optionalInt(name, min, max) ?? fallback;
  }

  /** `true` / `false`, case-insensitive. */
  bool(name: string, fallback: boolean): boolean {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const lower = value.trim().toLowerCase();
    if (lower === "true") return true;
    if (lower === "false") return false;
    throw this.invalid(name, value, "expected true or false");
  }

  /** One of `allowed`, matched case-insensitively, returned in its canonical spelling. */
  optionalEnum<T extends string>(name: string, allowed: readonly T[]): T | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    const lower = value.trim().toLowerCase();
    const found = allowed.find((a) => a.toLowerCase() === lower);
    if (found === undefined) throw this.invalid(name, value, `expected one of ${allowed.join(", ")}`);
    return found;
  }

  enum<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    return this.optionalEnum(name, allowed) ?? fallback;
  }

  /** An absolute http(s) URL or a relative reference (returned unresolved). */
  uri(name: string): string | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    const trimmed = value.trim();
    const problem = checkUriReference(trimmed);
    if (problem !== undefined) {
      throw this.invalid(
        name,
        value,
        `expected an absolute http(s) URL or a relative reference (${problem})`,
      );
    }
    return trimmed;
  }

  /** A single DTMF key: 0-9, * or #. */
  key(name: string): DtmfKey | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    const trimmed = value.trim();
    if (!isDtmfKey(trimmed)) throw this.invalid(name, value, "expected one key of 0-9, * or #");
    return trimmed;
  }

  /** A phone number in E.164 form, `+` and 2 to 15 digits. */
  e164(name: string): string | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    const trimmed = value.trim();
    if (!isE164(trimmed)) throw this.invalid(name, value, "expected an E.164 number such as +61255501234");
    return trimmed;
  }

  /** A short token matching `pattern`. */
  token(name: string, pattern: RegExp, description: string): string | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    const trimmed = value.trim();
    if (!pattern.test(trimmed)) throw this.invalid(name, value, `expected ${description}`);
    return trimmed;
  }

  /** A comma- or space-separated list of PostProcessing values (each `trim-silence`); default empty. */
  postProcessing(name: string): PostProcessing[] {
    const value = this.raw(name);
    if (value === undefined) return [];
    const items = value
      .split(/[\s,]+/)
      .map((s) => s.toLowerCase())
      .filter((s) => s !== "");
    const out: PostProcessing[] = [];
    if (items.length === 0) throw this.invalid(name, value, "expected trim-silence");
    for (const item of items) {
      if (item !== "trim-silence") throw this.invalid(name, value, "expected trim-silence");
      if (!out.includes(item)) out.push(item);
    }
    return out;
  }
}
