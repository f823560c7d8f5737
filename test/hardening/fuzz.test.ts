/**
 * Hardening item 8: a fuzz suite over every unary method of every served
 * service (walked from the service descriptors), on every transport — REST
 * over the method's google.api.http binding, Connect JSON and binary,
 * gRPC (connect-node), gRPC through @grpc/grpc-js with raw bytes, gRPC-Web —
 * with valid credentials (an owner key of a real project; the operator for
 * the admin API and Health) and requests mutated in types, sizes, encodings,
 * names and page tokens.
 *
 * Every answer must be a canonical error code with a message, or a success:
 * never a 5xx (UNIMPLEMENTED, 501, excepted: a feature not built yet says
 * so), INTERNAL, UNKNOWN or DATA_LOSS, and no message may show internals
 * (SQL, stack traces, file paths, "invalid byte sequence"). The server must
 * answer its health check afterwards.
 *
 * fast-check runs with a fixed seed and a bounded number of runs per method,
 * so the suite is reproducible and takes well under a minute per backend.
 * Set FUZZ_RUNS to run more.
 */
import {
  create,
  type DescField,
  type DescMessage,
  type DescMethod,
  type DescMethodUnary,
  type DescService,
  getOption,
  type JsonObject,
  type JsonValue,
  type Message,
  ScalarType,
  toBinary,
  toJson,
} from "@bufbuild/protobuf";
import { Code, ConnectError, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  type Http2SessionManager,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../../gen/google/api/annotations_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { type App, build } from "../../src/server.js";
import { newApiKey, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { http2SessionManager } from "../support/http2.js";

const SEED = 20261123;
const RUNS = Number(process.env.FUZZ_RUNS ?? 4);

/** Messages that show internals. */
const LEAK =
  /invalid byte sequence|syntax error at|select .* from|insert into|update .* set|\bat .+\.(ts|js):\d+|node_modules|\/work\/|src\/|Error: |TypeError|RangeError|drizzle|postgres|pglite|parse binary|invalid varint/i;

const CANONICAL = new Set(Object.values(Code).filter((v): v is string => typeof v === "string"));

type TransportName = "rest" | "connect-json" | "connect-binary" | "grpc" | "grpc-js" | "grpc-web";

interface Answer {
  transport: TransportName;
  ok: boolean;
  /** Code name as in the Code enum (`InvalidArgument`), or something that is not one. */
  code: string;
  message: string;
  httpStatus?: number;
}

interface Names {
  project: string;
  other: string;
}

// ---------------------------------------------------------------------------
// Values

const LONG = "x".repeat(20_000);

/** Strings that go wrong in interesting ways. */
function strings(names: Names): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(
      "",
      "a",
      "\u0000",
      "a\u0000b",
      "\ud800",
      "x\udc00y",
      "😀",
      "%",
      "%00",
      "%2F",
      "../..",
      "projects/",
      "projects//x",
      names.project,
      `${names.project}/`,
      names.other,
      `${names.other}/calls/c1`,
      `${names.project}/regulatoryListings/\u0000`,
      `${names.project}/calls/x/recordings/y`,
      "projects/*",
      "+61491570156",
      "+6149157015\u0000",
      "sip:alice@fuzz.invalid",
      "https://fuzz.invalid/hook",
      'state = COMPLETED AND create_time > "2026-01-01T00:00:00Z"',
      "((((((((((",
      "NOT NOT NOT",
      "display_name",
      "*",
      LONG,
      "~INVALID~",
    ),
    fc.string({ maxLength: 12 }),
    fc.string({ unit: "binary", maxLength: 12 }),
  );
}

const INT32 = fc.oneof(fc.constantFrom(0, 1, -1, 100, 101, 2_147_483_647, -2_147_483_648), fc.integer());
const UINT32 = fc.oneof(fc.constantFrom(0, 1, 4_294_967_295), fc.nat());
const INT64 = fc.constantFrom(
  0n,
  1n,
  -1n,
  9_223_372_036_854_775_807n,
  -9_223_372_036_854_775_808n,
  253_402_300_800n,
);
const UINT64 = fc.constantFrom(0n, 1n, 18_446_744_073_709_551_615n);
const DOUBLE = fc.oneof(
  fc.constantFrom(0, -0, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 1e308),
  fc.double(),
);

function scalar(type: ScalarType, names: Names): fc.Arbitrary<unknown> {
  switch (type) {
    case ScalarType.STRING:
      return strings(names);
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return INT32;
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return UINT32;
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return INT64;
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return UINT64;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return DOUBLE;
    case ScalarType.BYTES:
      return fc.uint8Array({ maxLength: 16 });
  }
}

function timestamp(): fc.Arbitrary<Record<string, unknown>> {
  return fc.record({
    seconds: fc.constantFrom(0n, 1_767_225_600n, -62_135_596_801n, 253_402_300_800n, -9_000_000_000_000n),
    nanos: fc.constantFrom(0, 999_999_999, 1_000_000_000, -1),
  });
}

/** A value for `field` (singular), `depth` levels down. */
function single(field: DescField, names: Names, depth: number): fc.Arbitrary<unknown> {
  switch (field.fieldKind) {
    case "scalar":
      return scalar(field.scalar, names);
    case "enum":
      return fc.constantFrom(...field.enum.values.map((v) => v.number), 999);
    case "message":
      return messageValue(field.message, names, depth + 1);
    case "list":
      return listOf(field, names, depth);
    case "map":
      return fc.dictionary(
        strings(names).map((s) => s.slice(0, 100)),
        field.mapKind === "message"
          ? messageValue(field.message, names, depth + 1)
          : field.mapKind === "enum"
            ? fc.constantFrom(...field.enum.values.map((v) => v.number))
            : scalar(field.scalar, names),
        { maxKeys: 3 },
      );
  }
}

function listOf(
  field: DescField & { fieldKind: "list" },
  names: Names,
  depth: number,
): fc.Arbitrary<unknown[]> {
  const item =
    field.listKind === "message"
      ? messageValue(field.message, names, depth + 1)
      : field.listKind === "enum"
        ? fc.constantFrom(...field.enum.values.map((v) => v.number), 999)
        : scalar(field.scalar, names);
  // Sometimes many items.
  return fc.oneof(
    { weight: 5, arbitrary: fc.array(item, { maxLength: 3 }) },
    { weight: 1, arbitrary: item.map((v) => Array.from({ length: 1500 }, () => v)) },
  );
}

function messageValue(desc: DescMessage, names: Names, depth: number): fc.Arbitrary<Record<string, unknown>> {
  if (desc.typeName === "google.protobuf.Timestamp") return timestamp();
  if (desc.typeName === "google.protobuf.FieldMask") {
    return fc.record({
      paths: fc.array(fc.oneof(fc.constantFrom("*", "name", "display_name", "a.b.c", ""), strings(names)), {
        maxLength: 3,
      }),
    });
  }
  if (desc.typeName === "google.protobuf.Duration") {
    return fc.record({ seconds: INT64, nanos: fc.constantFrom(0, 1, -1, 1_000_000_000) });
  }
  if (depth > 3 || desc.typeName.startsWith("google.protobuf.")) return fc.constant({});
  const parts: Record<string, fc.Arbitrary<unknown>> = {};
  for (const field of desc.fields) {
    if (field.oneof !== undefined) continue;
    parts[field.localName] = single(field, names, depth);
  }
  for (const oneof of desc.oneofs) {
    parts[oneof.localName] = fc.oneof(
      fc.constant(undefined),
      ...oneof.fields.map((f) => single(f, names, depth).map((value) => ({ case: f.localName, value }))),
    );
  }
  return fc.record(parts, { requiredKeys: [] }).map((r) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(r)) if (v !== undefined) out[k] = v;
    return out;
  });
}

/** A request of `method`: mostly valid names from its HTTP binding, the rest fuzzed. */
function requestArbitrary(method: DescMethod, names: Names, tokens: string[]): fc.Arbitrary<Message> {
  const base = messageValue(method.input, names, 0);
  const pathFields = pathVariables(method);
  const valid = pathFields.map(({ pattern }) => fillPattern(pattern, names.project));
  const others = pathFields.map(({ pattern }) => fillPattern(pattern, names.other));
  if (valid.length === 0) valid.push(names.project);
  if (others.length === 0) others.push(names.other);
  const nameValues = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...valid) },
    // well-formed but for the last segment
    {
      weight: 4,
      arbitrary: fc
        .tuple(
          fc.constantFrom(...valid),
          fc.constantFrom("\u0000", "a\u0000", "\ud800", LONG, "%00", "", "😀", "a b", "~INVALID~"),
        )
        .map(([v, last]) => v.replace(/[^/]*$/, last)),
    },
    { weight: 1, arbitrary: fc.constantFrom(...others) },
    { weight: 1, arbitrary: strings(names) },
  );
  const pageToken = fc.oneof(
    fc.constant(""),
    fc.constantFrom(...tokens, "garbage", "eyJ2IjoxfQ", "!!!", "\u0000", LONG),
  );
  return fc
    .record({ base, name: nameValues, pageToken, keep: fc.boolean(), minimal: fc.boolean() })
    .map(({ base: b, name, pageToken: token, keep, minimal }) => {
      // Half the requests carry only their names (and page token), so that
      // they get past validation to the lookups.
      const init: Record<string, unknown> = minimal ? {} : { ...b };
      keep = keep || minimal;
      for (const { field } of pathFields) {
        if (field.includes(".")) {
          const [head, tail] = field.split(".", 2) as [string, string];
          const headField = method.input.fields.find((f) => f.name === head);
          if (headField === undefined) continue;
          const nested = { ...((init[headField.localName] as Record<string, unknown> | undefined) ?? {}) };
          const tailField = headField.message?.fields.find((f) => f.name === tail);
          if (tailField !== undefined && keep) nested[tailField.localName] = name;
          init[headField.localName] = nested;
        } else {
          const f = method.input.fields.find((x) => x.name === field);
          if (f !== undefined && keep) init[f.localName] = name;
        }
      }
      const tokenField = method.input.fields.find((f) => f.name === "page_token");
      if (tokenField !== undefined) init[tokenField.localName] = token;
      return create(method.input, init as never) as Message;
    });
}

// ---------------------------------------------------------------------------
// HTTP bindings

interface Binding {
  verb: string;
  template: string;
  body: string;
}

function bindingOf(method: DescMethod): Binding | undefined {
  const rule = getOption(method, http);
  const p = rule.pattern;
  if (p.case === undefined || p.case === "custom") return undefined;
  return { verb: p.case.toUpperCase(), template: p.value, body: rule.body };
}

/** The variables of the binding's path: `{name=projects/*\/calls/*}` -> field `name`, pattern. */
function pathVariables(method: DescMethod): { field: string; pattern: string }[] {
  const b = bindingOf(method);
  if (b === undefined) return [];
  return [...b.template.matchAll(/\{([^}=]+)(?:=([^}]*))?\}/g)].map((m) => ({
    field: m[1]!,
    pattern: m[2] ?? "*",
  }));
}

function fillPattern(pattern: string, project: string): string {
  let first = true;
  return pattern
    .split("/")
    .map((seg) => {
      if (seg !== "*" && seg !== "**") return seg;
      if (first) {
        first = false;
        return project.slice("projects/".length);
      }
      return "fuzz1";
    })
    .join("/");
}

function readField(desc: DescMessage, message: Record<string, unknown>, path: string): unknown {
  let d: DescMessage | undefined = desc;
  let m: unknown = message;
  for (const part of path.split(".")) {
    const f: DescField | undefined = d?.fields.find((x) => x.name === part);
    if (f === undefined || m === undefined || m === null) return undefined;
    m = (m as Record<string, unknown>)[f.localName];
    d = f.fieldKind === "message" ? f.message : undefined;
  }
  return m;
}

const ODD_ESCAPES = ["%zz", "%", "%2F", "%C0%80", "%ED%A0%80", "%00", "%FF", "%%41"];

/** The REST request of `message` over the method's binding; `odd` picks an odd percent-encoding to append. */
function restRequest(
  method: DescMethod,
  message: Message,
  odd: number,
): { verb: string; path: string; body: string | undefined } | undefined {
  const b = bindingOf(method);
  if (b === undefined) return undefined;
  const json = toJson(method.input, message, { alwaysEmitImplicit: false }) as JsonObject;
  const bound = new Set<string>();
  const path = b.template.replace(/\{([^}=]+)(?:=[^}]*)?\}/g, (_, field: string) => {
    bound.add(field.split(".")[0]!);
    const value = readField(method.input, message as unknown as Record<string, unknown>, field);
    const s = typeof value === "string" ? value : "";
    return s
      .split("/")
      .map((seg) => encodeURIComponent(seg))
      .join("/");
  });
  const withOdd = odd < ODD_ESCAPES.length ? `${path}${ODD_ESCAPES[odd]}` : path;
  const query = new URLSearchParams();
  let body: string | undefined;
  if (b.body === "*") {
    body = JSON.stringify(json);
  } else {
    if (b.body !== "") {
      const f = method.input.fields.find((x) => x.name === b.body);
      const v = f === undefined ? undefined : json[f.jsonName];
      body = JSON.stringify(v ?? {});
    }
    for (const f of method.input.fields) {
      if (f.name === b.body || bound.has(f.name)) continue;
      const v = json[f.jsonName];
      if (v === undefined) continue;
      appendQuery(query, f.jsonName, v);
    }
  }
  const q = query.toString();
  return { verb: b.verb, path: q === "" ? withOdd : `${withOdd}?${q}`, body };
}

function appendQuery(query: URLSearchParams, key: string, value: JsonValue): void {
  if (value === null) return;
  if (Array.isArray(value)) {
    for (const v of value.slice(0, 20)) appendQuery(query, key, v);
  } else if (typeof value === "object") {
    for (const [k, v] of Object.entries(value)) appendQuery(query, `${key}.${k}`, v);
  } else {
    query.append(key, String(value));
  }
}

// ---------------------------------------------------------------------------
// Calls

const INVALID_MARKER = Buffer.from("~INVALID~");

/** The binary request, with the marker string (if any) turned into bytes that are not UTF-8. */
function binaryOf(method: DescMethod, message: Message): Buffer {
  const bytes = Buffer.from(toBinary(method.input, message));
  let i = bytes.indexOf(INVALID_MARKER);
  while (i >= 0) {
    for (let j = 0; j < INVALID_MARKER.length; j++) bytes[i + j] = 0xff - j;
    i = bytes.indexOf(INVALID_MARKER, i + 1);
  }
  return bytes;
}

async function connectCall(
  name: TransportName,
  transport: Transport,
  method: DescMethodUnary,
  message: Message,
  token: string,
): Promise<Answer> {
  try {
    await transport.unary(
      method,
      undefined,
      20_000,
      new Headers({ authorization: `Bearer ${token}` }),
      message as never,
    );
    return { transport: name, ok: true, code: "Ok", message: "" };
  } catch (err) {
    const e = ConnectError.from(err);
    return { transport: name, ok: false, code: Code[e.code] ?? `code ${e.code}`, message: e.rawMessage };
  }
}

function grpcJsCall(
  client: grpc.Client,
  method: DescMethod,
  message: Message,
  token: string,
): Promise<Answer> {
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  const bytes = binaryOf(method, message);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      `/${method.parent.typeName}/${method.name}`,
      () => bytes,
      (b: Buffer) => b,
      {},
      metadata,
      { deadline: Date.now() + 20_000 },
      (err) => {
        if (err === null) resolve({ transport: "grpc-js", ok: true, code: "Ok", message: "" });
        else {
          const name = Object.entries(grpc.status).find(([, v]) => v === err.code)?.[0] ?? `code ${err.code}`;
          resolve({ transport: "grpc-js", ok: false, code: grpcName(name), message: err.details });
        }
      },
    );
  });
}

/** `INVALID_ARGUMENT` -> `InvalidArgument`. */
function grpcName(name: string): string {
  if (name === "CANCELLED") return "Canceled";
  return name
    .toLowerCase()
    .split("_")
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join("");
}

async function restCall(
  baseUrl: string,
  method: DescMethod,
  message: Message,
  token: string,
  odd: number,
): Promise<Answer | undefined> {
  let req: ReturnType<typeof restRequest>;
  try {
    req = restRequest(method, message, odd);
  } catch {
    return undefined; // not expressible in JSON (the client's problem, not the server's)
  }
  if (req === undefined) return undefined;
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (req.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${baseUrl}${req.path}`, {
    method: req.verb,
    headers,
    ...(req.body === undefined ? {} : { body: req.body }),
  });
  const text = await res.text();
  if (res.status === 200) return { transport: "rest", ok: true, code: "Ok", message: "", httpStatus: 200 };
  let status = `HTTP ${res.status} ${text.slice(0, 200)}`;
  let errorMessage = "";
  try {
    const e = (JSON.parse(text) as { error: { status: string; message: string } }).error;
    status = grpcName(e.status);
    errorMessage = e.message;
  } catch {
    // not the REST error shape: reported as is
  }
  return { transport: "rest", ok: false, code: status, message: errorMessage, httpStatus: res.status };
}

/** Answers by transport and code, printed at the end (FUZZ_VERBOSE=1). */
const seen = new Map<string, number>();

function check(answer: Answer, context: string): void {
  const key = `${answer.transport} ${answer.code}`;
  seen.set(key, (seen.get(key) ?? 0) + 1);
  const where = `${context} over ${answer.transport}: ${answer.code} ${JSON.stringify(answer.message.slice(0, 300))}`;
  if (answer.ok) return;
  // A URL over Node's 16 KiB header limit is refused by the HTTP layer
  // itself, before any handler: 431 without a body (docs/limits-and-errors.md).
  if (answer.transport === "rest" && answer.httpStatus === 431) return;
  expect(CANONICAL.has(answer.code), where).toBe(true);
  expect(["Internal", "Unknown", "DataLoss", "Unavailable"], where).not.toContain(answer.code);
  expect(answer.message.length, where).toBeGreaterThan(0);
  expect(answer.message.length, where).toBeLessThanOrEqual(1100);
  expect(answer.message, where).not.toMatch(LEAK);
  if (answer.httpStatus !== undefined && answer.code !== "Unimplemented") {
    expect(answer.httpStatus, where).toBeLessThan(500);
  }
}

// ---------------------------------------------------------------------------
// The suite

describe.each(testDatabases())("Fuzz on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let baseUrl: string;
  let names: Names;
  let owner: string;
  const tokens: string[] = [];
  const sessions: Http2SessionManager[] = [];
  let grpcJs: grpc.Client;
  const transports: [TransportName, Transport][] = [];

  beforeAll(async () => {
    app = await build({
      config: testConfig({ PORT: "0", SIMULATOR_TIME_SCALE: "0.001", ROLE: "api" }),
      db: database.db,
    });
    const { port } = await app.listen(0, "127.0.0.1");
    baseUrl = `http://127.0.0.1:${port}`;
    const project = await newProject(database.db);
    const other = await newProject(database.db);
    names = { project, other };
    owner = (await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret;
    // Requests of 1500 long strings are over 10 MB: see test/support/http2.ts.
    const session = http2SessionManager(baseUrl);
    sessions.push(session);
    transports.push(
      ["connect-json", createConnectTransport({ baseUrl, httpVersion: "1.1" })],
      ["connect-binary", createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true })],
      ["grpc", createGrpcTransport({ baseUrl, sessionManager: session })],
      ["grpc-web", createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })],
    );
    grpcJs = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    // Real page tokens of other queries: unsubscribers of the project, one per page.
    for (const phone of ["+61491570156", "+61491570157", "+61491570158"]) {
      await fetch(`${baseUrl}/v1/${project}/unsubscribers`, {
        method: "POST",
        headers: { authorization: `Bearer ${owner}`, "content-type": "application/json" },
        body: JSON.stringify({ phone }),
      });
    }
    const page = (await (
      await fetch(`${baseUrl}/v1/${project}/unsubscribers?pageSize=1`, {
        headers: { authorization: `Bearer ${owner}` },
      })
    ).json()) as { nextPageToken?: string };
    if (page.nextPageToken) tokens.push(page.nextPageToken);
  }, 120_000);

  afterAll(async () => {
    grpcJs?.close();
    for (const s of sessions) s.abort();
    await app?.close();
  });

  const services = (): DescService[] => [...app.services.map((s) => s.desc), Health];

  it("answers every method on every transport with a canonical code and no internals", async () => {
    let calls = 0;
    let methodIndex = 0;
    for (const service of services()) {
      const admin = service.typeName.startsWith("switchboard.") || service === Health;
      const token = admin ? TEST_OPERATOR_TOKEN : owner;
      for (const method of service.methods) {
        if (method.methodKind !== "unary") continue;
        const context = `${service.typeName}/${method.name}`;
        methodIndex++;
        await fc.assert(
          fc.asyncProperty(
            requestArbitrary(method, names, tokens),
            fc.nat(ODD_ESCAPES.length * 3),
            async (message, odd) => {
              const debug = process.env.FUZZ_DEBUG;
              if (debug !== undefined && (debug === "all" || debug === method.name)) {
                console.log(method.name, JSON.stringify(toJson(method.input, message)).slice(0, 200));
              }
              for (const [name, transport] of transports) {
                check(await connectCall(name, transport, method as DescMethodUnary, message, token), context);
                calls++;
              }
              check(await grpcJsCall(grpcJs, method, message, token), context);
              const rest = await restCall(baseUrl, method, message, token, odd);
              if (rest !== undefined) check(rest, context);
              calls += 2;
            },
          ),
          // One seed per method, so that methods do not all draw the same choices.
          { seed: SEED + methodIndex, numRuns: RUNS, endOnFailure: true },
        );
      }
    }
    if (process.env.FUZZ_VERBOSE) console.log(calls, [...seen].sort());
    expect(calls).toBeGreaterThan(100);
    // The requests reached the handlers: some succeeded, some were refused as invalid.
    expect(seen.get("rest Ok") ?? 0).toBeGreaterThan(0);
    expect(seen.get("grpc InvalidArgument") ?? 0).toBeGreaterThan(0);
    const health = await fetch(`${baseUrl}/healthz`);
    expect(health.status).toBe(200);
  }, 300_000);
});
