/**
 * protovalidate's patterns on the platform RegExp (src/api/native-regex.ts):
 * every pattern our schemas use is one the native matcher takes, and it
 * matches as RE2 does (code points, anchors, the `(?i)` flag group).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { nativePattern, nativeRegexMatch } from "../../src/api/native-regex.js";

function protoFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? protoFiles(join(dir, e.name)) : e.name.endsWith(".proto") ? [join(dir, e.name)] : [],
  );
}

/** The regular expressions (`pattern` options starting with ^) of the schemas under proto/. */
function schemaPatterns(): string[] {
  const out = new Set<string>();
  for (const file of protoFiles(join(import.meta.dirname, "../../proto"))) {
    for (const m of readFileSync(file, "utf8").matchAll(/pattern\s*[:=]\s*"((?:[^"\\]|\\.)*)"/g)) {
      const pattern = JSON.parse(`"${m[1]}"`) as string;
      if (pattern.startsWith("^")) out.add(pattern);
    }
  }
  return [...out];
}

describe("native regex matcher", () => {
  it("takes every pattern of the schemas", () => {
    const patterns = schemaPatterns();
    expect(patterns.length).toBeGreaterThan(20);
    const refused = patterns.filter((p) => nativePattern(p) === undefined);
    expect(refused).toEqual([]);
  });

  it("matches as RE2: anchors, classes on code points, bounded counts", () => {
    expect(nativeRegexMatch("^projects/[^/]+$", "projects/p1")).toBe(true);
    expect(nativeRegexMatch("^projects/[^/]+$", "projects/p1/x")).toBe(false);
    expect(nativeRegexMatch("^projects/[^/]+$", "xprojects/p1")).toBe(false);
    expect(nativeRegexMatch("^projects/[^/]+$", "projects/\u{1F600}")).toBe(true);
    // One code point, as RE2 counts (two UTF-16 units).
    expect(nativeRegexMatch("^[^/]{1}$", "\u{1F600}")).toBe(true);
    expect(nativeRegexMatch("^\\+[1-9][0-9]{1,14}$", "+61412345678")).toBe(true);
    expect(nativeRegexMatch("^\\+[1-9][0-9]{1,14}$", "+0412345678")).toBe(false);
    expect(nativeRegexMatch("^\\+[1-9][0-9]{1,14}$", "+614123456789012345")).toBe(false);
    expect(nativeRegexMatch("^(projects/[^/]+/regulatoryListings/[^/]+)?$", "")).toBe(true);
  });

  it("turns a leading (?i) into case-insensitive matching", () => {
    expect(nativeRegexMatch("^(?i)https?://", "HTTPS://example.com")).toBe(true);
    expect(nativeRegexMatch("^(?i)https?://", "ftp://example.com")).toBe(false);
  });

  it("refuses what it cannot match with RE2's meaning", () => {
    for (const p of ["^(a+)+$", "^a.b$", "^\\w+$", "^(?P<x>a)$", "^(?=a)", "^[[:alpha:]]$", "^(ab)*$"]) {
      expect(nativePattern(p), p).toBeUndefined();
      expect(() => nativeRegexMatch(p, "a")).toThrow(/not supported/);
    }
  });
});
