/**
 * One OpenAPI 3.1 document from the `google.api.http` rules of a set of
 * services: a path item per rule (additional_bindings included), its path
 * and query parameters and request body per google/api/http.proto, the
 * response, a bearer security requirement and the REST error body as the
 * default response of every operation.
 *
 * Paths: a variable `{name=projects/*\/calls/*}` becomes
 * `projects/{project}/calls/{call}` (one parameter per `*`, named after the
 * collection before it), so generated clients and "try it" forms fill in
 * segments instead of percent-encoding a whole resource name into one.
 */
import {
  type DescField,
  type DescMessage,
  type DescMethod,
  type DescService,
  getOption,
  hasOption,
} from "@bufbuild/protobuf";
import { isQueryLeaf, resolveFieldPath } from "../../src/transport/rest/field-path.js";
import {
  type PathTemplate,
  parseTemplate,
  type TemplateVariable,
} from "../../src/transport/rest/path-template.js";
import {
  describe,
  type Extensions,
  FieldBehavior,
  fieldBehaviors,
  type Schema,
  SchemaBuilder,
  wellKnownSchema,
} from "./schemas.js";

/** google.api.HttpRule in the shape protobuf-es gives it. */
interface HttpRule {
  pattern:
    | { case: "get" | "put" | "post" | "delete" | "patch"; value: string }
    | { case: "custom"; value: { kind: string; path: string } }
    | { case: undefined; value?: undefined };
  body: string;
  responseBody: string;
  additionalBindings: HttpRule[];
}

export interface DocumentSpec {
  title: string;
  description: string;
  /** What the bearer token is. */
  securityDescription: string;
}

/** google.rpc.Code names, in code order. */
const STATUS_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
];

const OPENAPI_METHODS = new Set(["get", "put", "post", "delete", "patch", "head", "options", "trace"]);

export function buildDocument(services: readonly DescService[], ext: Extensions, spec: DocumentSpec): Schema {
  const schemas = new SchemaBuilder(ext);
  const paths: Record<string, Record<string, unknown>> = {};
  const operationIds = new Set<string>();
  const tags: Schema[] = [];
  if (ext.http === undefined) throw new Error("google.api.http is not among the request's files");
  for (const service of services) {
    const tag: Schema = { name: service.name };
    const description = describe(service);
    if (description !== undefined) tag.description = description;
    tag["x-proto-service"] = service.typeName;
    tags.push(tag);
    for (const method of service.methods) {
      if (!hasOption(method, ext.http)) continue;
      const rule = getOption(method, ext.http) as unknown as HttpRule;
      const rules = [rule, ...rule.additionalBindings];
      rules.forEach((r, i) => {
        const op = operation(method, r, i, schemas, ext);
        if (op === undefined) return;
        let id = `${service.name}_${method.name}${i === 0 ? "" : `_${i}`}`;
        if (operationIds.has(id)) id = `${service.typeName.replaceAll(".", "_")}_${method.name}_${i}`;
        operationIds.add(id);
        op.operation.operationId = id;
        // OpenAPI: paths of the same shape with other parameter names are
        // the same path; take the names already in use.
        const shape = op.path.replace(/\{[^}]+\}/g, "{}");
        const existing = Object.keys(paths).find((p) => p.replace(/\{[^}]+\}/g, "{}") === shape);
        if (existing !== undefined && existing !== op.path) renameParameters(op, existing);
        const item = paths[op.path] ?? {};
        if (item[op.method] !== undefined) {
          throw new Error(
            `${method.parent.typeName}.${method.name}: ${op.method.toUpperCase()} ${op.path} is already ` +
              `${(item[op.method] as Schema).operationId} (OpenAPI cannot tell \`*\` from \`**\` apart)`,
          );
        }
        item[op.method] = op.operation;
        paths[op.path] = item;
      });
    }
  }
  return {
    openapi: "3.1.0",
    info: { title: spec.title, version: "1", description: spec.description },
    servers: [{ url: "/", description: "This server" }],
    security: [{ bearer: [] }],
    tags,
    paths,
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: spec.securityDescription },
      },
      responses: {
        Error: {
          description:
            "An error: the google.rpc.Status of the call in Google's REST form, with the HTTP status of its code.",
          content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
        },
      },
      schemas: { Error: errorSchema(), ...schemas.components() },
    },
  };
}

/** Gives `op` the path `to` (same shape), renaming its path parameters in order. */
function renameParameters(op: Operation, to: string): void {
  const from = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  const names = [...to.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  const rename = new Map(from.map((name, i) => [name, names[i]!]));
  for (const p of (op.operation.parameters ?? []) as Schema[]) {
    if (p.in === "path" && typeof p.name === "string") p.name = rename.get(p.name) ?? p.name;
  }
  op.path = to;
}

function errorSchema(): Schema {
  return {
    type: "object",
    description: "The body of every error response.",
    required: ["error"],
    properties: {
      error: {
        type: "object",
        required: ["code", "message", "status"],
        properties: {
          code: { type: "integer", description: "The HTTP status, e.g. `404`." },
          message: { type: "string", description: "A developer-facing message." },
          status: {
            type: "string",
            enum: STATUS_NAMES,
            description: "The google.rpc.Code name, e.g. `NOT_FOUND`.",
          },
          details: {
            type: "array",
            description:
              "Error details as google.protobuf.Any JSON: `google.rpc.ErrorInfo` (a stable UPPER_SNAKE `reason`, " +
              "`domain`, `metadata`), `google.rpc.BadRequest` (`fieldViolations` naming the field path), ...",
            items: wellKnownSchema("google.protobuf.Any"),
          },
        },
      },
    },
  };
}

interface Operation {
  method: string;
  path: string;
  operation: Schema;
}

function operation(
  method: DescMethod,
  rule: HttpRule,
  index: number,
  schemas: SchemaBuilder,
  ext: Extensions,
): Operation | undefined {
  const where = `${method.parent.typeName}.${method.name}`;
  if (method.methodKind !== "unary") return undefined; // streaming methods have no REST mapping
  let verb: string;
  let source: string;
  switch (rule.pattern.case) {
    case "custom":
      verb = rule.pattern.value.kind.toLowerCase();
      source = rule.pattern.value.path;
      if (!OPENAPI_METHODS.has(verb)) return undefined; // `*` and others OpenAPI cannot name
      break;
    case undefined:
      throw new Error(`${where}: http rule without a pattern`);
    default:
      verb = rule.pattern.case;
      source = rule.pattern.value;
  }
  const template = parseTemplate(source);
  const input = method.input;
  const { path, parameters, bound } = pathParameters(template, input, where);

  // Query parameters: every field not bound by the path or the body
  // (`body: "*"` leaves none).
  let bodyField: DescField | undefined;
  if (rule.body !== "" && rule.body !== "*") {
    bodyField = input.fields.find((f) => f.name === rule.body);
    if (bodyField === undefined) throw new Error(`${where}: body ${rule.body} is not a field of the request`);
  }
  if (rule.body !== "*") {
    const skip = new Set<DescField>(bodyField === undefined ? [] : [bodyField]);
    parameters.push(...queryParameters(input, [], [], bound, skip, schemas, ext));
  }

  const op: Schema = {
    tags: [method.parent.name],
    summary: method.name,
  };
  const description = describe(method);
  if (description !== undefined) op.description = description;
  if (parameters.length > 0) op.parameters = parameters;
  if (rule.body === "*") {
    // Fields bound by the path are not in the body.
    const topBound = new Set(bound.filter((b) => b.length === 1).map((b) => b[0]!));
    const schema = topBound.size === 0 ? schemas.message(input) : schemas.messageBody(input, topBound);
    schemas.message(input); // the request type is documented as a component either way
    op.requestBody = {
      required: Array.isArray(schema.required) && schema.required.length > 0,
      content: { "application/json": { schema } },
    };
  } else if (bodyField !== undefined) {
    const { schema, isRequired } = schemas.field(bodyField);
    op.requestBody = { required: isRequired, content: { "application/json": { schema } } };
  }
  let responseSchema: Schema;
  if (rule.responseBody === "") {
    responseSchema = schemas.message(method.output);
  } else {
    const field = method.output.fields.find((f) => f.name === rule.responseBody);
    if (field === undefined) throw new Error(`${where}: response_body ${rule.responseBody} is not a field`);
    responseSchema = schemas.field(field).schema;
  }
  op.responses = {
    "200": {
      description: "OK",
      content: { "application/json": { schema: responseSchema } },
    },
    default: { $ref: "#/components/responses/Error" },
  };
  op.security = [{ bearer: [] }];
  op["x-google-http"] = {
    template: source,
    body: rule.body,
    ...(index > 0 ? { additionalBinding: index } : {}),
  };
  return { method: verb, path, operation: op };
}

/** `calls` -> `call`, `aliases` -> `alias`, `shelves` -> `shelf`, `regulatoryListings` -> `regulatoryListing`. */
export function singular(word: string): string {
  if (/(alias|status|address)es$/.test(word)) return word.slice(0, -2);
  if (/ies$/.test(word)) return `${word.slice(0, -3)}y`;
  if (/elves$/.test(word)) return `${word.slice(0, -3)}f`;
  if (/(x|ch|sh)es$/.test(word)) return word.slice(0, -2);
  if (/[^s]s$/.test(word)) return word.slice(0, -1);
  return word;
}

function pathParameters(
  template: PathTemplate,
  input: DescMessage,
  where: string,
): { path: string; parameters: Schema[]; bound: DescField[][] } {
  const parameters: Schema[] = [];
  const bound: DescField[][] = [];
  const used = new Set<string>();
  const unique = (name: string) => {
    let n = name;
    for (let i = 2; used.has(n); i++) n = `${name}${i}`;
    used.add(n);
    return n;
  };
  const names: string[] = template.segments.map(() => "");
  const owner = (i: number): TemplateVariable | undefined =>
    template.variables.find((v) => v.start <= i && i < v.end);
  const fieldsOf = new Map<TemplateVariable, DescField[]>();
  for (const v of template.variables) {
    const fields = resolveFieldPath(input, v.fieldPath, false);
    if (!Array.isArray(fields))
      throw new Error(`${where}: path variable ${v.fieldPath.join(".")}: ${fields.error}`);
    fieldsOf.set(v, fields);
    bound.push(fields);
  }
  const segments = template.segments.map((seg, i) => {
    if (seg.kind === "literal") return seg.value;
    const v = owner(i);
    const fields = v === undefined ? undefined : fieldsOf.get(v);
    const jsonPath = fields?.map((f) => f.jsonName).join(".") ?? `segment${i}`;
    const prev = template.segments[i - 1];
    const wildcards =
      v === undefined
        ? 1
        : template.segments.slice(v.start, v.end).filter((s) => s.kind !== "literal").length;
    let name: string;
    if (seg.kind === "wildcard" && v !== undefined && prev?.kind === "literal" && i > v.start) {
      name = singular(prev.value);
    } else if (wildcards === 1 || seg.kind === "deep") name = jsonPath;
    else name = `${jsonPath}${i}`;
    names[i] = unique(name);
    return `{${names[i]}}`;
  });
  let path = `/${segments.join("/")}`;
  if (template.verb !== undefined) path += `:${template.verb}`;

  for (const v of template.variables) {
    const fields = fieldsOf.get(v)!;
    const leaf = fields[fields.length - 1]!;
    const jsonPath = fields.map((f) => f.jsonName).join(".");
    const pattern = template.segments
      .slice(v.start, v.end)
      .map((s, k) => (s.kind === "literal" ? s.value : `{${names[v.start + k]}}`))
      .join("/");
    for (let i = v.start; i < v.end; i++) {
      const seg = template.segments[i]!;
      if (seg.kind === "literal") continue;
      const simple = v.end - v.start === 1;
      const schema: Schema =
        simple && leaf.fieldKind === "enum"
          ? { type: "string", enum: leaf.enum.values.map((x) => x.name) }
          : { type: "string" };
      if (seg.kind === "deep") schema["x-multi-segment"] = true;
      const own = describe(leaf);
      const description = simple
        ? (own ?? `The \`${jsonPath}\` field.`)
        : `Segment of the \`${jsonPath}\` field, which is \`${pattern}\`.` +
          (seg.kind === "deep" ? " May span several segments." : "");
      parameters.push({
        name: names[i],
        in: "path",
        required: true,
        description,
        schema,
        "x-field": jsonPath,
      });
    }
  }
  return { path, parameters, bound };
}

/** Whether `a` is a prefix of `b` or `b` of `a` (the same field or one inside the other). */
function overlaps(a: readonly DescField[], b: readonly DescField[]): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}

const MAX_QUERY_DEPTH = 4;

/**
 * Query parameters for the fields of `message` (reached through `prefix`):
 * scalars, enums, repeated scalars and enums, and well-known types with a
 * string form are parameters (`a.b.c` for nested fields); other messages are
 * walked into; maps and repeated messages cannot be query parameters.
 */
function queryParameters(
  message: DescMessage,
  prefix: DescField[],
  seen: DescMessage[],
  bound: readonly DescField[][],
  skip: ReadonlySet<DescField>,
  schemas: SchemaBuilder,
  ext: Extensions,
): Schema[] {
  const out: Schema[] = [];
  for (const field of message.fields) {
    if (prefix.length === 0 && skip.has(field)) continue;
    const path = [...prefix, field];
    if (bound.some((b) => overlaps(b, path) && b.length <= path.length)) continue;
    if (isQueryLeaf(field)) {
      const { schema, isRequired } = schemas.field(field);
      const { description, readOnly, ...rest } = schema;
      if (readOnly === true) continue; // output-only fields are not input
      const param: Schema = {
        name: path.map((f) => f.jsonName).join("."),
        in: "query",
      };
      const parentRequired = prefix.every((f) => fieldBehaviors(f, ext).includes(FieldBehavior.REQUIRED));
      if (isRequired && parentRequired) param.required = true;
      if (typeof description === "string") param.description = description;
      param.schema = rest;
      out.push(param);
      continue;
    }
    if (field.fieldKind !== "message") continue;
    if (wellKnownSchema(field.message.typeName) !== undefined) continue;
    if (seen.includes(field.message) || path.length >= MAX_QUERY_DEPTH) continue;
    if (fieldBehaviors(field, ext).includes(FieldBehavior.OUTPUT_ONLY)) continue;
    out.push(...queryParameters(field.message, path, [...seen, message], bound, skip, schemas, ext));
  }
  return out;
}
