/**
 * The six ways a client reaches the server, each behind the same small
 * adapter: call(service, method, requestJson, token) with the request in
 * proto3 JSON, settling with a normalised outcome. Adapters never throw for
 * an RPC error; where a transport contradicts itself (HTTP status against
 * `error.status`, `grpc-status` against `grpc-status-details-bin`), the
 * outcome's `code` says so, so the contradiction shows up as a disagreement.
 *
 * - connect-json:   connect-node Connect protocol, JSON, HTTP/1.1
 * - connect-binary: connect-node Connect protocol, binary, HTTP/2
 * - grpc:           connect-node gRPC, HTTP/2
 * - grpc-js:        @grpc/grpc-js with @grpc/proto-loader reading proto/ (protobufjs
 *                   on the wire; protobuf-es only turns proto3 JSON into its
 *                   objects and decodes `grpc-status-details-bin`)
 * - grpc-web:       connect-node gRPC-Web, binary, HTTP/1.1
 * - rest:           fetch over the google.api.http paths, written out by hand
 *                   below as a REST client would read them from the protos
 */
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  create,
  type DescField,
  type DescMessage,
  type DescMethodUnary,
  type DescService,
  fromBinary,
  fromJson,
  type JsonObject,
  type JsonValue,
  toJson,
} from "@bufbuild/protobuf";
import { anyUnpack, FieldMaskSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { ConnectError, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { CodeSchema } from "../../gen/google/rpc/code_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { http2SessionManager } from "../support/http2.js";

export const PROTO_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../proto");

export type TransportName = "connect-json" | "connect-binary" | "grpc" | "grpc-js" | "grpc-web" | "rest";

export const TRANSPORT_NAMES: readonly TransportName[] = [
  "connect-json",
  "connect-binary",
  "grpc",
  "grpc-js",
  "grpc-web",
  "rest",
];

export interface Failure {
  ok: false;
  /** The google.rpc.Code name, `INVALID_ARGUMENT`. */
  code: string;
  message: string;
  /** The ErrorInfo reason. */
  reason: string | undefined;
  /** ErrorInfo metadata. */
  metadata: Record<string, string>;
  /** Field paths of the BadRequest violations, in the order sent. */
  fieldViolations: string[];
  /** Type names of the details, in the order sent: `google.rpc.ErrorInfo`. */
  details: string[];
}

export type Outcome = { ok: true; json: JsonValue } | Failure;

export interface TransportAdapter {
  name: TransportName;
  /** Calls `method` (its proto name) of `service`; without `token`, with no credential at all. */
  call(
    service: DescService,
    method: string,
    request: JsonObject,
    token: string | undefined,
  ): Promise<Outcome>;
  close(): Promise<void>;
}

const CODE_NAMES = new Map(CodeSchema.values.map((v) => [v.number, v.name]));

export function codeName(code: number): string {
  return CODE_NAMES.get(code) ?? `CODE_${code}`;
}

/** HTTP status per google.rpc.Code, from the comments of google/rpc/code.proto. */
export const HTTP_STATUS: Readonly<Record<string, number>> = {
  OK: 200,
  CANCELLED: 499,
  UNKNOWN: 500,
  INVALID_ARGUMENT: 400,
  DEADLINE_EXCEEDED: 504,
  NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  PERMISSION_DENIED: 403,
  UNAUTHENTICATED: 401,
  RESOURCE_EXHAUSTED: 429,
  FAILED_PRECONDITION: 400,
  ABORTED: 409,
  OUT_OF_RANGE: 400,
  UNIMPLEMENTED: 501,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  DATA_LOSS: 500,
};

export function unaryMethod(service: DescService, name: string): DescMethodUnary {
  const method = service.methods.find((m) => m.name === name);
  if (method === undefined || method.methodKind !== "unary") {
    throw new Error(`${service.typeName} has no unary method ${name}`);
  }
  return method as DescMethodUnary;
}

const TYPE_PREFIX = "type.googleapis.com/";
const stripType = (typeUrl: string) =>
  typeUrl.startsWith(TYPE_PREFIX) ? typeUrl.slice(TYPE_PREFIX.length) : typeUrl;

// ---------------------------------------------------------------------------
// Connect, gRPC and gRPC-Web through connect-node

function connectAdapter(name: TransportName, transport: Transport, onClose: () => void): TransportAdapter {
  return {
    name,
    async call(service, methodName, request, token) {
      const method = unaryMethod(service, methodName);
      const header = new Headers();
      if (token !== undefined) header.set("authorization", `Bearer ${token}`);
      try {
        const input = fromJson(method.input, request);
        const res = await transport.unary(method, undefined, 10_000, header, input);
        return { ok: true, json: toJson(method.output, res.message) };
      } catch (err) {
        if (!(err instanceof ConnectError)) throw err;
        const info = err.findDetails(ErrorInfoSchema)[0];
        return {
          ok: false,
          code: codeName(err.code),
          message: err.rawMessage,
          reason: info?.reason,
          metadata: { ...info?.metadata },
          fieldViolations: err
            .findDetails(BadRequestSchema)
            .flatMap((d) => d.fieldViolations.map((v) => v.field)),
          details: err.details.map((d) => ("desc" in d ? d.desc.typeName : d.type)),
        };
      }
    },
    async close() {
      onClose();
    },
  };
}

export function connectJsonAdapter(baseUrl: string): TransportAdapter {
  const transport = createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false });
  return connectAdapter("connect-json", transport, () => {});
}

export function connectBinaryAdapter(baseUrl: string): TransportAdapter {
  const sessionManager = http2SessionManager(baseUrl);
  const transport = createConnectTransport({
    baseUrl,
    httpVersion: "2",
    useBinaryFormat: true,
    sessionManager,
  });
  return connectAdapter("connect-binary", transport, () => sessionManager.abort());
}

export function grpcAdapter(baseUrl: string): TransportAdapter {
  const sessionManager = http2SessionManager(baseUrl);
  const transport = createGrpcTransport({ baseUrl, sessionManager });
  return connectAdapter("grpc", transport, () => sessionManager.abort());
}

export function grpcWebAdapter(baseUrl: string): TransportAdapter {
  const transport = createGrpcWebTransport({ baseUrl, httpVersion: "1.1" });
  return connectAdapter("grpc-web", transport, () => {});
}

// ---------------------------------------------------------------------------
// @grpc/grpc-js with @grpc/proto-loader

/** proto-loader objects: proto field names, 64-bit integers and enums as strings, defaults left out. */
const LOADER_OPTIONS: protoLoader.Options = {
  includeDirs: [PROTO_DIR],
  keepCase: true,
  longs: String,
  enums: String,
  bytes: String,
  defaults: false,
  arrays: false,
  objects: false,
  oneofs: false,
};

type LoaderObject = Record<string, unknown>;

function fieldOf(desc: DescMessage, jsonKey: string): DescField {
  const field = desc.fields.find((f) => f.jsonName === jsonKey || f.name === jsonKey);
  if (field === undefined) throw new Error(`no field ${jsonKey} in ${desc.typeName}`);
  return field;
}

/** A message in proto3 JSON -> the object proto-loader serialises. */
export function jsonToLoader(desc: DescMessage, json: JsonValue): unknown {
  switch (desc.typeName) {
    case "google.protobuf.Timestamp": {
      const ts = fromJson(TimestampSchema, json);
      return { seconds: String(ts.seconds), nanos: ts.nanos };
    }
    case "google.protobuf.FieldMask":
      return { paths: fromJson(FieldMaskSchema, json).paths };
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new Error(`expected a JSON object for ${desc.typeName}`);
  }
  const out: LoaderObject = {};
  for (const [key, value] of Object.entries(json)) {
    if (value === null) continue;
    const field = fieldOf(desc, key);
    switch (field.fieldKind) {
      case "message":
        out[field.name] = jsonToLoader(field.message, value);
        break;
      case "list":
        out[field.name] = (value as JsonValue[]).map((v) =>
          field.listKind === "message" ? jsonToLoader(field.message, v) : v,
        );
        break;
      case "map":
        out[field.name] = Object.fromEntries(
          Object.entries(value as JsonObject).map(([k, v]) => [
            k,
            field.mapKind === "message" ? jsonToLoader(field.message, v) : v,
          ]),
        );
        break;
      default:
        out[field.name] = value;
    }
  }
  return out;
}

/** An object proto-loader deserialised -> the message in proto3 JSON (what protobuf-es' toJson writes). */
export function loaderToJson(desc: DescMessage, object: unknown): JsonValue {
  const o = object as LoaderObject;
  switch (desc.typeName) {
    case "google.protobuf.Timestamp":
      return toJson(
        TimestampSchema,
        create(TimestampSchema, { seconds: BigInt(String(o.seconds ?? 0)), nanos: Number(o.nanos ?? 0) }),
      );
    case "google.protobuf.FieldMask":
      return toJson(
        FieldMaskSchema,
        create(FieldMaskSchema, { paths: (o.paths as string[] | undefined) ?? [] }),
      );
  }
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(o)) {
    if (value === undefined || value === null) continue;
    const field = desc.fields.find((f) => f.name === key);
    if (field === undefined) throw new Error(`grpc-js returned ${key}, which ${desc.typeName} does not have`);
    switch (field.fieldKind) {
      case "message":
        out[field.jsonName] = loaderToJson(field.message, value);
        break;
      case "list":
        out[field.jsonName] = (value as unknown[]).map((v) =>
          field.listKind === "message" ? loaderToJson(field.message, v) : (v as JsonValue),
        );
        break;
      case "map":
        out[field.jsonName] = Object.fromEntries(
          Object.entries(value as LoaderObject).map(([k, v]) => [
            k,
            field.mapKind === "message" ? loaderToJson(field.message, v) : (v as JsonValue),
          ]),
        );
        break;
      default:
        out[field.jsonName] = value as JsonValue;
    }
  }
  return out;
}

function grpcJsFailure(error: grpc.ServiceError): Failure {
  let code = codeName(error.code);
  const failure: Failure = {
    ok: false,
    code,
    message: error.details,
    reason: undefined,
    metadata: {},
    fieldViolations: [],
    details: [],
  };
  const raw = error.metadata.get("grpc-status-details-bin")[0];
  if (raw === undefined) return failure;
  const status = fromBinary(StatusSchema, raw as Buffer);
  if (status.code !== error.code) code = `${code} (grpc-status-details-bin says ${codeName(status.code)})`;
  if (status.message !== error.details) {
    failure.message = `${error.details} (grpc-status-details-bin says ${JSON.stringify(status.message)})`;
  }
  failure.code = code;
  for (const any of status.details) {
    failure.details.push(stripType(any.typeUrl));
    const info = anyUnpack(any, ErrorInfoSchema);
    if (info && failure.reason === undefined) {
      failure.reason = info.reason;
      failure.metadata = { ...info.metadata };
    }
    const badRequest = anyUnpack(any, BadRequestSchema);
    if (badRequest) failure.fieldViolations.push(...badRequest.fieldViolations.map((v) => v.field));
  }
  return failure;
}

export async function grpcJsAdapter(port: number, services: DescService[]): Promise<TransportAdapter> {
  const files = [...new Set(services.map((s) => s.file.name))].map((f) => `${f}.proto`);
  const definition = await protoLoader.load(files, LOADER_OPTIONS);
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return {
    name: "grpc-js",
    call(service, methodName, request, token) {
      const method = unaryMethod(service, methodName);
      const serviceDef = definition[service.typeName] as protoLoader.ServiceDefinition | undefined;
      const def = serviceDef?.[methodName];
      if (def === undefined) throw new Error(`proto-loader has no ${service.typeName}/${methodName}`);
      const metadata = new grpc.Metadata();
      if (token !== undefined) metadata.set("authorization", `Bearer ${token}`);
      const argument = jsonToLoader(method.input, request) as object;
      return new Promise((resolvePromise, reject) => {
        client.makeUnaryRequest(
          def.path,
          def.requestSerialize,
          def.responseDeserialize,
          argument,
          metadata,
          { deadline: Date.now() + 10_000 },
          (error, response) => {
            try {
              resolvePromise(
                error ? grpcJsFailure(error) : { ok: true, json: loaderToJson(method.output, response) },
              );
            } catch (err) {
              reject(err);
            }
          },
        );
      });
    },
    async close() {
      client.close();
    },
  };
}

// ---------------------------------------------------------------------------
// REST over the google.api.http paths

interface RestRoute {
  verb: "GET" | "POST" | "PATCH" | "DELETE";
  /** The path; `{a.b}` takes the request field at JSON path a.b, every segment escaped. */
  path: string;
  /**
   * The request field sent as the body; every other field not in the path goes to the query.
   * `*`: every field not in the path is the body.
   */
  body?: string;
}

/** The `google.api.http` rules of the protos, as a REST client would copy them from the docs. */
const REST_ROUTES: Readonly<Record<string, RestRoute>> = {
  "switchboard.voice.v1.SipUsers/CreateSipUser": {
    verb: "POST",
    path: "/v1/{parent}/users",
    body: "sipUser",
  },
  "switchboard.voice.v1.SipUsers/GetSipUser": { verb: "GET", path: "/v1/{name}" },
  "switchboard.voice.v1.SipUsers/ListSipUsers": { verb: "GET", path: "/v1/{parent}/users" },
  "switchboard.voice.v1.SipUsers/UpdateSipUser": {
    verb: "PATCH",
    path: "/v1/{sipUser.name}",
    body: "sipUser",
  },
  "switchboard.voice.v1.SipUsers/DeleteSipUser": { verb: "DELETE", path: "/v1/{name}" },
  "switchboard.admin.v1.SipTrunks/CreateSipTrunk": {
    verb: "POST",
    path: "/admin/v1/sipTrunks",
    body: "sipTrunk",
  },
  "switchboard.admin.v1.SipTrunks/GetSipTrunk": { verb: "GET", path: "/admin/v1/{name}" },
  "switchboard.admin.v1.SipTrunks/ListSipTrunks": { verb: "GET", path: "/admin/v1/sipTrunks" },
  "switchboard.admin.v1.SipTrunks/UpdateSipTrunk": {
    verb: "PATCH",
    path: "/admin/v1/{sipTrunk.name}",
    body: "sipTrunk",
  },
  "switchboard.admin.v1.SipTrunks/DeleteSipTrunk": { verb: "DELETE", path: "/admin/v1/{name}" },
  "enfonica.numbering.v1beta1.RegulatoryListings/CreateRegulatoryListing": {
    verb: "POST",
    path: "/v1beta1/{parent}/regulatoryListings",
    body: "regulatoryListing",
  },
  "enfonica.numbering.v1beta1.RegulatoryListings/GetRegulatoryListing": {
    verb: "GET",
    path: "/v1beta1/{name}",
  },
  "enfonica.numbering.v1beta1.RegulatoryListings/ListRegulatoryListings": {
    verb: "GET",
    path: "/v1beta1/{parent}/regulatoryListings",
  },
  "enfonica.numbering.v1beta1.RegulatoryListings/UpdateRegulatoryListing": {
    verb: "PATCH",
    path: "/v1beta1/{regulatoryListing.name}",
    body: "regulatoryListing",
  },
  "enfonica.numbering.v1beta1.RegulatoryListings/DeleteRegulatoryListing": {
    verb: "DELETE",
    path: "/v1beta1/{name}",
  },
  "enfonica.numbering.v1beta1.RegulatoryListings/SearchRegulatoryListings": {
    verb: "GET",
    path: "/v1beta1/{parent}/regulatoryListings:search",
  },
  "enfonica.messaging.v1.Messages/CreateMessage": {
    verb: "POST",
    path: "/v1/{parent}/messages",
    body: "message",
  },
  "enfonica.messaging.v1.Messages/GetMessage": { verb: "GET", path: "/v1/{name}" },
  "enfonica.messaging.v1.Messages/ListMessages": { verb: "GET", path: "/v1/{parent}/messages" },
  "enfonica.messaging.v1.Unsubscribers/CreateUnsubscriber": {
    verb: "POST",
    path: "/v1/{parent}/unsubscribers",
    body: "unsubscriber",
  },
  "enfonica.messaging.v1.Unsubscribers/GetUnsubscriber": { verb: "GET", path: "/v1/{name}" },
  "enfonica.messaging.v1.Unsubscribers/ListUnsubscribers": {
    verb: "GET",
    path: "/v1/{parent}/unsubscribers",
  },
  "enfonica.messaging.v1.Unsubscribers/UpdateUnsubscriber": {
    verb: "PATCH",
    path: "/v1/{unsubscriber.name}",
    body: "unsubscriber",
  },
  "enfonica.messaging.v1.Unsubscribers/DeleteUnsubscriber": { verb: "DELETE", path: "/v1/{name}" },
  "enfonica.voice.v1beta1.SipDomains/CreateSipDomain": {
    verb: "POST",
    path: "/v1beta1/{parent}/sipDomains",
    body: "sipDomain",
  },
  "switchboard.admin.v1.SipDomainAdmin/SetDomainOptional": {
    verb: "POST",
    path: "/admin/v1/{name}:setDomainOptional",
    body: "*",
  },
  "switchboard.admin.v1.SimulatorAdmin/InjectIncomingCall": {
    verb: "POST",
    path: "/admin/v1/simulator/incomingCalls",
    body: "*",
  },
};

function readJsonPath(json: JsonObject, path: string): JsonValue | undefined {
  let value: JsonValue | undefined = json;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
    value = value[part];
  }
  return value;
}

const snakeCase = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Query parameters for the fields neither the path nor the body carries (`a.b=v`, repeated `x=1&x=2`). */
function appendQuery(query: URLSearchParams, key: string, value: JsonValue): void {
  if (value === null) return;
  if (Array.isArray(value)) {
    for (const v of value) appendQuery(query, key, v);
  } else if (typeof value === "object") {
    for (const [k, v] of Object.entries(value)) appendQuery(query, `${key}.${k}`, v);
  } else if (key === "updateMask" && typeof value === "string") {
    // Paths by their proto names, as Google's REST docs write them: ?updateMask=display_name
    query.append(key, value.split(",").map(snakeCase).join(","));
  } else {
    query.append(key, String(value));
  }
}

export function restRequest(
  service: DescService,
  method: string,
  request: JsonObject,
): { verb: string; path: string; body: string | undefined } {
  const route = REST_ROUTES[`${service.typeName}/${method}`];
  if (route === undefined) throw new Error(`no REST route for ${service.typeName}/${method}`);
  const bound = new Set<string>();
  const path = route.path.replace(/\{([^}]+)\}/g, (_, variable: string) => {
    bound.add(variable.split(".")[0]!);
    const value = readJsonPath(request, variable);
    return typeof value === "string" ? value.split("/").map(encodeURIComponent).join("/") : "";
  });
  if (route.body === "*") {
    const rest = Object.fromEntries(Object.entries(request).filter(([key]) => !bound.has(key)));
    return { verb: route.verb, path, body: JSON.stringify(rest) };
  }
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(request)) {
    if (key === route.body || bound.has(key)) continue;
    appendQuery(query, key, value);
  }
  const q = query.toString();
  const bodyValue = route.body === undefined ? undefined : request[route.body];
  return {
    verb: route.verb,
    path: q === "" ? path : `${path}?${q}`,
    body: bodyValue === undefined ? undefined : JSON.stringify(bodyValue),
  };
}

function restFailure(httpStatus: number, body: unknown): Failure {
  const error = (body as { error?: Record<string, unknown> } | undefined)?.error;
  if (error === undefined || typeof error.status !== "string") {
    return {
      ok: false,
      code: `HTTP ${httpStatus} without a Google error body`,
      message: JSON.stringify(body),
      reason: undefined,
      metadata: {},
      fieldViolations: [],
      details: [],
    };
  }
  let code = error.status;
  if (HTTP_STATUS[code] !== httpStatus) code = `${code} (HTTP ${httpStatus})`;
  if (error.code !== httpStatus) code = `${code} (error.code ${String(error.code)})`;
  const failure: Failure = {
    ok: false,
    code,
    message: String(error.message),
    reason: undefined,
    metadata: {},
    fieldViolations: [],
    details: [],
  };
  for (const detail of (error.details as Record<string, unknown>[] | undefined) ?? []) {
    const type = stripType(String(detail["@type"]));
    failure.details.push(type);
    if (type === "google.rpc.ErrorInfo" && failure.reason === undefined) {
      failure.reason = detail.reason as string | undefined;
      failure.metadata = { ...(detail.metadata as Record<string, string> | undefined) };
    }
    if (type === "google.rpc.BadRequest") {
      const violations = (detail.fieldViolations as { field?: string }[] | undefined) ?? [];
      failure.fieldViolations.push(...violations.map((v) => v.field ?? ""));
    }
  }
  return failure;
}

export function restAdapter(baseUrl: string): TransportAdapter {
  return {
    name: "rest",
    async call(service, method, request, token) {
      const { verb, path, body } = restRequest(service, method, request);
      const headers: Record<string, string> = { accept: "application/json" };
      if (token !== undefined) headers.authorization = `Bearer ${token}`;
      if (body !== undefined) headers["content-type"] = "application/json";
      const res = await fetch(`${baseUrl}${path}`, {
        method: verb,
        headers,
        ...(body === undefined ? {} : { body }),
      });
      const text = await res.text();
      const contentType = res.headers.get("content-type") ?? "";
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = text;
      }
      if (!contentType.startsWith("application/json")) {
        return {
          ok: false,
          code: `HTTP ${res.status} with content-type ${JSON.stringify(contentType)}`,
          message: text,
          reason: undefined,
          metadata: {},
          fieldViolations: [],
          details: [],
        };
      }
      if (res.status === 200) return { ok: true, json: json as JsonValue };
      return restFailure(res.status, json);
    },
    async close() {},
  };
}

/** Every adapter against a server listening on 127.0.0.1:`port`. */
export async function allAdapters(port: number, services: DescService[]): Promise<TransportAdapter[]> {
  const baseUrl = `http://127.0.0.1:${port}`;
  return [
    connectJsonAdapter(baseUrl),
    connectBinaryAdapter(baseUrl),
    grpcAdapter(baseUrl),
    await grpcJsAdapter(port, services),
    grpcWebAdapter(baseUrl),
    restAdapter(baseUrl),
  ];
}
