/**
 * Idempotent creates (src/api/idempotency/) against real listening servers,
 * on every transport and both databases: a retry with the same key and
 * request replays the original response (identical body, no second row);
 * another request or method with the key is FAILED_PRECONDITION
 * IDEMPOTENCY_KEY_REUSED; concurrent requests with one key create one
 * resource (across two replicas on PostgreSQL); a key whose response was
 * never stored (a crash after the commit) replays by reading the resource
 * back; keys expire after 24 h; malformed keys are INVALID_ARGUMENT naming
 * the header. The kill -9 test is idempotency-crash.test.ts.
 */
import { type Client, Code, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { and, eq, isNull } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Unsubscribers } from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { PhoneNumberInstances } from "../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { RegulatoryListings } from "../../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { Aliases } from "../../gen/enfonica/voice/v1beta1/aliases_pb.js";
import { SipDomains } from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { idempotencyKeys, regulatoryListings, sipDomains, unsubscribers } from "../../src/db/schema/index.js";
import { type App, build } from "../../src/server.js";
import { addBlock, numberingClients } from "../numbering/support.js";
import {
  bearer,
  errorReason,
  expectCode,
  newApiKey,
  newProject,
  testConfig,
  violationFields,
} from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

const LISTING = {
  displayName: "Head office",
  address: {
    addressLines: ["1 Example St"],
    locality: "Sydney",
    administrativeArea: "NSW",
    postalCode: "2000",
    regionCode: "AU",
  },
  business: { business: "Example Pty Ltd" },
};

let keySeq = 0;
const newKey = () => `key-${Date.now().toString(36)}-${++keySeq}`;

describe.each(testDatabases())("idempotent creates on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock("2026-06-01T00:00:00.000Z");
  let app: App;
  let base: string;
  let project: string;
  let secret: string; // the key rest() calls with
  let mainSecret: string; // owner of `project`
  let transports: Record<"connect" | "grpc" | "grpc-web", Transport>;

  beforeAll(async () => {
    app = await build({ config: testConfig(), db: database.db, clock });
    const address = await app.listen(0, "127.0.0.1");
    base = `http://127.0.0.1:${address.port}`;
    project = await newProject(database.db);
    mainSecret = (await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret;
    secret = mainSecret;
    const interceptors = [bearer(mainSecret)];
    transports = {
      connect: createConnectTransport({ baseUrl: base, httpVersion: "1.1", interceptors }),
      grpc: createGrpcTransport({ baseUrl: base, interceptors }),
      "grpc-web": createGrpcWebTransport({ baseUrl: base, httpVersion: "1.1", interceptors }),
    };
  });

  afterAll(async () => {
    await app?.close();
  });

  async function rest(path: string, body: unknown, key?: string, method = "POST") {
    const headers: Record<string, string> = {
      authorization: `Bearer ${secret}`,
      "content-type": "application/json",
    };
    if (key !== undefined) headers["idempotency-key"] = key;
    const res = await fetch(`${base}${path}`, { method, headers, body: JSON.stringify(body) });
    return { status: res.status, text: await res.text(), replayed: res.headers.get("idempotent-replayed") };
  }

  const listingsOf = async (p: string) =>
    database.db
      .select()
      .from(regulatoryListings)
      .where(eq(regulatoryListings.projectId, p.split("/")[1]!));
  const unsubscribersOf = async (p: string) =>
    database.db
      .select()
      .from(unsubscribers)
      .where(eq(unsubscribers.projectId, p.split("/")[1]!));

  describe("REST (Idempotency-Key header)", () => {
    it("replays the original response, byte for byte, without a second listing", async () => {
      const p = await newProject(database.db);
      secret = (await newApiKey(database.db, [{ project: p, roles: ["roles/owner"] }])).secret;
      const key = newKey();
      const first = await rest(`/v1beta1/${p}/regulatoryListings`, LISTING, key);
      expect(first.status).toBe(200);
      expect(first.replayed).toBeNull();
      clock.advance(5_000); // a replay must not show a new create_time
      const again = await rest(`/v1beta1/${p}/regulatoryListings`, LISTING, key);
      expect(again.status).toBe(200);
      expect(again.text).toBe(first.text);
      expect(again.replayed).toBe("true");
      expect(await listingsOf(p)).toHaveLength(1);
      // Without a key, the same request creates another.
      expect((await rest(`/v1beta1/${p}/regulatoryListings`, LISTING)).status).toBe(200);
      expect(await listingsOf(p)).toHaveLength(2);
    });

    it("refuses the key with another request or another method: FAILED_PRECONDITION IDEMPOTENCY_KEY_REUSED", async () => {
      const p = await newProject(database.db);
      secret = (await newApiKey(database.db, [{ project: p, roles: ["roles/owner"] }])).secret;
      const key = newKey();
      expect((await rest(`/v1beta1/${p}/regulatoryListings`, LISTING, key)).status).toBe(200);
      const other = await rest(`/v1beta1/${p}/regulatoryListings`, { ...LISTING, displayName: "Other" }, key);
      expect(other.status).toBe(400);
      const body = JSON.parse(other.text);
      expect(body.error.status).toBe("FAILED_PRECONDITION");
      expect(body.error.details[0]).toMatchObject({ reason: "IDEMPOTENCY_KEY_REUSED" });
      const method = await rest(`/v1/${p}/unsubscribers`, { phone: "+61491570156" }, key);
      expect(method.status).toBe(400);
      expect(JSON.parse(method.text).error.details[0]).toMatchObject({
        reason: "IDEMPOTENCY_KEY_REUSED",
        metadata: { method: "enfonica.numbering.v1beta1.RegulatoryListings/CreateRegulatoryListing" },
      });
      expect(await listingsOf(p)).toHaveLength(1);
      expect(await unsubscribersOf(p)).toHaveLength(0);
    });

    it("refuses a malformed key: INVALID_ARGUMENT naming idempotency-key", async () => {
      secret = mainSecret;
      for (const bad of ["", "x".repeat(256), "has space", "comma,separated", "é"]) {
        const res = await rest(`/v1beta1/${project}/regulatoryListings`, LISTING, bad);
        expect(res.status, JSON.stringify(bad)).toBe(400);
        const body = JSON.parse(res.text);
        expect(body.error.status).toBe("INVALID_ARGUMENT");
        expect(body.error.details[1].fieldViolations[0].field).toBe("idempotency-key");
      }
      // The RFC 8941 string form of the IETF draft is accepted.
      const quoted = await rest(`/v1beta1/${project}/regulatoryListings`, LISTING, `"${newKey()}"`);
      expect(quoted.status).toBe(200);
    });

    it("ignores the header on methods that are not creates", async () => {
      secret = mainSecret;
      const res = await fetch(`${base}/v1beta1/${project}/regulatoryListings?pageSize=1`, {
        headers: { authorization: `Bearer ${secret}`, "idempotency-key": "not a valid key" },
      });
      expect(res.status).toBe(200);
    });
  });

  describe.each(["connect", "grpc", "grpc-web"] as const)("%s (idempotency-key metadata)", (name) => {
    let client: Client<typeof Unsubscribers>;
    let p: string;

    beforeAll(async () => {
      p = await newProject(database.db);
      const s = (await newApiKey(database.db, [{ project: p, roles: ["roles/owner"] }])).secret;
      const transport =
        name === "connect"
          ? createConnectTransport({ baseUrl: base, httpVersion: "1.1", interceptors: [bearer(s)] })
          : name === "grpc"
            ? createGrpcTransport({ baseUrl: base, interceptors: [bearer(s)] })
            : createGrpcWebTransport({ baseUrl: base, httpVersion: "1.1", interceptors: [bearer(s)] });
      client = createClient(Unsubscribers, transport);
    });

    it("replays the original response with Idempotent-Replayed, without a second unsubscriber", async () => {
      const key = newKey();
      const request = { parent: p, unsubscriber: { phone: "+61491570157", labels: { b: "2", a: "1" } } };
      let replayed: string | null = "unset";
      const first = await client.createUnsubscriber(request, {
        headers: { "idempotency-key": key },
        onHeader: (h) => {
          replayed = h.get("idempotent-replayed");
        },
      });
      expect(replayed).toBeNull();
      clock.advance(1_000);
      const again = await client.createUnsubscriber(
        // The same request with its map in another order is the same request.
        { parent: p, unsubscriber: { phone: "+61491570157", labels: { a: "1", b: "2" } } },
        {
          headers: { "idempotency-key": key },
          onHeader: (h) => {
            replayed = h.get("idempotent-replayed");
          },
        },
      );
      expect(again).toEqual(first);
      expect(replayed).toBe("true");
      expect(await unsubscribersOf(p)).toHaveLength(1);
    });

    it("refuses the key with another request, and a malformed key", async () => {
      const key = newKey();
      await client.createUnsubscriber(
        { parent: p, unsubscriber: { phone: "+61491570158" } },
        { headers: { "idempotency-key": key } },
      );
      const e = await expectCode(
        client.createUnsubscriber(
          { parent: p, unsubscriber: { phone: "+61491570159" } },
          { headers: { "idempotency-key": key } },
        ),
        Code.FailedPrecondition,
      );
      expect(errorReason(e)).toBe("IDEMPOTENCY_KEY_REUSED");
      const bad = await expectCode(
        client.createUnsubscriber(
          { parent: p, unsubscriber: { phone: "+61491570159" } },
          { headers: { "idempotency-key": "no spaces allowed" } },
        ),
        Code.InvalidArgument,
      );
      expect(violationFields(bad)).toEqual(["idempotency-key"]);
      const phones = (await unsubscribersOf(p)).map((u) => u.phone);
      expect(phones).toContain("+61491570158");
      expect(phones).not.toContain("+61491570159");
    });
  });

  it("replays across transports: a key used over REST, retried over gRPC", async () => {
    const p = await newProject(database.db);
    secret = (await newApiKey(database.db, [{ project: p, roles: ["roles/owner"] }])).secret;
    const key = newKey();
    const first = await rest(`/v1/${p}/unsubscribers`, { phone: "+61491570313" }, key);
    expect(first.status).toBe(200);
    const grpc = createClient(
      Unsubscribers,
      createGrpcTransport({ baseUrl: base, interceptors: [bearer(secret)] }),
    );
    const again = await grpc.createUnsubscriber(
      { parent: p, unsubscriber: { phone: "+61491570313" } },
      { headers: { "idempotency-key": key } },
    );
    expect(again.name).toBe(JSON.parse(first.text).name);
    expect(await unsubscribersOf(p)).toHaveLength(1);
  });

  it("does not record failed creates: a retry with the key runs again", async () => {
    const client = createClient(Unsubscribers, transports.connect);
    const taken = await client.createUnsubscriber({
      parent: project,
      unsubscriber: { phone: "+61491570737" },
    });
    const key = newKey();
    const request = { parent: project, unsubscriber: { phone: "+61491570737" } };
    await expectCode(
      client.createUnsubscriber(request, { headers: { "idempotency-key": key } }),
      Code.AlreadyExists,
    );
    expect(await database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, key))).toEqual([]);
    await client.deleteUnsubscriber({ name: taken.name });
    const created = await client.createUnsubscriber(request, { headers: { "idempotency-key": key } });
    expect(created.name).not.toBe(taken.name);
    const again = await client.createUnsubscriber(request, { headers: { "idempotency-key": key } });
    expect(again).toEqual(created);
  });

  it("replays by reading the resource back when the response was never stored (a crash after the commit)", async () => {
    const client = createClient(SipDomains, transports.grpc);
    const key = newKey();
    const id = `idem-${Date.now().toString(36)}`;
    const request = { parent: project, sipDomainId: id, sipDomain: { displayName: "Edge" } };
    const first = await client.createSipDomain(request, { headers: { "idempotency-key": key } });
    // As if the process died between the commit and storing the response.
    const cleared = await database.db
      .update(idempotencyKeys)
      .set({ response: null })
      .where(eq(idempotencyKeys.key, key))
      .returning();
    expect(cleared).toHaveLength(1);
    expect(cleared[0]!.resourceName).toBe(first.name);
    let replayed: string | null = null;
    const again = await client.createSipDomain(request, {
      headers: { "idempotency-key": key },
      onHeader: (h) => {
        replayed = h.get("idempotent-replayed");
      },
    });
    expect(replayed).toBe("true");
    expect(again).toEqual(first);
    const rows = await database.db.select().from(sipDomains).where(eq(sipDomains.id, id));
    expect(rows).toHaveLength(1);
    const missing = await database.db
      .select()
      .from(idempotencyKeys)
      .where(and(eq(idempotencyKeys.key, key), isNull(idempotencyKeys.response)));
    expect(missing).toHaveLength(1);
  });

  it("forgets keys after 24 hours: the key then creates again, and expired keys are purged", async () => {
    const p = await newProject(database.db);
    secret = (await newApiKey(database.db, [{ project: p, roles: ["roles/owner"] }])).secret;
    const key = newKey();
    const first = await rest(`/v1beta1/${p}/regulatoryListings`, LISTING, key);
    clock.advance(24 * 3600 * 1000 - 1);
    expect((await rest(`/v1beta1/${p}/regulatoryListings`, LISTING, key)).text).toBe(first.text);
    clock.advance(1);
    const later = await rest(`/v1beta1/${p}/regulatoryListings`, LISTING, key);
    expect(later.status).toBe(200);
    expect(later.replayed).toBeNull();
    expect(JSON.parse(later.text).name).not.toBe(JSON.parse(first.text).name);
    expect(await listingsOf(p)).toHaveLength(2);
    // Every key older than 24 h is gone once a keyed request runs the purge.
    clock.advance(25 * 3600 * 1000);
    await rest(`/v1beta1/${p}/regulatoryListings`, LISTING, newKey());
    const now = clock.now();
    const rows = await database.db.select().from(idempotencyKeys);
    expect(rows.filter((r) => r.expireTime <= now)).toEqual([]);
  });

  it("replays CreatePhoneNumberInstance and CreateAlias too (their retries would otherwise be ALREADY_EXISTS)", async () => {
    const c = numberingClients(database.db, clock);
    const number = await addBlock(c, "+61355509900", 10);
    const instances = createClient(PhoneNumberInstances, transports.connect);
    const key = newKey();
    const request = { parent: project, phoneNumberInstance: { phoneNumber: { phoneNumber: number } } };
    const first = await instances.createPhoneNumberInstance(request, { headers: { "idempotency-key": key } });
    expect(
      await instances.createPhoneNumberInstance(request, { headers: { "idempotency-key": key } }),
    ).toEqual(first);
    await expectCode(instances.createPhoneNumberInstance(request), Code.AlreadyExists);

    const domain = await createClient(SipDomains, transports.grpc).createSipDomain({
      parent: project,
      sipDomainId: `alias-${Date.now().toString(36)}`,
      sipDomain: {},
    });
    const aliases = createClient(Aliases, transports["grpc-web"]);
    const aliasKey = newKey();
    const alias = {
      parent: domain.name,
      aliasId: "main",
      alias: {
        config: {
          case: "loadBalancerConfig" as const,
          value: { endpoints: [{ uri: "sip:pbx1.example.com", enabled: true }] },
        },
      },
    };
    const created = await aliases.createAlias(alias, { headers: { "idempotency-key": aliasKey } });
    expect(await aliases.createAlias(alias, { headers: { "idempotency-key": aliasKey } })).toEqual(created);
    await expectCode(aliases.createAlias(alias), Code.AlreadyExists);
  });

  it("creates one resource for concurrent requests with one key", async () => {
    const p = await newProject(database.db);
    const s = (await newApiKey(database.db, [{ project: p, roles: ["roles/owner"] }])).secret;
    // Two replicas on the same database when it is PostgreSQL: each has its
    // own in-process queue, so only the database keeps them apart.
    const second =
      backend.name === "postgres" ? await build({ config: testConfig(), db: database.db, clock }) : undefined;
    try {
      const port = second ? (await second.listen(0, "127.0.0.1")).port : undefined;
      const bases = [base, port === undefined ? base : `http://127.0.0.1:${port}`];
      const key = newKey();
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          createClient(
            RegulatoryListings,
            createConnectTransport({ baseUrl: bases[i % 2]!, httpVersion: "1.1", interceptors: [bearer(s)] }),
          ).createRegulatoryListing(
            {
              parent: p,
              regulatoryListing: {
                ...LISTING,
                entity: { case: "business", value: LISTING.business },
              },
            },
            { headers: { "idempotency-key": key } },
          ),
        ),
      );
      expect(new Set(results.map((r) => r.name)).size).toBe(1);
      expect(await listingsOf(p)).toHaveLength(1);
    } finally {
      await second?.close();
    }
  });
});
