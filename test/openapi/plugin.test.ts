/**
 * The plugin's mapping on the synthetic `test.v1.Things` service
 * (test/rest/fixture.ts), for the parts of google/api/http.proto the real
 * protos do not use: additional_bindings, `**`, single-segment variables, a
 * custom method, response_body, a body field, nested and well-known query
 * parameters. The result must still be a valid document.
 */
import { validate } from "@readme/openapi-parser";
import { describe, expect, it } from "vitest";
import { http } from "../../gen/google/api/annotations_pb.js";
import { field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { buildDocument } from "../../scripts/protoc-gen-openapi/document.js";
import { ecmaPattern } from "../../scripts/protoc-gen-openapi/schemas.js";
import { buildFixture, defaultRules } from "../rest/fixture.js";
import type { Json } from "./support.js";

const ext = { http, fieldBehavior: field_behavior, validateField: undefined, validateOneof: undefined };
const spec = { title: "Things", description: "test", securityDescription: "token" };
type Rules = Parameters<typeof buildFixture>[0];
const documentOf = (rules: Rules) => buildDocument([buildFixture(rules).Things], ext, spec) as Json;

// GetDeep (`/v1/{path=things/**}`) has the shape of GetThing in OpenAPI: tested on its own.
const { GetDeep, ...rules } = defaultRules;
const doc = documentOf(rules);

function op(path: string, method: string): Json {
  const found = doc.paths[path]?.[method];
  expect(found, `${method} ${path} in ${Object.keys(doc.paths).join(", ")}`).toBeDefined();
  return found;
}

function params(o: Json, where: "path" | "query"): Record<string, Json> {
  return Object.fromEntries(
    ((o.parameters ?? []) as Json[]).filter((p) => p.in === where).map((p) => [p.name, p]),
  );
}

describe("protoc-gen-openapi on the synthetic Things service", () => {
  it("produces a valid OpenAPI 3.1 document", async () => {
    const result = await validate(structuredClone(doc) as never);
    if (!result.valid) expect.fail(JSON.stringify(result.errors, null, 2));
  });

  it("documents the rule and its additional binding, with distinct operation ids", () => {
    expect(op("/v1/things/{thing}", "get").operationId).toBe("Things_GetThing");
    const extra = op("/v1/shelves/{shelf}/things/{thing}", "get");
    expect(extra.operationId).toBe("Things_GetThing_1");
    expect(Object.keys(params(extra, "path"))).toEqual(["shelf", "thing"]);
    expect(extra["x-google-http"]).toEqual({
      template: "/v1/{name=shelves/*/things/*}",
      body: "",
      additionalBinding: 1,
    });
  });

  it("names a single-segment variable after its field and marks `**` multi-segment", () => {
    expect(Object.keys(params(op("/v1/echo/{name}/sub", "get"), "path"))).toEqual(["name"]);
    expect(params(op("/v1/files/{path}", "get"), "path").path!.schema["x-multi-segment"]).toBe(true);
  });

  it("documents `**` as one parameter spanning segments, and refuses what OpenAPI cannot tell apart", () => {
    const deep = documentOf({ GetDeep: GetDeep! });
    const p = deep.paths["/v1/things/{path}"].get.parameters[0];
    expect(p).toMatchObject({ name: "path", in: "path", schema: { "x-multi-segment": true } });
    expect(p.description).toMatch(/several segments/);
    // GET /v1/{name=things/*} and GET /v1/{path=things/**} are one OpenAPI operation.
    expect(() => documentOf(defaultRules)).toThrow(/GET \/v1\/things\/\{thing\} is already Things_GetThing/);
  });

  it("gives paths of the same shape the same parameter names (one path item)", async () => {
    const d = documentOf({
      GetThing: { pattern: { case: "get", value: "/v1/{name=things/*}" } },
      UpdateThing: { pattern: { case: "patch", value: "/v1/{path=things/**}" } },
    });
    expect(Object.keys(d.paths)).toEqual(["/v1/things/{thing}"]);
    expect(d.paths["/v1/things/{thing}"].patch.parameters[0]).toMatchObject({
      name: "thing",
      "x-field": "path",
    });
    const result = await validate(structuredClone(d) as never);
    expect(result.valid).toBe(true);
  });

  it("maps a custom method it can name (HEAD)", () => {
    expect(op("/v1/probe", "head").operationId).toBe("Things_Probe");
  });

  it("makes every other field a query parameter: nested dotted, well-known types as strings", () => {
    const q = params(op("/v1/things/{thing}", "get"), "query");
    expect(Object.keys(q)).not.toContain("name"); // bound by the path
    expect(Object.keys(q)).not.toContain("labels"); // maps cannot be query parameters
    expect(Object.keys(q).some((n) => n.startsWith("subs"))).toBe(false); // nor repeated messages
    expect(q.big!.schema).toMatchObject({ type: "string", format: "int64" });
    expect(q.ubig!.schema).toMatchObject({ type: "string", format: "uint64" });
    expect(q.tags!.schema).toEqual({ type: "array", items: { type: "string" } });
    expect(q.colors!.schema.items).toEqual({ $ref: "#/components/schemas/test.v1.Req.Color" });
    expect(q.at!.schema).toMatchObject({ type: "string", format: "date-time" });
    expect(q.wait!.schema).toMatchObject({ type: "string", pattern: expect.any(String) });
    expect(q.updateMask!.schema.type).toBe("string");
    expect(q.limit!.schema).toMatchObject({ type: ["integer", "null"], format: "int32" });
    expect(q.data!.schema).toMatchObject({ type: "string", contentEncoding: "base64" });
    expect(q["sub.a"]!.schema).toEqual({ type: "string" });
    expect(q["sub.b"]!.schema.type).toBe("string");
    expect(q["item.sub.a"]).toBeDefined();
  });

  it('has no query parameters with body: "*", and no path-bound field in the body', () => {
    const cancel = op("/v1/things/{thing}:cancel", "post");
    expect(params(cancel, "query")).toEqual({});
    const body = cancel.requestBody.content["application/json"].schema;
    expect(body.properties.name).toBeUndefined();
    expect(body.properties.big).toBeDefined();
  });

  it("takes a body field as the body and leaves it out of the query", () => {
    const update = op("/v1/things/{thing}", "patch");
    expect(update.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/test.v1.Item",
    });
    const q = Object.keys(params(update, "query"));
    expect(q.some((n) => n.startsWith("item"))).toBe(false);
    expect(q).toContain("big");
    const tags = op("/v1/tags", "post");
    expect(tags.requestBody.content["application/json"].schema).toEqual({
      type: "array",
      items: { type: "string" },
    });
  });

  it("answers with the response_body field when the rule names one", () => {
    const sub = op("/v1/echo/{name}/sub", "get");
    expect(sub.responses["200"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/test.v1.Sub",
    });
  });

  it("maps maps, repeated messages, doubles and enums in the schemas", () => {
    const req = doc.components.schemas["test.v1.Req"] as Json;
    expect(req.properties.labels).toEqual({ type: "object", additionalProperties: { type: "string" } });
    expect(req.properties.subs).toEqual({
      type: "array",
      items: { $ref: "#/components/schemas/test.v1.Sub" },
    });
    expect(req.properties.ratio).toEqual({ type: "number", format: "double" });
    expect(doc.components.schemas["test.v1.Req.Color"]).toEqual({
      type: "string",
      enum: ["COLOR_UNSPECIFIED", "RED", "GREEN"],
    });
  });
});

describe("ecmaPattern", () => {
  it.each([
    ["^(?i)https?://", "^[hH][tT][tT][pP][sS]?://"],
    ["(?i)[a-c]x\\d", "[a-cA-C][xX]\\d"],
    ["\\Afoo\\z", "^foo$"],
    ["^(?P<id>[0-9]+)$", "^(?<id>[0-9]+)$"],
    ["^[A-Z]{2}$", "^[A-Z]{2}$"],
  ])("turns the RE2 %s into %s", (re2, ecma) => {
    expect(ecmaPattern(re2)).toBe(ecma);
  });

  it("gives up on what ECMAScript cannot compile", () => {
    expect(ecmaPattern("(?i")).toBeUndefined();
  });
});
