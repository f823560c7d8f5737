/**
 * protovalidate's regular expressions on the platform's RegExp instead of
 * its RE2 port (a JavaScript RE2, several times slower: most of a request's
 * validation time went to it), for the patterns our schemas use: anchored,
 * made of literals, character classes, groups, alternation and quantifiers,
 * with no quantifier other than `?` on a group. For those, RegExp with the
 * `u` flag (code points, as RE2) matches exactly what RE2 matches, and in
 * linear time (no nested repetition to backtrack over). A leading RE2 flag
 * group `(?i)` becomes the `i` flag.
 *
 * Any other pattern is refused loudly (an error, so INTERNAL), never
 * matched with different semantics: the schemas are ours, and a test checks
 * that each of their patterns is one this accepts.
 */
import type { createValidator } from "@bufbuild/protovalidate";

type RegexMatcher = NonNullable<NonNullable<Parameters<typeof createValidator>[0]>["regexMatch"]>;

/** `(` not followed by `?`; escapes of punctuation only; no `.`; groups quantified by `?` only. */
function isSimple(source: string): boolean {
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === "\\") {
      const next = source[i + 1];
      if (next === undefined || /[A-Za-z0-9]/.test(next)) return false;
      i++;
      continue;
    }
    if (inClass) {
      if (c === "[") return false; // POSIX classes, nested sets
      if (c === "]") inClass = false;
      continue;
    }
    switch (c) {
      case "[":
        inClass = true;
        break;
      case "(":
        if (source[i + 1] === "?") return false;
        break;
      case ")": {
        const q = source[i + 1];
        if (q === "*" || q === "+" || q === "{") return false;
        break;
      }
      case ".":
        return false;
    }
  }
  return !inClass;
}

/**
 * Patterns with a repeated group, checked by hand to match in linear time:
 * each repetition starts with a character nothing else in it matches, so
 * there is one way to split the input and nothing to backtrack over.
 */
const VETTED: ReadonlySet<string> = new Set([
  // permission names (`numbering.regulatoryListings.get`)
  "^[a-zA-Z]+(\\.[a-zA-Z]+)+$",
]);

/** The RegExp of an RE2 pattern this module accepts, or undefined. */
export function nativePattern(pattern: string): RegExp | undefined {
  let source = pattern;
  let flags = "u";
  for (const prefix of ["(?i)", "^(?i)"]) {
    if (source.startsWith(prefix)) {
      source = prefix === "^(?i)" ? `^${source.slice(prefix.length)}` : source.slice(prefix.length);
      flags = "iu";
    }
  }
  if (!isSimple(source) && !VETTED.has(pattern)) return undefined;
  try {
    return new RegExp(source, flags);
  } catch {
    return undefined;
  }
}

const cache = new Map<string, RegExp>();

export const nativeRegexMatch: RegexMatcher = (pattern, against) => {
  let re = cache.get(pattern);
  if (re === undefined) {
    re = nativePattern(pattern);
    if (re === undefined) throw new Error(`pattern not supported by the native matcher: ${pattern}`);
    if (cache.size < 1024) cache.set(pattern, re);
  }
  return re.test(against);
};
