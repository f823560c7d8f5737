/**
 * Path templates of `google.api.http` (google/api/http.proto):
 *
 *     Template = "/" Segments [ Verb ] ;
 *     Segments = Segment { "/" Segment } ;
 *     Segment  = "*" | "**" | LITERAL | Variable ;
 *     Variable = "{" FieldPath [ "=" Segments ] "}" ;
 *     FieldPath = IDENT { "." IDENT } ;
 *     Verb     = ":" LITERAL ;
 *
 * `parseTemplate` turns a template into segments, variables and a verb;
 * `matchTemplate` matches a request path (split by `splitRequestPath`)
 * against it and returns the variable values, decoded as the spec says: a
 * single-segment variable is fully percent-decoded, a multi-segment one is
 * decoded except for `%2F` / `%2f`, which stay as they are.
 */

export type Segment = { kind: "literal"; value: string } | { kind: "wildcard" } | { kind: "deep" };

export interface TemplateVariable {
  /** Field path in proto names, e.g. `["regulatory_listing", "name"]`. */
  fieldPath: string[];
  /** Index of the first segment the variable covers. */
  start: number;
  /** Index after the last segment the variable covers. */
  end: number;
  /** Covers exactly one segment: its value is fully percent-decoded. */
  singleSegment: boolean;
}

export interface PathTemplate {
  /** The template as written in the proto. */
  source: string;
  segments: Segment[];
  variables: TemplateVariable[];
  /** The custom verb without its colon (`search` for `...:search`), decoded. */
  verb: string | undefined;
}

export class TemplateError extends Error {
  override name = "TemplateError";
  constructor(source: string, reason: string) {
    super(`invalid path template ${JSON.stringify(source)}: ${reason}`);
  }
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
// pchar (RFC 3986) without the characters the template grammar reserves: / { } * =
const LITERAL = /^(?:[A-Za-z0-9\-._~!$&'()+,;:@]|%[0-9A-Fa-f]{2})+$/;

/** Parses a template; throws TemplateError when it does not follow the grammar. */
export function parseTemplate(source: string): PathTemplate {
  if (!source.startsWith("/")) throw new TemplateError(source, "must start with /");
  const { path, verb } = splitVerb(source);
  const segments: Segment[] = [];
  const variables: TemplateVariable[] = [];
  const parts = splitTopLevel(source, path.slice(1));
  for (const part of parts) {
    if (part.startsWith("{")) {
      if (!part.endsWith("}")) throw new TemplateError(source, `unterminated variable ${part}`);
      const inner = part.slice(1, -1);
      const eq = inner.indexOf("=");
      const fieldPath = (eq < 0 ? inner : inner.slice(0, eq)).split(".");
      if (!fieldPath.every((p) => IDENT.test(p))) {
        throw new TemplateError(source, `invalid field path in ${part}`);
      }
      const sub = eq < 0 ? ["*"] : inner.slice(eq + 1).split("/");
      const start = segments.length;
      for (const s of sub) {
        if (s.includes("{") || s.includes("}")) throw new TemplateError(source, "variables cannot nest");
        segments.push(parseSegment(source, s));
      }
      const only = segments[start];
      variables.push({
        fieldPath,
        start,
        end: segments.length,
        singleSegment: segments.length - start === 1 && only?.kind !== "deep",
      });
    } else {
      if (part.includes("{") || part.includes("}"))
        throw new TemplateError(source, `misplaced brace in ${part}`);
      segments.push(parseSegment(source, part));
    }
  }
  const deep = segments.findIndex((s) => s.kind === "deep");
  if (deep >= 0 && deep !== segments.length - 1) {
    throw new TemplateError(source, "** must be the last segment");
  }
  const seen = new Set<string>();
  for (const v of variables) {
    const key = v.fieldPath.join(".");
    if (seen.has(key)) throw new TemplateError(source, `variable ${key} appears twice`);
    seen.add(key);
  }
  return { source, segments, variables, verb };
}

function parseSegment(source: string, s: string): Segment {
  if (s === "*") return { kind: "wildcard" };
  if (s === "**") return { kind: "deep" };
  if (s === "") throw new TemplateError(source, "empty segment");
  if (!LITERAL.test(s)) throw new TemplateError(source, `invalid literal ${JSON.stringify(s)}`);
  return { kind: "literal", value: decodeURIComponent(s) };
}

/** The verb is the text after the last top-level `:` that follows the last top-level `/`. */
function splitVerb(source: string): { path: string; verb: string | undefined } {
  let depth = 0;
  let lastSlash = -1;
  let lastColon = -1;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "{") depth++;
    else if (c === "}") depth--;
    else if (depth === 0 && c === "/") lastSlash = i;
    else if (depth === 0 && c === ":") lastColon = i;
    if (depth < 0 || depth > 1) throw new TemplateError(source, "unbalanced or nested braces");
  }
  if (depth !== 0) throw new TemplateError(source, "unbalanced braces");
  if (lastColon < 0 || lastColon < lastSlash) return { path: source, verb: undefined };
  const verb = source.slice(lastColon + 1);
  if (!LITERAL.test(verb) || verb.includes(":")) throw new TemplateError(source, "invalid verb");
  return { path: source.slice(0, lastColon), verb: decodeURIComponent(verb) };
}

/** Splits on `/` outside braces, keeping each `{...}` variable as one part. */
function splitTopLevel(source: string, path: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = "";
  for (const c of path) {
    if (c === "{") depth++;
    if (c === "}") depth--;
    if (c === "/" && depth === 0) {
      parts.push(current);
      current = "";
    } else {
      current += c;
    }
  }
  parts.push(current);
  if (parts.some((p) => p === "")) throw new TemplateError(source, "empty segment");
  return parts;
}

/** A request path split into raw (still percent-encoded) segments. */
export interface RequestPath {
  /** Every segment of the path; the last one still carries any `:verb`. */
  segments: string[];
  /** The segments with the verb removed from the last one, when it has a top-level colon. */
  verbSegments: string[] | undefined;
  /** The decoded verb, when the last segment has one. */
  verb: string | undefined;
}

/** Splits the path part of a request URL (no query); undefined when it is not absolute. */
export function splitRequestPath(rawPath: string): RequestPath | undefined {
  if (!rawPath.startsWith("/")) return undefined;
  const segments = rawPath.slice(1).split("/");
  const last = segments[segments.length - 1] ?? "";
  const colon = last.lastIndexOf(":");
  if (colon < 0) return { segments, verbSegments: undefined, verb: undefined };
  const verb = safeDecode(last.slice(colon + 1));
  if (verb === undefined) return { segments, verbSegments: undefined, verb: undefined };
  return { segments, verbSegments: [...segments.slice(0, -1), last.slice(0, colon)], verb };
}

/** Variable values by field path (`regulatory_listing.name`), in template order. */
export type Bindings = Array<{ variable: TemplateVariable; value: string }>;

/**
 * Matches a request path against a template. A template with a verb only
 * matches a path ending in that verb; one without a verb matches the whole
 * path (a colon is then part of the last segment). Segments must not be
 * empty; `**` matches zero or more trailing segments.
 */
export function matchTemplate(template: PathTemplate, path: RequestPath): Bindings | undefined {
  let segments: string[];
  if (template.verb !== undefined) {
    if (path.verb !== template.verb || path.verbSegments === undefined) return undefined;
    segments = path.verbSegments;
  } else {
    segments = path.segments;
  }
  const t = template.segments;
  const deep = t.length > 0 && t[t.length - 1]?.kind === "deep";
  if (deep ? segments.length < t.length - 1 : segments.length !== t.length) return undefined;
  for (let i = 0; i < segments.length; i++) {
    const raw = segments[i]!;
    if (raw === "") return undefined;
    const seg = t[Math.min(i, t.length - 1)]!;
    if (seg.kind === "literal" && (i >= t.length || safeDecode(raw) !== seg.value)) return undefined;
  }
  const bindings: Bindings = [];
  for (const variable of template.variables) {
    const end = variable.end === t.length && deep ? segments.length : variable.end;
    const covered = segments.slice(variable.start, end);
    const value = variable.singleSegment
      ? safeDecode(covered[0] ?? "")
      : joinDecoded(covered.map(decodeKeepingSlashes));
    if (value === undefined) return undefined;
    bindings.push({ variable, value });
  }
  return bindings;
}

function joinDecoded(parts: Array<string | undefined>): string | undefined {
  return parts.some((p) => p === undefined) ? undefined : parts.join("/");
}

function safeDecode(s: string): string | undefined {
  if (!s.includes("%")) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return undefined;
  }
}

/** Percent-decodes everything except `%2F` / `%2f`, which stay as written. */
export function decodeKeepingSlashes(s: string): string | undefined {
  if (!s.includes("%")) return s;
  const parts = s.split(/(%2[Ff])/);
  let out = "";
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (i % 2 === 1) {
      out += p;
      continue;
    }
    const d = safeDecode(p);
    if (d === undefined) return undefined;
    out += d;
  }
  return out;
}

/**
 * Orders templates by specificity: a template with a verb first, then
 * segment by segment, a literal before `*` before `**`. Negative when `a`
 * is more specific.
 */
export function compareSpecificity(a: PathTemplate, b: PathTemplate): number {
  if ((a.verb === undefined) !== (b.verb === undefined)) return a.verb === undefined ? 1 : -1;
  const n = Math.min(a.segments.length, b.segments.length);
  for (let i = 0; i < n; i++) {
    const d = rank(a.segments[i]!) - rank(b.segments[i]!);
    if (d !== 0) return d;
  }
  return b.segments.length - a.segments.length;
}

function rank(s: Segment): number {
  return s.kind === "literal" ? 0 : s.kind === "wildcard" ? 1 : 2;
}

/** A key equal for templates that match exactly the same paths (variable names aside). */
export function templateShape(t: PathTemplate): string {
  const segs = t.segments.map((s) =>
    s.kind === "literal" ? `=${s.value}` : s.kind === "wildcard" ? "*" : "**",
  );
  return `${segs.join("/")}${t.verb === undefined ? "" : `:${t.verb}`}`;
}
