/**
 * Numbering end to end against a listening server: the scenario
 * through the REST paths and through gRPC (search, provision, configure
 * handlers, split 100 into 20 + 80, move the 80, the attached listing
 * refusing deletion, delete, the number back in inventory after the
 * quarantine), the operator's fixed REST surface, and the permissions
 * moves need on both projects.
 */
import { randomBytes } from "node:crypto";
import { type Client, Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PhoneNumberInstances,
  PhoneNumberInstance_LifecycleState as State,
} from "../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import {
  PhoneNumber_PhoneNumberCapability as Capability,
  PhoneNumber_PhoneNumberType as NumberType,
  PhoneNumbers,
} from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { RegulatoryListings } from "../../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { NumberingAdmin } from "../../gen/switchboard/admin/v1/numbering_pb.js";
import { type App, build } from "../../src/server.js";
import {
  bearer,
  errorReason,
  expectCode,
  newApiKey,
  TEST_OPERATOR_TOKEN,
  testConfig,
} from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { AU_ADDRESS, businessListing } from "./support.js";

const QUARANTINE_SECONDS = 3600;

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies
type Json = Record<string, any>;

describe.each(testDatabases())("numbering API on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock("2026-06-01T00:00:00.000Z");
  let app: App;
  let base: string;

  beforeAll(async () => {
    app = await build({
      config: testConfig({ NUMBER_QUARANTINE_SECONDS: String(QUARANTINE_SECONDS) }),
      db: database.db,
      clock,
    });
    const address = await app.listen(0, "127.0.0.1");
    base = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    await app?.close();
  });

  async function call(
    method: string,
    path: string,
    body?: unknown,
    token: string = TEST_OPERATOR_TOKEN,
  ): Promise<{ status: number; json: Json }> {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Json };
  }

  /** The body of a 200, failing the test with the body otherwise. */
  async function ok(method: string, path: string, body?: unknown, token?: string): Promise<Json> {
    const res = await call(method, path, body, token);
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    return res.json;
  }

  async function newProjectId(): Promise<string> {
    const id = `n-${randomBytes(5).toString("hex")}`;
    await ok("POST", `/admin/v1/projects?projectId=${id}`, {});
    return id;
  }

  function detail(json: Json, type: string): Json | undefined {
    return (json.error?.details as Json[] | undefined)?.find((d) => String(d["@type"]).endsWith(type));
  }

  async function searchNumbers(query: string, token?: string): Promise<string[]> {
    const res = await ok("GET", `/v1beta1/phoneNumbers:search?${query}`, undefined, token);
    return (res.phoneNumbers ?? []).map((n: Json) => n.phoneNumber);
  }

  it("REST: search, provision, configure, split 100 into 20 + 80, move the 80, delete, quarantine", async () => {
    const a = await newProjectId();
    const b = await newProjectId();
    // The operator loads a block (the fixed REST body) and gives the customer a key on both projects.
    const block = await ok("POST", "/admin/v1/numberBlocks", {
      startPhoneNumber: "+61255501000",
      size: 1000,
      numberType: "LOCAL",
      capabilities: ["VOICE", "SMS"],
      countryCode: "AU",
    });
    expect(block).toMatchObject({
      startPhoneNumber: "+61255501000",
      endPhoneNumber: "+61255501999",
      size: 1000,
    });
    const key = (
      await ok("POST", "/admin/v1/apiKeys", {
        bindings: [
          { project: `projects/${a}`, roles: ["roles/owner"] },
          { project: `projects/${b}`, roles: ["roles/owner"] },
        ],
      })
    ).secret as string;

    // search
    const found = await ok(
      "GET",
      "/v1beta1/phoneNumbers:search?countryCode=AU&prefix=0255501&numberType=LOCAL&supportsSms=true&pageSize=2",
      undefined,
      key,
    );
    expect(found.phoneNumbers).toEqual([
      {
        name: "phoneNumbers/61255501000",
        phoneNumber: "+61255501000",
        capabilities: ["SMS", "VOICE"],
        sku: "AU-LOCAL-MONTHLY",
        activationSku: "AU-LOCAL-ACTIVATION",
        numberType: "LOCAL",
        countryCode: "AU",
      },
      expect.objectContaining({ phoneNumber: "+61255501001" }),
    ]);
    expect(found.nextPageToken).toBeTruthy();

    // provision with a listing (the new request field goes in the query: the body is the instance)
    const listing = await ok(
      "POST",
      `/v1beta1/projects/${a}/regulatoryListings`,
      { displayName: "Head office", business: { business: "Example Pty Ltd" }, address: AU_ADDRESS },
      key,
    );
    const instance = await ok(
      "POST",
      `/v1beta1/projects/${a}/phoneNumberInstances?regulatoryListing=${encodeURIComponent(listing.name)}`,
      { phoneNumber: { phoneNumber: "+61255501000" }, displayName: "Reception" },
      key,
    );
    expect(instance).toMatchObject({
      displayName: "Reception",
      lifecycleState: "ACTIVE",
      callRecordingTrigger: "DISABLED",
      regulatoryListing: listing.name,
      compliant: true,
      phoneNumber: { phoneNumber: "+61255501000" },
    });
    expect(instance.activateTime).toBe(instance.createTime);
    const again = await call(
      "POST",
      `/v1beta1/projects/${b}/phoneNumberInstances`,
      { phoneNumber: { name: "phoneNumbers/61255501000" } },
      key,
    );
    expect(again.status).toBe(409);
    expect(again.json.error.status).toBe("ALREADY_EXISTS");

    // configure handlers
    const configured = await ok(
      "PATCH",
      `/v1beta1/${instance.name}?updateMask=incomingCallHandlerUris,incomingMessageHandlerUris,callRecordingTrigger`,
      {
        incomingCallHandlerUris: [
          "https://voice.example.com/answer",
          "sip:reception@pbx.example.com:5060",
          "tel:+61491570156",
        ],
        incomingMessageHandlerUris: ["https://sms.example.com/in"],
        callRecordingTrigger: "ANSWER",
      },
      key,
    );
    expect(configured).toMatchObject({ callRecordingTrigger: "ANSWER", displayName: "Reception" });
    expect(configured.incomingCallHandlerUris).toHaveLength(3);
    const badUri = await call(
      "PATCH",
      `/v1beta1/${instance.name}?updateMask=incomingCallHandlerUris`,
      {
        incomingCallHandlerUris: [
          "https://ok.example.com/",
          "https://ok2.example.com/",
          "mailto:x@example.com",
        ],
      },
      key,
    );
    expect(badUri.status).toBe(400);
    expect(detail(badUri.json, "BadRequest")?.fieldViolations[0].field).toBe(
      "phone_number_instance.incoming_call_handler_uris[2]",
    );

    // the operator provisions a range of 100; the customer splits it 20 + 80
    const range = await ok("POST", `/admin/v1/projects/${a}/phoneNumberInstances:provisionRange`, {
      startPhoneNumber: "+61255501100",
      size: 100,
      regulatoryListing: listing.name,
    });
    expect(range.range).toEqual({
      primaryPhoneNumberInstance: range.name,
      startPhoneNumber: "+61255501100",
      endPhoneNumber: "+61255501199",
      size: 100,
    });
    const split = await ok("POST", `/v1beta1/${range.name}:splitRange`, { size: 20 }, key);
    expect(split.first.range).toEqual({ ...range.range, endPhoneNumber: "+61255501119", size: 20 });
    expect(split.second.range).toEqual({
      primaryPhoneNumberInstance: split.second.name,
      startPhoneNumber: "+61255501120",
      endPhoneNumber: "+61255501199",
      size: 80,
    });

    // move the 80 to project b
    const moved = await ok(
      "POST",
      `/v1beta1/${split.second.name}:move`,
      { destinationParent: `projects/${b}` },
      key,
    );
    expect(moved.name).toBe(`projects/${b}/phoneNumberInstances/${split.second.name.split("/")[3]}`);
    expect(moved.range.size).toBe(80);
    const listB = await ok(
      "GET",
      `/v1beta1/projects/${b}/phoneNumberInstances?prefix=%2B61255501150`,
      undefined,
      key,
    );
    expect(listB.phoneNumberInstances.map((i: Json) => i.name)).toEqual([moved.name]);

    // the listing is attached to active instances: it cannot be deleted
    const refused = await call("DELETE", `/v1beta1/${listing.name}`, undefined, key);
    expect(refused.status).toBe(400);
    expect(refused.json.error.status).toBe("FAILED_PRECONDITION");
    expect(detail(refused.json, "ErrorInfo")?.reason).toBe("LISTING_IN_USE");
    expect(refused.json.error.message).toMatch(/projects\/.+\/phoneNumberInstances\//);

    // delete the single instance: DELETED now, back in inventory after the quarantine
    clock.set("2026-06-02T00:00:00.000Z");
    const deleted = await ok("DELETE", `/v1beta1/${instance.name}`, undefined, key);
    expect(deleted).toMatchObject({ lifecycleState: "DELETED", deleteTime: "2026-06-02T00:00:00Z" });
    const listA = await ok("GET", `/v1beta1/projects/${a}/phoneNumberInstances`, undefined, key);
    expect(listA.phoneNumberInstances.map((i: Json) => i.name)).toEqual([range.name]);
    const withDeleted = await ok(
      "GET",
      `/v1beta1/projects/${a}/phoneNumberInstances?includeDeleted=true`,
      undefined,
      key,
    );
    expect(withDeleted.phoneNumberInstances.map((i: Json) => i.name).sort()).toEqual(
      [instance.name, range.name].sort(),
    );
    expect(await searchNumbers("countryCode=AU&prefix=%2B6125550100", key)).not.toContain("+61255501000");
    clock.advance(QUARANTINE_SECONDS * 1000);
    expect(await searchNumbers("countryCode=AU&prefix=%2B6125550100", key)).toContain("+61255501000");
  });

  it("gRPC: the same scenario", async () => {
    const a = `projects/${await newProjectId()}`;
    const b = `projects/${await newProjectId()}`;
    const transport = createGrpcTransport({ baseUrl: base, interceptors: [bearer(TEST_OPERATOR_TOKEN)] });
    const admin = createClient(NumberingAdmin, transport);
    const numbers = createClient(PhoneNumbers, transport);
    const listings = createClient(RegulatoryListings, transport);
    const instances: Client<typeof PhoneNumberInstances> = createClient(PhoneNumberInstances, transport);

    await admin.createNumberBlock({
      numberBlock: {
        startPhoneNumber: "+61355502000",
        size: 1000,
        numberType: NumberType.LOCAL,
        capabilities: [Capability.VOICE],
        countryCode: "AU",
      },
    });
    const found = await numbers.searchPhoneNumbers({ countryCode: "AU", prefix: "0355502", pageSize: 1 });
    const number = found.phoneNumbers[0]!.phoneNumber;
    expect(number).toBe("+61355502000");
    const listing = await listings.createRegulatoryListing({
      parent: a,
      regulatoryListing: businessListing(),
    });
    const instance = await instances.createPhoneNumberInstance({
      parent: a,
      phoneNumberInstance: { phoneNumber: { phoneNumber: number } },
      regulatoryListing: listing.name,
    });
    await instances.updatePhoneNumberInstance({
      name: instance.name,
      phoneNumberInstance: { incomingCallHandlerUris: ["https://voice.example.com/"] },
      updateMask: { paths: ["incoming_call_handler_uris"] },
    });
    const range = await admin.provisionPhoneNumberRange({
      parent: a,
      startPhoneNumber: "+61355502100",
      size: 100,
    });
    const { first, second } = await instances.splitRange({ phoneNumberInstance: range.name, size: 20 });
    expect([first!.range!.size, second!.range!.size]).toEqual([20, 80]);
    const moved = await instances.movePhoneNumberInstance({ name: second!.name, destinationParent: b });
    expect(moved.name.startsWith(`${b}/`)).toBe(true);
    const refused = await expectCode(
      listings.deleteRegulatoryListing({ name: listing.name }),
      Code.FailedPrecondition,
    );
    expect(errorReason(refused)).toBe("LISTING_IN_USE");
    expect(refused.rawMessage).toContain(instance.name);
    const deleted = await instances.deletePhoneNumberInstance({ name: instance.name });
    expect(deleted.lifecycleState).toBe(State.DELETED);
    const inQuarantine = await numbers.searchPhoneNumbers({ countryCode: "AU", prefix: number, pageSize: 1 });
    expect(inQuarantine.phoneNumbers).toEqual([]);
    clock.advance(QUARANTINE_SECONDS * 1000);
    const back = await numbers.searchPhoneNumbers({ countryCode: "AU", prefix: number, pageSize: 1 });
    expect(back.phoneNumbers.map((n) => n.phoneNumber)).toEqual([number]);
    // Deleting the 20-number range it is still attached to frees the listing.
    await instances.deletePhoneNumberInstance({ name: first!.name });
    await listings.deleteRegulatoryListing({ name: listing.name });
  });

  it("REST: the operator's port-in, suspension and review surface", async () => {
    const a = await newProjectId();
    const pending = await ok("POST", `/admin/v1/projects/${a}/phoneNumberInstances:portIn`, {
      phoneNumber: "+61491570157",
    });
    expect(pending).toMatchObject({
      lifecycleState: "PENDING",
      phoneNumber: { numberType: "MOBILE", countryCode: "AU" },
    });
    expect(pending.activateTime).toBeUndefined();
    clock.advance(60_000);
    const active = await ok("POST", `/admin/v1/${pending.name}:completePortIn`, {});
    expect(active.lifecycleState).toBe("ACTIVE");
    expect(Date.parse(active.activateTime)).toBe(clock.now().getTime());
    expect((await ok("POST", `/admin/v1/${pending.name}:suspend`, {})).lifecycleState).toBe("SUSPENDED");
    expect((await ok("POST", `/admin/v1/${pending.name}:resume`, {})).lifecycleState).toBe("ACTIVE");
    const notPending = await call("POST", `/admin/v1/${pending.name}:completePortIn`, {});
    expect(notPending.status).toBe(400);
    expect(detail(notPending.json, "ErrorInfo")?.reason).toBe("NOT_PENDING");

    const listing = await ok("POST", `/v1beta1/projects/${a}/regulatoryListings`, {
      business: { business: "Example Pty Ltd" },
      address: AU_ADDRESS,
    });
    const attached = await ok("POST", `/admin/v1/projects/${a}/phoneNumberInstances:portIn`, {
      phoneNumber: "+61491570158",
      regulatoryListing: listing.name,
    });
    expect(attached.compliant ?? false).toBe(false); // mobile numbers need a verified listing (false is omitted in JSON)
    const reviewed = await ok("POST", `/admin/v1/${listing.name}:review`, { valid: true, verified: true });
    expect(reviewed).toMatchObject({ valid: true, verified: true });
    expect((await ok("GET", `/v1beta1/${attached.name}`)).compliant).toBe(true);
    const search = await ok(
      "GET",
      `/v1beta1/projects/${a}/regulatoryListings:search?regionCode=AU&numberType=MOBILE`,
    );
    expect(search.regulatoryListings.map((l: Json) => l.name)).toEqual([listing.name]);
    expect((await ok("POST", `/admin/v1/${listing.name}:review`, { valid: false })).verified).toBe(true);
    expect((await ok("GET", `/v1beta1/${attached.name}`)).compliant ?? false).toBe(false);

    const missing = await call("POST", `/admin/v1/projects/${a}/phoneNumberInstances:provisionRange`, {
      startPhoneNumber: "+61855508000",
      size: 10,
    });
    expect(missing.status).toBe(400);
    expect(detail(missing.json, "ErrorInfo")?.reason).toBe("NUMBERS_NOT_IN_INVENTORY");
    const badBlock = await call("POST", "/admin/v1/numberBlocks", {
      startPhoneNumber: "+61255501000",
      size: 0,
      numberType: "LOCAL",
      capabilities: ["VOICE"],
      countryCode: "AU",
    });
    expect(badBlock.status).toBe(400);
    expect(detail(badBlock.json, "BadRequest")?.fieldViolations[0].field).toBe("number_block.size");
  });

  it("refuses the admin API to API keys", async () => {
    const a = await newProjectId();
    const { secret } = await newApiKey(database.db, [{ project: `projects/${a}`, roles: ["roles/owner"] }]);
    for (const [path, body] of [
      [
        "/admin/v1/numberBlocks",
        {
          startPhoneNumber: "+61855507000",
          size: 1,
          numberType: "LOCAL",
          capabilities: ["VOICE"],
          countryCode: "AU",
        },
      ],
      [`/admin/v1/projects/${a}/phoneNumberInstances:portIn`, { phoneNumber: "+61491570159" }],
      [`/admin/v1/projects/${a}/regulatoryListings/x:review`, { valid: true }],
    ] as const) {
      expect((await call("POST", path, body, secret)).status).toBe(403);
    }
  });

  describe("moves need numbering.phoneNumberInstances.move on both projects", () => {
    let a: string;
    let b: string;
    let name: string;
    const move = "numbering.phoneNumberInstances.move";

    beforeAll(async () => {
      a = `projects/${await newProjectId()}`;
      b = `projects/${await newProjectId()}`;
      await ok("POST", "/admin/v1/numberBlocks", {
        startPhoneNumber: "+61755503000",
        size: 10,
        numberType: "LOCAL",
        capabilities: ["VOICE"],
        countryCode: "AU",
      });
      name = (
        await ok("POST", `/v1beta1/${a}/phoneNumberInstances`, {
          phoneNumber: { phoneNumber: "+61755503000" },
        })
      ).name;
    });

    it.each([
      ["the source only", (a: string, _b: string) => [{ project: a, permissions: [move] }]],
      ["the destination only", (_a: string, b: string) => [{ project: b, permissions: [move] }]],
      [
        "both, but the wrong permission on the destination",
        (a: string, b: string) => [
          { project: a, permissions: [move] },
          { project: b, permissions: ["numbering.phoneNumberInstances.update"] },
        ],
      ],
    ])("denies a key holding it on %s, and nothing moves", async (_name, bindings) => {
      const { secret } = await newApiKey(database.db, bindings(a, b));
      const res = await call("POST", `/v1beta1/${name}:move`, { destinationParent: b }, secret);
      expect(res.status).toBe(403);
      expect((await ok("GET", `/v1beta1/${name}`)).name).toBe(name);
      expect((await ok("GET", `/v1beta1/${b}/phoneNumberInstances`)).phoneNumberInstances ?? []).toEqual([]);
    });

    it("moves with a key holding it on both", async () => {
      const { secret } = await newApiKey(database.db, [
        { project: a, permissions: [move] },
        { project: b, permissions: [move] },
      ]);
      const moved = await ok("POST", `/v1beta1/${name}:move`, { destinationParent: b }, secret);
      expect(moved.name).toBe(`${b}/phoneNumberInstances/${name.split("/")[3]}`);
      expect((await call("GET", `/v1beta1/${name}`)).status).toBe(404);
    });
  });
});
