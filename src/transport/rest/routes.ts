/**
 * The route table, compiled from the `google.api.http` options of the
 * generated descriptors (every rule and its `additional_bindings`) — no
 * hand-written routes. A misconfigured rule (bad template, unknown field,
 * two methods on the same verb and path) fails at startup, naming the rpc.
 *
 * Lookup: every route whose template matches the path is a candidate (when
 * a route with a custom verb matches, only such routes are); none -> not
 * found; none with the request's HTTP method -> method not allowed (with the
 * methods that are); otherwise the most specific template wins (literal
 * before `*` before `**`, segment by segment).
 */
import {
  type DescField,
  type DescMessage,
  type DescMethodUnary,
  type DescService,
  getOption,
  hasOption,
} from "@bufbuild/protobuf";
import { http } from "../../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../../gen/google/api/http_pb.js";
import { findField, isPathLeaf, resolveFieldPath } from "./field-path.js";
import {
  type Bindings,
  compareSpecificity,
  matchTemplate,
  type PathTemplate,
  parseTemplate,
  splitRequestPath,
  type TemplateVariable,
  templateShape,
} from "./path-template.js";

export type BodyMapping = { kind: "none" } | { kind: "all" } | { kind: "field"; field: DescField };

export interface PathBinding {
  variable: TemplateVariable;
  /** The fields along the variable's path, the last one a singular scalar or enum. */
  fields: DescField[];
}

export interface Route {
  method: DescMethodUnary;
  /** Upper-case HTTP method, or `*` for a custom rule matching any method. */
  httpMethod: string;
  template: PathTemplate;
  pathBindings: PathBinding[];
  body: BodyMapping;
  /** The response field sent as the body (`response_body`), or the whole response. */
  responseBody: DescField | undefined;
}

export type Lookup =
  | { kind: "match"; route: Route; bindings: Bindings }
  | { kind: "method-not-allowed"; allow: string[] }
  | { kind: "not-found" };

export interface RouteTable {
  readonly routes: readonly Route[];
  lookup(httpMethod: string, rawPath: string): Lookup;
}

export class RouteConfigError extends Error {
  override name = "RouteConfigError";
}

/** Compiles the routes of every unary method carrying a `google.api.http` rule. */
export function compileRoutes(services: ReadonlyArray<{ desc: DescService }>): RouteTable {
  const routes: Route[] = [];
  for (const { desc } of services) {
    for (const method of desc.methods) {
      if (!hasOption(method, http)) continue;
      // Streaming methods have no JSON/REST mapping here; they are served
      // by the RPC protocols only.
      if (method.methodKind !== "unary") continue;
      const unary = method as DescMethodUnary;
      const rule = getOption(method, http);
      routes.push(compileRule(unary, rule));
      for (const extra of rule.additionalBindings) {
        if (extra.additionalBindings.length > 0) {
          throw new RouteConfigError(`${method}: additional_bindings must not nest`);
        }
        routes.push(compileRule(unary, extra));
      }
    }
  }
  checkDuplicates(routes);
  return createTable(routes);
}

function compileRule(method: DescMethodUnary, rule: HttpRule): Route {
  const fail = (reason: string) =>
    new RouteConfigError(`${method.parent.typeName}.${method.name}: ${reason}`);
  let httpMethod: string;
  let source: string;
  switch (rule.pattern.case) {
    case "get":
    case "put":
    case "post":
    case "delete":
    case "patch":
      httpMethod = rule.pattern.case.toUpperCase();
      source = rule.pattern.value;
      break;
    case "custom":
      httpMethod = rule.pattern.value.kind === "*" ? "*" : rule.pattern.value.kind.toUpperCase();
      source = rule.pattern.value.path;
      if (!/^(\*|[A-Z]+)$/.test(httpMethod)) throw fail(`invalid custom method ${rule.pattern.value.kind}`);
      break;
    default:
      throw fail("http rule without a pattern");
  }
  let template: PathTemplate;
  try {
    template = parseTemplate(source);
  } catch (err) {
    throw fail(err instanceof Error ? err.message : String(err));
  }
  const input = method.input;
  const pathBindings = template.variables.map((variable): PathBinding => {
    const fields = resolveFieldPath(input, variable.fieldPath, false);
    if (!Array.isArray(fields)) throw fail(`path variable ${variable.fieldPath.join(".")}: ${fields.error}`);
    if (!isPathLeaf(fields[fields.length - 1]!)) {
      throw fail(`path variable ${variable.fieldPath.join(".")} must be a singular scalar or enum field`);
    }
    return { variable, fields };
  });
  const body = bodyMapping(input, rule.body, fail);
  if (body.kind === "field") {
    for (const b of pathBindings) {
      if (b.fields[0] !== body.field) continue;
      // Allowed by the spec for `{resource.name=...}` with `body: "resource"`:
      // the path sets the field inside the body message.
      if (body.field.fieldKind !== "message")
        throw fail(`body field ${body.field.name} is bound by the path`);
    }
  }
  let responseBody: DescField | undefined;
  if (rule.responseBody !== "") {
    responseBody = findField(method.output, rule.responseBody, false);
    if (responseBody === undefined)
      throw fail(`response_body ${rule.responseBody} is not a field of the response`);
  }
  return { method, httpMethod, template, pathBindings, body, responseBody };
}

function bodyMapping(input: DescMessage, body: string, fail: (reason: string) => Error): BodyMapping {
  if (body === "") return { kind: "none" };
  if (body === "*") return { kind: "all" };
  const field = findField(input, body, false);
  if (field === undefined) throw fail(`body ${body} is not a top-level field of ${input.typeName}`);
  return { kind: "field", field };
}

function checkDuplicates(routes: readonly Route[]): void {
  const seen = new Map<string, Route>();
  for (const r of routes) {
    const key = `${r.httpMethod} ${templateShape(r.template)}`;
    const other = seen.get(key);
    if (other !== undefined) {
      throw new RouteConfigError(
        `${r.method.parent.typeName}.${r.method.name} and ${other.method.parent.typeName}.${other.method.name} ` +
          `both map ${r.httpMethod} ${r.template.source}`,
      );
    }
    seen.set(key, r);
  }
}

function createTable(routes: Route[]): RouteTable {
  // Candidates by first literal segment (`v1`, `v1beta1`, `admin`), so a
  // lookup only tries the routes that can match.
  const byFirst = new Map<string, Route[]>();
  const anyFirst: Route[] = [];
  for (const r of routes) {
    const first = r.template.segments[0];
    if (first?.kind === "literal") {
      const list = byFirst.get(first.value) ?? [];
      list.push(r);
      byFirst.set(first.value, list);
    } else {
      anyFirst.push(r);
    }
  }
  return {
    routes,
    lookup(httpMethod, rawPath) {
      const path = splitRequestPath(rawPath);
      if (path === undefined) return { kind: "not-found" };
      const first = path.segments[0] ?? "";
      const firstDecoded = safeFirst(first);
      const candidates = [...(byFirst.get(firstDecoded) ?? []), ...anyFirst];
      if (path.segments.length === 1 && path.verbSegments !== undefined) {
        // `/foo:verb`: the first segment without its verb.
        candidates.push(...(byFirst.get(safeFirst(path.verbSegments[0] ?? "")) ?? []));
      }
      let matches: Array<{ route: Route; bindings: Bindings }> = [];
      for (const route of candidates) {
        const bindings = matchTemplate(route.template, path);
        if (bindings !== undefined) matches.push({ route, bindings });
      }
      // A path ending in the verb of a matching custom method is that
      // method's path: `DELETE .../n1:move` is 405, not a delete of `n1:move`.
      // Only when no route has the verb is the colon part of the last segment.
      if (matches.some((m) => m.route.template.verb !== undefined)) {
        matches = matches.filter((m) => m.route.template.verb !== undefined);
      }
      let best: { route: Route; bindings: Bindings } | undefined;
      const allow = new Set<string>();
      for (const m of matches) {
        allow.add(m.route.httpMethod);
        if (m.route.httpMethod !== httpMethod && m.route.httpMethod !== "*") continue;
        if (best === undefined || compareSpecificity(m.route.template, best.route.template) < 0) best = m;
      }
      if (best !== undefined) return { kind: "match", ...best };
      if (allow.size === 0) return { kind: "not-found" };
      return { kind: "method-not-allowed", allow: [...allow].sort() };
    },
  };
}

function safeFirst(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
