/**
 * The OpenAPI documents `buf generate` wrote to gen/openapi/
 * (scripts/protoc-gen-openapi): valid per an independent validator
 * (@readme/openapi-parser), complete (every `google.api.http` binding of
 * every generated service is an operation with its method and path), and
 * mapping proto types to their proto3 JSON forms.
 */
import { validate } from "@readme/openapi-parser";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type Binding,
  documentOf,
  generatedServices,
  httpBindings,
  type Json,
  loadDocument,
  openapiShape,
  templateShape,
} from "./support.js";

/** Follows a local `$ref`. */
function deref(doc: Json, schema: Json): Json {
  if (typeof schema.$ref !== "string") return schema;
  const name = schema.$ref.replace("#/components/schemas/", "");
  const target = doc.components.schemas[name];
  expect(target, `${schema.$ref} resolves`).toBeDefined();
  return target;
}

describe("OpenAPI documents", () => {
  const docs = { public: loadDocument("public"), admin: loadDocument("admin") };
  let bindings: Binding[] = [];

  beforeAll(async () => {
    bindings = httpBindings(await generatedServices());
  });

  it.each(["public", "admin"] as const)(
    "%s is a valid OpenAPI 3.1 document (@readme/openapi-parser)",
    async (which) => {
      const result = await validate(structuredClone(docs[which]) as never);
      if (!result.valid) expect.fail(JSON.stringify(result.errors, null, 2));
      expect(result.specification).toBe("OpenAPI");
      expect(docs[which].openapi).toBe("3.1.0");
      expect(result.warnings).toEqual([]);
    },
  );

  it.each(["public", "admin"] as const)("%s: every pattern is an ECMAScript regular expression", (which) => {
    const patterns: string[] = [];
    const walk = (v: unknown) => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v !== null && typeof v === "object") {
        for (const [k, x] of Object.entries(v)) {
          if (k === "pattern" && typeof x === "string") patterns.push(x);
          else walk(x);
        }
      }
    };
    walk(docs[which]);
    expect(patterns.length).toBeGreaterThan(0);
    for (const p of patterns) expect(() => new RegExp(p, "u"), p).not.toThrow();
  });

  it("documents every google.api.http binding of every generated service, in the right document", () => {
    expect(bindings.length).toBeGreaterThan(40);
    const missing: string[] = [];
    for (const b of bindings) {
      const doc = docs[documentOf(b.service)];
      const matches = Object.entries(doc.paths as Record<string, Json>).filter(
        ([path, item]) =>
          openapiShape(path) === templateShape(b.template) && item[b.httpMethod] !== undefined,
      );
      const op = matches
        .map(([, item]) => item[b.httpMethod])
        .find((o: Json) => String(o.operationId).startsWith(`${b.service.name}_${b.method}`));
      if (op === undefined) {
        missing.push(`${b.service.typeName}.${b.method}: ${b.httpMethod.toUpperCase()} ${b.template}`);
        continue;
      }
      expect(op["x-google-http"].template).toBe(b.template);
      expect(op.tags).toEqual([b.service.name]);
    }
    expect(missing).toEqual([]);
    // ... and nothing else: one operation per binding.
    const count = (doc: Json) =>
      Object.values(doc.paths as Record<string, Json>).reduce((n, item) => n + Object.keys(item).length, 0);
    expect(count(docs.public) + count(docs.admin)).toBe(bindings.length);
    // The admin API is in its own document only.
    expect(Object.keys(docs.public.paths).filter((p) => p.startsWith("/admin/"))).toEqual([]);
    expect(Object.keys(docs.admin.paths).every((p) => p.startsWith("/admin/v1/"))).toBe(true);
  });

  it("gives every operation a bearer requirement and the error body as its default response", () => {
    for (const doc of Object.values(docs)) {
      expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
      const error = doc.components.schemas.Error;
      expect(error.required).toEqual(["error"]);
      expect(Object.keys(error.properties.error.properties)).toEqual([
        "code",
        "message",
        "status",
        "details",
      ]);
      expect(error.properties.error.properties.status.enum).toContain("NOT_FOUND");
      for (const item of Object.values(doc.paths as Record<string, Json>)) {
        for (const op of Object.values(item)) {
          expect(op.security).toEqual([{ bearer: [] }]);
          expect(op.responses.default).toEqual({ $ref: "#/components/responses/Error" });
          expect(op.responses["200"].content["application/json"].schema).toBeDefined();
        }
      }
    }
  });

  describe("parameters", () => {
    const op = (path: string, method: string) => {
      const found = docs.public.paths[path]?.[method] ?? docs.admin.paths[path]?.[method];
      expect(found, `${method} ${path}`).toBeDefined();
      return found as Json;
    };
    const names = (o: Json, where: string) =>
      (o.parameters ?? []).filter((p: Json) => p.in === where).map((p: Json) => p.name);

    it("splits resource names into one path parameter per segment", () => {
      const get = op("/v1beta1/projects/{project}/calls/{call}", "get");
      expect(names(get, "path")).toEqual(["project", "call"]);
      expect(get["x-google-http"].template).toBe("/v1beta1/{name=projects/*/calls/*}");
      expect(get.parameters[0]).toMatchObject({
        required: true,
        schema: { type: "string" },
        "x-field": "name",
      });
    });

    it("makes the other fields of a GET query parameters, camelCase", () => {
      const list = op("/v1beta1/projects/{project}/calls", "get");
      expect(names(list, "query")).toEqual(expect.arrayContaining(["pageSize", "pageToken", "filter"]));
      expect(names(list, "query")).not.toContain("parent");
      expect(list.requestBody).toBeUndefined();
    });

    it("marks REQUIRED query fields required and maps their rules (SearchPhoneNumbers)", () => {
      const search = op("/v1beta1/phoneNumbers:search", "get");
      const params = search.parameters as Json[];
      expect(params.every((p) => p.in === "query")).toBe(true);
      const country = params.find((p) => p.name === "countryCode")!;
      expect(country).toMatchObject({ required: true, schema: { type: "string", pattern: "^[A-Z]{2}$" } });
      expect(params.find((p) => p.name === "pageSize")!.required).toBeUndefined();
      const numberType = params.find((p) => p.name === "numberType")!;
      expect(deref(docs.public, numberType.schema).type).toBe("string");
    });

    it('leaves no query parameters with body: "*" and keeps path fields out of the body', () => {
      const b = bindings.find((x) => x.body === "*" && x.template.includes("{name="));
      expect(b, "a binding with body * and a name in the path").toBeDefined();
      const doc = docs[documentOf(b!.service)];
      const [, item] = Object.entries(doc.paths as Record<string, Json>).find(
        ([p, i]) => openapiShape(p) === templateShape(b!.template) && i[b!.httpMethod],
      )!;
      const o = item[b!.httpMethod];
      expect(names(o, "query")).toEqual([]);
      expect(o.requestBody.content["application/json"].schema.properties?.name).toBeUndefined();
    });

    it("takes the body field as the request body (UpdateSipDomain: body sip_domain, update_mask in the query)", () => {
      const patch = op("/v1beta1/projects/{project}/sipDomains/{sipDomain}", "patch");
      expect(patch.requestBody.content["application/json"].schema.$ref).toBe(
        "#/components/schemas/enfonica.voice.v1beta1.SipDomain",
      );
      expect(names(patch, "query")).toContain("updateMask");
      expect(names(patch, "query")).not.toContain("sipDomain.displayName");
    });
  });

  describe("schemas", () => {
    const schemas = docs.public.components.schemas as Record<string, Json>;
    const call = () => schemas["enfonica.voice.v1beta1.Call"]!;

    it("maps an int64 field to a string (google.type.Money.units)", () => {
      expect(schemas["google.type.Money"]!.properties.units).toMatchObject({
        type: "string",
        format: "int64",
      });
      expect(schemas["google.type.Money"]!.properties.nanos).toMatchObject({
        type: "integer",
        format: "int32",
      });
    });

    it("maps an enum to a string enum of its value names (Call.state)", () => {
      const state = deref(docs.public, call().properties.state);
      expect(state.type).toBe("string");
      expect(state.enum).toEqual(expect.arrayContaining(["QUEUED", "RINGING", "IN_PROGRESS", "COMPLETED"]));
    });

    it("maps a Timestamp to a date-time string (Call.createTime)", () => {
      expect(call().properties.createTime).toMatchObject({ type: "string", format: "date-time" });
    });

    it("marks OUTPUT_ONLY fields readOnly (Call.state)", () => {
      expect(call().properties.state.readOnly).toBe(true);
      expect(call().properties.to.readOnly).toBeUndefined();
    });

    it("lists REQUIRED fields in required (Call.to, Call.from)", () => {
      expect(call().required).toEqual(expect.arrayContaining(["to", "from"]));
      expect(call().required).not.toContain("state");
    });

    it("maps protovalidate rules: max_len to maxLength, pattern, max_pairs to maxProperties", () => {
      const sipDomain = schemas["enfonica.voice.v1beta1.SipDomain"]!;
      expect(sipDomain.properties.displayName.maxLength).toBe(100);
      expect(call().properties.labels).toMatchObject({ type: "object", maxProperties: 50 });
      const withPattern = Object.values(schemas).some((s) =>
        Object.values((s.properties ?? {}) as Record<string, Json>).some(
          (p) => typeof p.pattern === "string",
        ),
      );
      expect(withPattern).toBe(true);
    });

    it("uses lowerCamelCase json names and the proto comments as descriptions", () => {
      expect(Object.keys(call().properties)).toContain("createTime");
      expect(Object.keys(call().properties)).not.toContain("create_time");
      expect(call().description).toMatch(/call/i);
      expect(call().properties.state.description).toMatch(/^Output only\./);
    });

    it("maps maps to objects and repeated fields to arrays", () => {
      expect(call().properties.labels.additionalProperties).toEqual({ type: "string" });
      const arrays = Object.values(schemas).flatMap((s) =>
        Object.values((s.properties ?? {}) as Record<string, Json>).filter((p) => p.type === "array"),
      );
      expect(arrays.length).toBeGreaterThan(0);
      for (const a of arrays) expect(a.items).toBeDefined();
    });
  });
});
