/**
 * Hardening item 1: strings the database cannot store (NUL, lone
 * surrogates) are INVALID_ARGUMENT naming the field, on every transport and
 * both backends, and nothing is written. One generic rule in the validation
 * interceptor (src/api/safe-input.ts) covers ids, body fields, repeated
 * fields, map keys and values, and the admin API; forged page tokens
 * carrying such strings are INVALID_ARGUMENT naming `page_token`.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Unsubscribers } from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { RegulatoryListings } from "../../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { Projects } from "../../gen/switchboard/admin/v1/projects_pb.js";
import { queryHash } from "../../src/api/pagination.js";
import { type App, build } from "../../src/server.js";
import { allAdapters, type Outcome, type TransportAdapter } from "../e2e/transports.js";
import { newApiKey, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

const ADDRESS = {
  addressLines: ["1 George Street"],
  locality: "Sydney",
  administrativeArea: "NSW",
  postalCode: "2000",
  regionCode: "AU",
};

function expectInvalid(outcome: Outcome, field: string | RegExp, transport: string): void {
  expect(outcome.ok, `${transport}: ${JSON.stringify(outcome)}`).toBe(false);
  if (outcome.ok) return;
  expect(outcome.code, `${transport}: ${outcome.message}`).toBe("INVALID_ARGUMENT");
  expect(outcome.fieldViolations.length, `${transport}: ${JSON.stringify(outcome)}`).toBeGreaterThan(0);
  for (const f of outcome.fieldViolations) expect(f, transport).toMatch(field);
  expect(outcome.message, transport).not.toMatch(/byte sequence|encoding|sql|internal/i);
}

describe.each(testDatabases())("NUL and unstorable text on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let adapters: TransportAdapter[];
  let project: string;
  let owner: string;
  let baseUrl: string;

  beforeAll(async () => {
    app = await build({ config: testConfig({ PORT: "0" }), db: database.db });
    const { port } = await app.listen(0, "127.0.0.1");
    baseUrl = `http://127.0.0.1:${port}`;
    adapters = await allAdapters(port, [RegulatoryListings, Unsubscribers, Projects]);
    project = await newProject(database.db);
    owner = (await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret;
  }, 120_000);
  afterAll(async () => {
    for (const a of adapters ?? []) await a.close();
    await app?.close();
  });

  const count = async () => {
    const rest = adapters.find((a) => a.name === "connect-json")!;
    const res = await rest.call(
      RegulatoryListings,
      "ListRegulatoryListings",
      { parent: project, pageSize: 100 },
      owner,
    );
    const unsub = await rest.call(
      Unsubscribers,
      "ListUnsubscribers",
      { parent: project, pageSize: 100 },
      owner,
    );
    if (!res.ok || !unsub.ok) throw new Error("list failed");
    const n = (j: unknown, k: string) => ((j as JsonObject)[k] as unknown[] | undefined)?.length ?? 0;
    return n(res.json, "regulatoryListings") + n(unsub.json, "unsubscribers");
  };

  const cases: {
    what: string;
    service: typeof RegulatoryListings | typeof Unsubscribers | typeof Projects;
    method: string;
    request: () => JsonObject;
    field: string | RegExp;
    operator?: boolean;
    only?: string[];
  }[] = [
    {
      what: "a NUL in a resource id",
      service: RegulatoryListings,
      method: "GetRegulatoryListing",
      request: () => ({ name: `${project}/regulatoryListings/\u0000` }),
      field: /^name$/,
    },
    {
      what: "a NUL in a display name",
      service: RegulatoryListings,
      method: "CreateRegulatoryListing",
      request: () => ({
        parent: project,
        regulatoryListing: {
          displayName: "Head\u0000office",
          business: { business: "Acme" },
          address: ADDRESS,
        },
      }),
      field: "regulatory_listing.display_name",
    },
    {
      what: "a NUL in a repeated address line",
      service: RegulatoryListings,
      method: "CreateRegulatoryListing",
      request: () => ({
        parent: project,
        regulatoryListing: {
          displayName: "Head office",
          business: { business: "Acme" },
          address: { ...ADDRESS, addressLines: ["1 George St", "Level\u00003"] },
        },
      }),
      field: "regulatory_listing.address.address_lines[1]",
    },
    {
      what: "a lone surrogate in a name",
      service: RegulatoryListings,
      method: "CreateRegulatoryListing",
      request: () => ({
        parent: project,
        regulatoryListing: {
          displayName: "Head office",
          business: { business: "Acme \ud800" },
          address: ADDRESS,
        },
      }),
      field: "regulatory_listing.business.business",
      // protobuf-es refuses to encode it, protobufjs (grpc-js) sends bytes that
      // are not UTF-8 (INVALID_ARGUMENT MALFORMED_MESSAGE, protocols.test.ts)
      only: ["rest"],
    },
    {
      what: "a NUL in a page token",
      service: Unsubscribers,
      method: "ListUnsubscribers",
      request: () => ({ parent: project, pageToken: "abc\u0000" }),
      field: "page_token",
    },
    {
      what: "a NUL in a phone number",
      service: Unsubscribers,
      method: "CreateUnsubscriber",
      request: () => ({ parent: project, unsubscriber: { phone: "+61491570156\u0000" } }),
      field: "unsubscriber.phone",
    },
    {
      what: "a NUL in an admin display name",
      service: Projects,
      method: "CreateProject",
      request: () => ({ projectId: "nul-project", project: { displayName: "a\u0000b" } }),
      field: "project.display_name",
      operator: true,
    },
  ];

  for (const c of cases) {
    it(`answers INVALID_ARGUMENT for ${c.what} on every transport, writing nothing`, async () => {
      const before = await count();
      for (const a of adapters) {
        if (c.only !== undefined && !c.only.includes(a.name)) continue;
        if (c.operator && a.name === "rest") continue; // the REST adapter knows the public routes only: below
        const outcome = await a.call(
          c.service,
          c.method,
          c.request(),
          c.operator ? TEST_OPERATOR_TOKEN : owner,
        );
        expectInvalid(outcome, c.field, a.name);
      }
      expect(await count()).toBe(before);
    });
  }

  it("answers INVALID_ARGUMENT for a NUL in an admin REST body, a REST path and a map key", async () => {
    const post = (path: string, body: unknown) =>
      fetch(`${baseUrl}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const res = await post("/admin/v1/projects?projectId=nul-project", { displayName: "a\u0000b" });
    expect(res.status).toBe(400);
    const json = (await res.json()) as {
      error: { status: string; details: { fieldViolations?: { field: string }[] }[] };
    };
    expect(json.error.status).toBe("INVALID_ARGUMENT");
    expect(json.error.details.flatMap((d) => d.fieldViolations ?? []).map((v) => v.field)).toEqual([
      "project.display_name",
    ]);
    const get = await fetch(`${baseUrl}/v1beta1/${project}/regulatoryListings/%00`, {
      headers: { authorization: `Bearer ${owner}` },
    });
    expect(get.status).toBe(400);
    expect(await get.text()).toContain('"field":"name"');
    const projects = await fetch(`${baseUrl}/admin/v1/projects/nul-project`, {
      headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` },
    });
    expect(projects.status).toBe(404);
  });

  it("refuses a forged page token that carries a NUL or an out-of-range time", async () => {
    const hash = queryHash({ method: "ListRegulatoryListings", parent: project });
    const forge = (p: unknown) => Buffer.from(JSON.stringify({ v: 1, p, q: hash })).toString("base64url");
    const a = adapters.find((x) => x.name === "connect-binary")!;
    for (const token of [forge([0, "a\u0000b"]), forge([-8.64e15, "a"]), forge([0, "\udc00"])]) {
      const outcome = await a.call(
        RegulatoryListings,
        "ListRegulatoryListings",
        { parent: project, pageToken: token },
        owner,
      );
      expectInvalid(outcome, "page_token", a.name);
    }
  });
});
