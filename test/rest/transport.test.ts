/**
 * REST against a real listening server: build() with test implementations
 * of Unsubscribers and RegulatoryListings (in memory, building real
 * messages), the synthetic Things service (echoes its request), and the
 * UNIMPLEMENTED placeholders, all behind the real interceptors. Requests
 * are made as the operator, on projects that exist (p1, p2), unless a test
 * says otherwise.
 */
import { clone, create, type DescService, type JsonValue } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ListUnsubscribersResponseSchema,
  type Unsubscriber,
  Unsubscriber_UnsubscribeMethod,
  UnsubscriberSchema,
  Unsubscribers,
} from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { PhoneNumberInstances } from "../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { PhoneNumbers } from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import {
  ListRegulatoryListingsResponseSchema,
  type RegulatoryListing,
  RegulatoryListingSchema,
  RegulatoryListings,
  SearchRegulatoryListingsResponseSchema,
} from "../../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { alreadyExists, notFound } from "../../src/api/errors.js";
import { unimplementedService } from "../../src/api/unimplemented.js";
import { type App, build } from "../../src/server.js";
import type { ServiceEntry } from "../../src/services.js";
import { bearer, createProjects, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { pglite, useTestDatabase } from "../support/db.js";
import { buildFixture } from "./fixture.js";

const OPERATOR_AUTHORIZATION = `Bearer ${TEST_OPERATOR_TOKEN}`;
const MISSING_CREDENTIALS_MESSAGE = "missing credentials: send 'Authorization: Bearer <api key secret>'";

/** What the services saw: the last request of each method and its headers. */
const seen = new Map<string, { request: unknown; headers: Headers }>();

function record(method: string, request: unknown, ctx: HandlerContext): void {
  seen.set(method, { request, headers: new Headers(ctx.requestHeader) });
}

const clock = { now: () => new Date("2026-01-02T03:04:05Z") };

function unsubscribersImpl(): ServiceImpl<typeof Unsubscribers> {
  const store = new Map<string, Unsubscriber>();
  let next = 1;
  const get = (name: string) => {
    const u = store.get(name);
    if (u === undefined) throw notFound("messaging.api.enfonica.com/Unsubscriber", name);
    return u;
  };
  return {
    createUnsubscriber(req, ctx) {
      record("CreateUnsubscriber", req, ctx);
      const phone = req.unsubscriber?.phone ?? "";
      if (phone === "+crash") throw new Error("connection to db:5432 failed, password=hunter2");
      for (const u of store.values()) {
        if (u.name.startsWith(`${req.parent}/`) && u.phone === phone) {
          throw alreadyExists(
            "messaging.api.enfonica.com/Unsubscriber",
            u.name,
            `${phone} is already unsubscribed`,
          );
        }
      }
      const u = create(UnsubscriberSchema, {
        name: `${req.parent}/unsubscribers/u${next++}`,
        phone,
        labels: req.unsubscriber?.labels ?? {},
        unsubscribeMethod: req.unsubscriber?.unsubscribeMethod || Unsubscriber_UnsubscribeMethod.MANUAL,
        createTime: timestampFromDate(clock.now()),
      });
      store.set(u.name, u);
      return u;
    },
    getUnsubscriber(req, ctx) {
      record("GetUnsubscriber", req, ctx);
      return get(req.name);
    },
    listUnsubscribers(req, ctx) {
      record("ListUnsubscribers", req, ctx);
      const all = [...store.values()]
        .filter((u) => u.name.startsWith(`${req.parent}/`) && (req.phone === "" || u.phone === req.phone))
        .reverse();
      const size = req.pageSize === 0 ? 10 : Math.min(req.pageSize, 100);
      const start = req.pageToken === "" ? 0 : Number(req.pageToken);
      const page = all.slice(start, start + size);
      const more = start + size < all.length;
      return create(ListUnsubscribersResponseSchema, {
        unsubscribers: page,
        nextPageToken: more ? String(start + size) : "",
      });
    },
    updateUnsubscriber(req, ctx) {
      record("UpdateUnsubscriber", req, ctx);
      const u = get(req.unsubscriber?.name ?? "");
      if (req.updateMask?.paths.includes("labels")) u.labels = { ...(req.unsubscriber?.labels ?? {}) };
      return u;
    },
    deleteUnsubscriber(req, ctx) {
      record("DeleteUnsubscriber", req, ctx);
      const u = get(req.name);
      store.delete(req.name);
      return u;
    },
  };
}

function regulatoryListingsImpl(): ServiceImpl<typeof RegulatoryListings> {
  const store = new Map<string, RegulatoryListing>();
  let next = 1;
  const get = (name: string) => {
    const l = store.get(name);
    if (l === undefined) throw notFound("numbering.api.enfonica.com/RegulatoryListing", name);
    return l;
  };
  return {
    createRegulatoryListing(req, ctx) {
      record("CreateRegulatoryListing", req, ctx);
      const l = req.regulatoryListing
        ? clone(RegulatoryListingSchema, req.regulatoryListing)
        : create(RegulatoryListingSchema);
      l.name = `${req.parent}/regulatoryListings/rl${next++}`;
      l.createTime = timestampFromDate(clock.now());
      l.valid = true;
      store.set(l.name, l);
      return l;
    },
    getRegulatoryListing(req, ctx) {
      record("GetRegulatoryListing", req, ctx);
      return get(req.name);
    },
    listRegulatoryListings(req, ctx) {
      record("ListRegulatoryListings", req, ctx);
      return create(ListRegulatoryListingsResponseSchema, {
        regulatoryListings: [...store.values()].filter((l) => l.name.startsWith(`${req.parent}/`)),
      });
    },
    updateRegulatoryListing(req, ctx) {
      record("UpdateRegulatoryListing", req, ctx);
      const l = get(req.regulatoryListing?.name ?? "");
      if (req.updateMask?.paths.includes("display_name"))
        l.displayName = req.regulatoryListing?.displayName ?? "";
      return l;
    },
    deleteRegulatoryListing(req, ctx) {
      record("DeleteRegulatoryListing", req, ctx);
      get(req.name);
      store.delete(req.name);
      return {};
    },
    searchRegulatoryListings(req, ctx) {
      record("SearchRegulatoryListings", req, ctx);
      return create(SearchRegulatoryListingsResponseSchema, {
        regulatoryListings: [...store.values()].filter(
          (l) => l.name.startsWith(`${req.parent}/`) && l.address?.regionCode === req.regionCode,
        ),
      });
    },
  };
}

/** Things answers every call with its own request. */
function echoImpl(desc: DescService): ServiceEntry["impl"] {
  const impl: Record<string, (req: unknown, ctx: HandlerContext) => unknown> = {};
  for (const m of desc.methods) {
    impl[m.localName] = (req, ctx) => {
      record(m.name, req, ctx);
      return req;
    };
  }
  return impl as unknown as ServiceEntry["impl"];
}

const fixture = buildFixture();
let app: App;
let base: string;
// Holds the projects (and credentials); the services here keep their data in memory.
const database = useTestDatabase(pglite);

/** The synthetic Things service is operator-only (a method without a policy is refused). */
const thingsPolicies = Object.fromEntries(
  fixture.Things.methods.map((m) => [
    `${fixture.Things.typeName}/${m.name}`,
    { permission: null, projects: [] },
  ]),
);

beforeAll(async () => {
  await createProjects(database.db, "p1", "p2");
  app = await build({
    config: testConfig({ PORT: "0" }),
    clock,
    db: database.db,
    services: [
      { desc: PhoneNumbers, impl: unimplementedService(PhoneNumbers) },
      { desc: PhoneNumberInstances, impl: unimplementedService(PhoneNumberInstances) },
      { desc: Unsubscribers, impl: unsubscribersImpl() },
      { desc: RegulatoryListings, impl: regulatoryListingsImpl() },
      { desc: fixture.Things, impl: echoImpl(fixture.Things) },
    ],
    extraPolicies: thingsPolicies,
  });
  const address = await app.listen(0, "127.0.0.1");
  base = `http://127.0.0.1:${address.port}`;
});

afterAll(async () => {
  await app?.close();
});

interface Answer {
  status: number;
  headers: Headers;
  json: Record<string, JsonValue>;
}

/** A request with `headers`: by default the operator's credential, and nothing else. */
async function call(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = { authorization: OPERATOR_AUTHORIZATION },
): Promise<Answer> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] ??= "application/json";
  }
  const res = await fetch(base + path, init);
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text === "" ? {} : JSON.parse(text) };
}

/** A request without a credential. */
function anonymous(method: string, path: string, body?: unknown): Promise<Answer> {
  return call(method, path, body, {});
}

type ErrorJson = { code: number; message: string; status: string; details: Array<Record<string, JsonValue>> };

function errorOf(a: Answer): ErrorJson {
  expect(Object.keys(a.json)).toEqual(["error"]);
  const e = a.json.error as unknown as ErrorJson;
  expect(e.code).toBe(a.status);
  expect(a.headers.get("content-type")).toBe("application/json; charset=utf-8");
  // Every error carries the request's id (src/observability/); compared elsewhere.
  for (const d of e.details as { metadata?: Record<string, string> }[]) {
    if (d.metadata?.requestId === undefined) continue;
    expect(d.metadata.requestId).toBe(a.headers.get("x-request-id"));
    delete d.metadata.requestId;
    if (Object.keys(d.metadata).length === 0) delete d.metadata;
  }
  return e;
}

function violations(e: ErrorJson): string[] {
  const br = e.details.find((d) => d["@type"] === "type.googleapis.com/google.rpc.BadRequest");
  return ((br?.fieldViolations ?? []) as Array<{ field: string }>).map((v) => v.field);
}

describe("REST transport: Unsubscribers", () => {
  it("creates with the body mapped to the body field and answers proto3 JSON", async () => {
    const a = await call("POST", "/v1/projects/p1/unsubscribers", {
      phone: "+61491570156",
      labels: { src: "test" },
    });
    expect(a.status).toBe(200);
    expect(a.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(a.json).toEqual({
      name: "projects/p1/unsubscribers/u1",
      phone: "+61491570156",
      unsubscribeMethod: "MANUAL",
      labels: { src: "test" },
      createTime: "2026-01-02T03:04:05Z",
    });
  });

  it("gets by the path variable", async () => {
    const a = await call("GET", "/v1/projects/p1/unsubscribers/u1");
    expect(a.status).toBe(200);
    expect(a.json.name).toBe("projects/p1/unsubscribers/u1");
    expect(seen.get("GetUnsubscriber")?.request).toMatchObject({ name: "projects/p1/unsubscribers/u1" });
  });

  it("keeps %2F in a multi-segment variable and decodes the rest", async () => {
    const a = await call("GET", "/v1/projects/p1/unsubscribers/a%2Fb%20c");
    expect(a.status).toBe(404);
    expect(seen.get("GetUnsubscriber")?.request).toMatchObject({ name: "projects/p1/unsubscribers/a%2Fb c" });
  });

  it("answers NOT_FOUND as 404 with ErrorInfo and ResourceInfo", async () => {
    const e = errorOf(await call("GET", "/v1/projects/p1/unsubscribers/nope"));
    expect(e).toMatchObject({
      code: 404,
      status: "NOT_FOUND",
      message: "projects/p1/unsubscribers/nope not found",
    });
    expect(e.details).toEqual([
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        reason: "RESOURCE_NOT_FOUND",
        domain: "switchboard",
        metadata: { resource: "projects/p1/unsubscribers/nope" },
      },
      {
        "@type": "type.googleapis.com/google.rpc.ResourceInfo",
        resourceType: "messaging.api.enfonica.com/Unsubscriber",
        resourceName: "projects/p1/unsubscribers/nope",
        description: "not found",
      },
    ]);
  });

  it("answers ALREADY_EXISTS as 409", async () => {
    const e = errorOf(await call("POST", "/v1/projects/p1/unsubscribers", { phone: "+61491570156" }));
    expect(e).toMatchObject({ code: 409, status: "ALREADY_EXISTS" });
  });

  it("pages with pageSize / pageToken from the query", async () => {
    await call("POST", "/v1/projects/p1/unsubscribers", { phone: "+61491570157" });
    await call("POST", "/v1/projects/p1/unsubscribers", { phone: "+61491570158" });
    const first = await call("GET", "/v1/projects/p1/unsubscribers?pageSize=2");
    expect(first.status).toBe(200);
    expect((first.json.unsubscribers as JsonValue[]).length).toBe(2);
    expect(first.json.nextPageToken).toBe("2");
    const second = await call(
      "GET",
      `/v1/projects/p1/unsubscribers?page_size=2&pageToken=${first.json.nextPageToken}`,
    );
    expect((second.json.unsubscribers as Array<{ phone: string }>).map((u) => u.phone)).toEqual([
      "+61491570156",
    ]);
    expect(second.json.nextPageToken).toBeUndefined();
    const one = await call("GET", "/v1/projects/p1/unsubscribers?phone=%2B61491570157");
    expect((one.json.unsubscribers as Array<{ phone: string }>).map((u) => u.phone)).toEqual([
      "+61491570157",
    ]);
  });

  it.each(["updateMask", "update_mask"])("updates with the FieldMask from ?%s", async (param) => {
    const a = await call("PATCH", `/v1/projects/p1/unsubscribers/u1?${param}=labels`, {
      name: "projects/elsewhere/unsubscribers/zz",
      labels: { v: param },
    });
    expect(a.status).toBe(200);
    expect(a.json.labels).toEqual({ v: param });
    const req = seen.get("UpdateUnsubscriber")?.request as {
      unsubscriber: { name: string };
      updateMask: { paths: string[] };
    };
    expect(req.unsubscriber.name).toBe("projects/p1/unsubscribers/u1");
    expect(req.updateMask.paths).toEqual(["labels"]);
  });

  it("validates through the same interceptor: BadRequest naming unsubscriber.phone", async () => {
    const e = errorOf(await call("POST", "/v1/projects/p1/unsubscribers", { phone: "x".repeat(40) }));
    expect(e).toMatchObject({ code: 400, status: "INVALID_ARGUMENT" });
    expect(violations(e)).toEqual(["unsubscriber.phone"]);
    expect(e.details[0]).toMatchObject({
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason: "INVALID_ARGUMENT",
    });
  });

  it("gives the same error as the Connect protocol for the same request", async () => {
    const client = createClient(
      Unsubscribers,
      createConnectTransport({
        baseUrl: base,
        httpVersion: "1.1",
        interceptors: [bearer(TEST_OPERATOR_TOKEN)],
      }),
    );
    const err = await client
      .createUnsubscriber({ parent: "projects/p1", unsubscriber: { phone: "x".repeat(40) } })
      .then(() => undefined, ConnectError.from);
    expect(err?.code).toBe(Code.InvalidArgument);
    const rest = errorOf(await call("POST", "/v1/projects/p1/unsubscribers", { phone: "x".repeat(40) }));
    expect(rest.message).toBe(err?.rawMessage);
    expect(err?.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(
      violations(rest),
    );
  });

  it("reports a missing required body as a validation error", async () => {
    const e = errorOf(await call("POST", "/v1/projects/p1/unsubscribers"));
    expect(violations(e)).toEqual(["unsubscriber"]);
  });

  it("deletes and returns the resource", async () => {
    const created = await call("POST", "/v1/projects/p2/unsubscribers", { phone: "+61400000000" });
    const a = await call("DELETE", `/v1/${created.json.name}`);
    expect(a.status).toBe(200);
    expect(a.json.phone).toBe("+61400000000");
    expect((await call("GET", `/v1/${created.json.name}`)).status).toBe(404);
  });

  it("passes Authorization and x-* headers to the services, and nothing else", async () => {
    await call("GET", "/v1/projects/p1/unsubscribers/u1", undefined, {
      authorization: OPERATOR_AUTHORIZATION,
      "x-request-id": "req-42",
      cookie: "session=abc",
    });
    const headers = seen.get("GetUnsubscriber")!.headers;
    expect(headers.get("authorization")).toBe(OPERATOR_AUTHORIZATION);
    expect(headers.get("x-request-id")).toBe("req-42");
    expect(headers.get("cookie")).toBeNull();
  });

  it("answers a defect as a bare 500 without its message", async () => {
    const a = await call("POST", "/v1/projects/p1/unsubscribers", { phone: "+crash" });
    expect(errorOf(a)).toEqual({ code: 500, status: "INTERNAL", message: "internal error", details: [] });
    expect(JSON.stringify(a.json)).not.toMatch(/hunter2|5432/);
  });
});

describe("REST transport: RegulatoryListings", () => {
  const listing = {
    displayName: "Head office",
    address: { addressLines: ["1 George St"], locality: "Sydney", postalCode: "2000", regionCode: "AU" },
    business: { business: "Acme Pty Ltd" },
  };

  it("creates with a nested body and proto names accepted", async () => {
    const a = await call("POST", "/v1beta1/projects/p1/regulatoryListings", {
      display_name: "Head office",
      address: { address_lines: ["1 George St"], locality: "Sydney", postal_code: "2000", region_code: "AU" },
      business: { business: "Acme Pty Ltd" },
    });
    expect(a.status).toBe(200);
    expect(a.json).toEqual({
      ...listing,
      name: "projects/p1/regulatoryListings/rl1",
      createTime: "2026-01-02T03:04:05Z",
      valid: true,
    });
  });

  it("updates through the nested path variable regulatory_listing.name", async () => {
    const a = await call("PATCH", "/v1beta1/projects/p1/regulatoryListings/rl1?updateMask=displayName", {
      displayName: "Branch",
    });
    expect(a.status).toBe(200);
    expect(a.json.displayName).toBe("Branch");
    expect(seen.get("UpdateRegulatoryListing")?.request).toMatchObject({
      regulatoryListing: { name: "projects/p1/regulatoryListings/rl1", displayName: "Branch" },
      updateMask: { paths: ["display_name"] },
    });
  });

  it.each([
    ["by name", "numberType=MOBILE&regionCode=AU"],
    ["by number", "number_type=3&region_code=AU"],
  ])("searches with the :search verb and the enum %s", async (_name, query) => {
    const a = await call("GET", `/v1beta1/projects/p1/regulatoryListings:search?${query}`);
    expect(a.status).toBe(200);
    expect((a.json.regulatoryListings as Array<{ name: string }>).map((l) => l.name)).toEqual([
      "projects/p1/regulatoryListings/rl1",
    ]);
    expect(seen.get("SearchRegulatoryListings")?.request).toMatchObject({
      parent: "projects/p1",
      regionCode: "AU",
      numberType: 3,
    });
  });

  it("does not confuse :search with Get of a listing", async () => {
    const a = await call("GET", "/v1beta1/projects/p1/regulatoryListings/search");
    expect(errorOf(a).status).toBe("NOT_FOUND");
    expect(seen.get("GetRegulatoryListing")?.request).toMatchObject({
      name: "projects/p1/regulatoryListings/search",
    });
    expect(errorOf(await call("POST", "/v1beta1/projects/p1/regulatoryListings:search")).code).toBe(405);
  });

  it("rejects an unknown enum name in the query", async () => {
    const e = errorOf(
      await call("GET", "/v1beta1/projects/p1/regulatoryListings:search?numberType=FAX&regionCode=AU"),
    );
    expect(violations(e)).toEqual(["number_type"]);
  });

  it("validates the search (required enum)", async () => {
    const e = errorOf(await call("GET", "/v1beta1/projects/p1/regulatoryListings:search?regionCode=AU"));
    expect(violations(e)).toEqual(["number_type"]);
  });

  it("lists", async () => {
    const a = await call("GET", "/v1beta1/projects/p1/regulatoryListings");
    expect((a.json.regulatoryListings as JsonValue[]).length).toBe(1);
  });

  it("deletes and answers google.protobuf.Empty as {}", async () => {
    const res = await fetch(`${base}/v1beta1/projects/p1/regulatoryListings/rl1`, {
      method: "DELETE",
      headers: { authorization: OPERATOR_AUTHORIZATION },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("{}");
  });
});

describe("REST transport: authentication", () => {
  const credentialsMissing = {
    code: 401,
    status: "UNAUTHENTICATED",
    message: MISSING_CREDENTIALS_MESSAGE,
    details: [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        reason: "CREDENTIALS_MISSING",
        domain: "switchboard",
      },
    ],
  };

  it("answers 401 with the Google error body without a credential, before validation", async () => {
    seen.delete("CreateUnsubscriber");
    const a = await anonymous("POST", "/v1/projects/p1/unsubscribers", { phone: "x".repeat(40) });
    expect(a.status).toBe(401);
    expect(errorOf(a)).toEqual(credentialsMissing);
    expect(seen.has("CreateUnsubscriber")).toBe(false);
  });

  it("answers 401 without a credential whether the resource exists or not", async () => {
    expect(errorOf(await anonymous("GET", "/v1/projects/p1/unsubscribers/u1"))).toEqual(credentialsMissing);
    expect(errorOf(await anonymous("GET", "/v1/projects/nope/unsubscribers/u1"))).toEqual(credentialsMissing);
    expect(errorOf(await anonymous("GET", "/v1beta1/phoneNumbers:search?countryCode=AU"))).toEqual(
      credentialsMissing,
    );
  });

  it("answers 401 for a token it does not know, and for a scheme other than Bearer", async () => {
    for (const authorization of [`Bearer ${TEST_OPERATOR_TOKEN}x`, `Basic ${TEST_OPERATOR_TOKEN}`]) {
      const e = errorOf(await call("GET", "/v1/projects/p1/unsubscribers/u1", undefined, { authorization }));
      expect(e).toMatchObject({ code: 401, status: "UNAUTHENTICATED" });
    }
  });

  it("answers 404 naming a project that does not exist, after validation", async () => {
    seen.delete("ListUnsubscribers");
    const e = errorOf(await call("GET", "/v1/projects/nope/unsubscribers"));
    expect(e).toMatchObject({ code: 404, status: "NOT_FOUND", message: "projects/nope not found" });
    expect(e.details[0]).toMatchObject({
      reason: "RESOURCE_NOT_FOUND",
      metadata: { resource: "projects/nope" },
    });
    expect(seen.has("ListUnsubscribers")).toBe(false);
    const invalid = errorOf(await call("POST", "/v1/projects/nope/unsubscribers", { phone: "x".repeat(40) }));
    expect(invalid).toMatchObject({ code: 400, status: "INVALID_ARGUMENT" });
    expect(violations(invalid)).toEqual(["unsubscriber.phone"]);
  });

  it("refuses a served method that has no permission policy, even to the operator", async () => {
    // The same services without the Things policies.
    const bare = await build({
      config: testConfig({ PORT: "0" }),
      clock,
      db: database.db,
      services: [{ desc: fixture.Things, impl: echoImpl(fixture.Things) }],
    });
    try {
      const { port } = await bare.listen(0, "127.0.0.1");
      seen.delete("GetThing");
      const res = await fetch(`http://127.0.0.1:${port}/v1/things/t1`, {
        headers: { authorization: OPERATOR_AUTHORIZATION },
      });
      const e = errorOf({
        status: res.status,
        headers: res.headers,
        json: (await res.json()) as Record<string, JsonValue>,
      });
      expect(e).toMatchObject({ code: 403, status: "PERMISSION_DENIED" });
      expect(e.details[0]).toMatchObject({ reason: "NO_POLICY" });
      expect(seen.has("GetThing")).toBe(false);
    } finally {
      await bare.close();
    }
  });

  it("serves /healthz and /readyz without a credential", async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });
});

describe("REST transport: protocol errors", () => {
  it("answers UNIMPLEMENTED placeholders with 501", async () => {
    const e = errorOf(await call("GET", "/v1beta1/phoneNumbers:search?countryCode=AU"));
    expect(e).toMatchObject({ code: 501, status: "UNIMPLEMENTED" });
    expect(e.details[0]).toMatchObject({ reason: "NOT_IMPLEMENTED" });
  });

  it("answers 404 for a path no route has", async () => {
    const e = errorOf(await call("GET", "/v2/nothing/here"));
    expect(e).toMatchObject({ code: 404, status: "NOT_FOUND" });
    expect(e.details[0]).toMatchObject({ reason: "ROUTE_NOT_FOUND" });
  });

  it("answers 405 with Allow when the path matches another verb", async () => {
    const a = await call("PUT", "/v1/projects/p1/unsubscribers/u1", {});
    expect(a.status).toBe(405);
    expect(a.headers.get("allow")).toBe("DELETE, GET, PATCH");
    expect(errorOf(a)).toMatchObject({ status: "UNIMPLEMENTED" });
  });

  it("answers 405 for a custom verb used with the wrong HTTP method", async () => {
    const a = await call("DELETE", "/v1beta1/projects/p1/phoneNumberInstances/n1:move");
    expect(a.status).toBe(405);
    expect(a.headers.get("allow")).toBe("POST");
  });

  it("answers 400 for bad JSON", async () => {
    const e = errorOf(await call("POST", "/v1/projects/p1/unsubscribers", '{"phone": "+61'));
    expect(e).toMatchObject({ code: 400, status: "INVALID_ARGUMENT" });
    expect(e.message).toMatch(/^invalid JSON in request body/);
    expect(e.details[0]).toMatchObject({ reason: "INVALID_JSON" });
  });

  it("answers 400 naming an unknown body field", async () => {
    const e = errorOf(await call("POST", "/v1/projects/p1/unsubscribers", { phone: "+61", nope: 1 }));
    expect(violations(e)).toEqual(["unsubscriber.nope"]);
  });

  it("answers 400 naming an unknown query parameter", async () => {
    const e = errorOf(await call("GET", "/v1/projects/p1/unsubscribers?pageSiz=1"));
    expect(violations(e)).toEqual(["pageSiz"]);
  });

  it("refuses query parameters when body is *", async () => {
    const e = errorOf(
      await call(
        "POST",
        "/v1beta1/projects/p1/phoneNumberInstances/n1:move?destinationParent=projects/p2",
        {},
      ),
    );
    expect(violations(e)).toEqual(["destinationParent"]);
  });

  it("refuses a body where the rule has none, before calling the method", async () => {
    const e = errorOf(await call("DELETE", "/v1/projects/p1/unsubscribers/u1", "{}"));
    expect(e.details[0]).toMatchObject({ reason: "BODY_NOT_ALLOWED" });
    expect((await call("GET", "/v1/projects/p1/unsubscribers/u1")).status).toBe(200);
  });

  it("answers 413 for a body over the limit", async () => {
    const a = await call(
      "POST",
      "/v1/projects/p1/unsubscribers",
      `{"phone":"${"x".repeat(5 * 1024 * 1024)}"}`,
    );
    expect(errorOf(a)).toMatchObject({ code: 413, status: "RESOURCE_EXHAUSTED" });
  });

  it("survives hostile input and keeps serving", async () => {
    const hostile: Array<[string, string, string | Uint8Array | undefined]> = [
      ["POST", "/v1/projects/p1/unsubscribers", new Uint8Array([0xff, 0xfe, 0x00, 0x7b])],
      ["POST", "/v1/projects/p1/unsubscribers", "[".repeat(100_000)],
      ["POST", "/v1/projects/p1/unsubscribers", `${'{"labels":'.repeat(5000)}{}${"}".repeat(5000)}`],
      ["POST", "/v1/projects/p1/unsubscribers", '{"__proto__":{"x":1}}'],
      ["POST", "/v1/projects/p1/unsubscribers", "null"],
      ["GET", `/v1/projects/p1/unsubscribers?${"a.".repeat(2000)}b=1`, undefined],
      ["GET", "/v1/projects/p1/unsubscribers/%E0%A4%A", undefined],
      ["GET", "/v1/projects/%zz/unsubscribers", undefined],
      ["GET", "/v1/projects/p1/unsubscribers?pageSize=%zz&page_size", undefined],
      ["PATCH", "/v1/projects/p1/unsubscribers/u1?updateMask=a__b", "{}"],
    ];
    for (const [method, path, body] of hostile) {
      const a = await call(method, path, body);
      expect(a.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
      expect(a.status, `${method} ${path}`).toBeLessThan(500);
      errorOf(a);
    }
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });
});

describe("REST transport: the synthetic Things service", () => {
  it("maps 64-bit ints, repeated values, enums, bools and well-known types from the query", async () => {
    const a = await call(
      "GET",
      "/v1/things/t1?big=9007199254740993&tags=a&tags=b&colors=RED&colors=2&flag=true" +
        "&at=2024-05-06T07:08:09Z&wait=1.5s&update_mask=sub.a,item.title&limit=7&sub.a=x&sub.b=-5",
    );
    expect(a.status).toBe(200);
    expect(a.json).toEqual({
      name: "things/t1",
      big: "9007199254740993",
      tags: ["a", "b"],
      colors: ["RED", "GREEN"],
      flag: true,
      at: "2024-05-06T07:08:09Z",
      wait: "1.500s",
      updateMask: "sub.a,item.title",
      limit: 7,
      sub: { a: "x", b: "-5" },
    });
  });

  it("serves additional bindings", async () => {
    const a = await call("GET", "/v1/shelves/s1/things/t1");
    expect(a.json).toEqual({ name: "shelves/s1/things/t1" });
  });

  it("prefers a literal to * and * to **", async () => {
    await call("GET", "/v1/things/special");
    expect(seen.has("GetSpecial")).toBe(true);
    const deep = await call("GET", "/v1/things/a/b/c");
    expect(deep.json).toEqual({ path: "things/a/b/c" });
  });

  it("fully decodes a single-segment variable; body * with the path winning", async () => {
    const a = await call("POST", "/v1/echo/a%2Fb", { name: "ignored", ratio: 0.5 });
    expect(a.json).toEqual({ name: "a/b", ratio: 0.5 });
  });

  it("sends only the response_body field", async () => {
    const a = await call("GET", "/v1/echo/e1/sub?sub.a=only");
    expect(a.json).toEqual({ a: "only" });
  });

  it("serves a custom HTTP method", async () => {
    const res = await fetch(`${base}/v1/probe`, {
      method: "HEAD",
      headers: { authorization: OPERATOR_AUTHORIZATION },
    });
    expect(res.status).toBe(200);
    expect(seen.has("Probe")).toBe(true);
  });
});
