/**
 * Labels (`map<string, string>`) as the interface document limits them:
 * at most 50 keys, keys 1 to 100 characters, values at most 1000. The proto
 * carries the same rules for protovalidate; this is the domain's own check,
 * for resources created by the service itself (an incoming STOP message).
 * Lengths count characters (Unicode code points), as protovalidate does.
 */
import type { FieldViolation } from "./errors.js";

export const MAX_LABELS = 50;
export const MAX_LABEL_KEY_LENGTH = 100;
export const MAX_LABEL_VALUE_LENGTH = 1000;

export function charLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

export function labelViolations(labels: Readonly<Record<string, string>>, field: string): FieldViolation[] {
  const violations: FieldViolation[] = [];
  const keys = Object.keys(labels);
  if (keys.length > MAX_LABELS) {
    violations.push({ field, description: `at most ${MAX_LABELS} labels`, reason: "map.max_pairs" });
  }
  for (const key of keys) {
    const at = `${field}[${JSON.stringify(key)}]`;
    const keyLength = charLength(key);
    if (keyLength < 1 || keyLength > MAX_LABEL_KEY_LENGTH) {
      violations.push({
        field: at,
        description: `key must be 1 to ${MAX_LABEL_KEY_LENGTH} characters`,
        reason: "string.max_len",
      });
    }
    if (charLength(labels[key]!) > MAX_LABEL_VALUE_LENGTH) {
      violations.push({
        field: at,
        description: `value must be at most ${MAX_LABEL_VALUE_LENGTH} characters`,
        reason: "string.max_len",
      });
    }
  }
  return violations;
}
