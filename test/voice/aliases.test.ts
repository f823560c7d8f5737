/**
 * Aliases of SIP domains, in process, on every test backend: load balancer
 * endpoints and failover handlers, their limits, the parent domain's state,
 * and the read-only alias of the collaboration type.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type Alias,
  Aliases,
  type AliasSchema,
  type LoadBalancerConfigSchema,
} from "../../gen/enfonica/voice/v1beta1/aliases_pb.js";
import {
  SipDomain_DomainType as DomainType,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { ResourceInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  collectPages,
  createTestClient,
  errorReason,
  expectCode,
  expectInvalid,
  newProject,
} from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { newSipDomainId } from "./support.js";

type AliasInit = MessageInitShape<typeof AliasSchema>;

const x = (n: number) => "x".repeat(n);

function lb(
  endpoints: { uri: string; priority?: number; weight?: number; enabled?: boolean }[],
  failoverCallHandlerUris: string[] = [],
): { case: "loadBalancerConfig"; value: MessageInitShape<typeof LoadBalancerConfigSchema> } {
  return { case: "loadBalancerConfig", value: { endpoints, failoverCallHandlerUris } };
}

const PBX = lb([
  { uri: "sip:pbx1.example.com:5060", priority: 0, weight: 30, enabled: true },
  { uri: "sips:pbx2.example.com", priority: 0, enabled: true },
  { uri: "sip:standby@pbx3.example.com;transport=tcp", priority: 10, weight: 1 },
]);

const INVALID_CREATES: { name: string; alias?: AliasInit | undefined; id?: string; fields: string[] }[] = [
  { name: "no alias", alias: undefined, fields: ["alias"] },
  { name: "an empty alias_id", id: "", fields: ["alias_id"] },
  { name: "an uppercase alias_id", id: "Main", fields: ["alias_id"] },
  { name: "an alias_id ending with a hyphen", id: "main-", fields: ["alias_id"] },
  { name: "a 64-character alias_id", id: `a${x(62)}b`, fields: ["alias_id"] },
  {
    name: "display_name over 100",
    alias: { displayName: x(101), config: PBX },
    fields: ["alias.display_name"],
  },
  { name: "no load balancer", alias: { displayName: "a" }, fields: ["alias.load_balancer_config"] },
  { name: "an empty load balancer", alias: { config: lb([]) }, fields: ["alias.load_balancer_config"] },
  {
    name: "11 endpoints",
    alias: { config: lb(Array.from({ length: 11 }, (_, i) => ({ uri: `sip:pbx${i}.example.com` }))) },
    fields: ["alias.load_balancer_config.endpoints"],
  },
  {
    name: "an http endpoint",
    alias: { config: lb([{ uri: "sip:ok.example.com" }, { uri: "https://pbx.example.com" }]) },
    fields: ["alias.load_balancer_config.endpoints[1].uri"],
  },
  {
    name: "an endpoint without URI",
    alias: { config: lb([{ uri: "" }]) },
    fields: ["alias.load_balancer_config.endpoints[0].uri"],
  },
  {
    name: "two endpoints with one URI",
    alias: { config: lb([{ uri: "sip:pbx.example.com" }, { uri: "SIP:pbx.example.com" }]) },
    fields: ["alias.load_balancer_config.endpoints[1].uri"],
  },
  {
    name: "priority 65536",
    alias: { config: lb([{ uri: "sip:pbx.example.com", priority: 65536 }]) },
    fields: ["alias.load_balancer_config.endpoints[0].priority"],
  },
  {
    name: "a negative priority",
    alias: { config: lb([{ uri: "sip:pbx.example.com", priority: -1 }]) },
    fields: ["alias.load_balancer_config.endpoints[0].priority"],
  },
  {
    name: "weight 65536",
    alias: { config: lb([{ uri: "sip:pbx.example.com", weight: 65536 }]) },
    fields: ["alias.load_balancer_config.endpoints[0].weight"],
  },
  {
    name: "a negative weight",
    alias: { config: lb([{ uri: "sip:pbx.example.com", weight: -5 }]) },
    fields: ["alias.load_balancer_config.endpoints[0].weight"],
  },
  {
    name: "an ftp failover URI",
    alias: { config: lb([], ["ftp://files.example.com/"]) },
    fields: ["alias.load_balancer_config.failover_call_handler_uris[0]"],
  },
  {
    name: "a sip failover URI",
    alias: { config: lb([], ["https://ok.example.com/", "sip:pbx.example.com"]) },
    fields: ["alias.load_balancer_config.failover_call_handler_uris[1]"],
  },
  {
    name: "six failover URIs",
    alias: {
      config: lb(
        [],
        Array.from({ length: 6 }, (_, i) => `https://f${i}.example.com/`),
      ),
    },
    fields: ["alias.load_balancer_config.failover_call_handler_uris"],
  },
];

describe.each(testDatabases())("Aliases on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock();
  let client: Client<typeof Aliases>;
  let domains: Client<typeof SipDomains>;

  beforeAll(() => {
    client = createTestClient(Aliases, database.db, clock);
    domains = createTestClient(SipDomains, database.db, clock);
  });

  async function newDomain(type = DomainType.STANDARD): Promise<string> {
    const d = await domains.createSipDomain({
      parent: await newProject(database.db),
      sipDomainId: newSipDomainId(),
      sipDomain: { type },
    });
    return d.name;
  }

  async function listAll(parent: string): Promise<Alias[]> {
    const { items } = await collectPages(async (pageToken) => {
      const r = await client.listAliases({ parent, pageSize: 100, pageToken });
      return { items: r.aliases, nextPageToken: r.nextPageToken };
    });
    return items;
  }

  describe("CreateAlias", () => {
    it("creates a load balancer alias named by the client; weight 0 means 10", async () => {
      const parent = await newDomain();
      clock.set("2026-08-01T00:00:00.000Z");
      const created = await client.createAlias({
        parent,
        aliasId: "main",
        alias: { displayName: "PBX", config: PBX },
      });
      expect(created.name).toBe(`${parent}/aliases/main`);
      expect(created.aliasId).toBe("main");
      expect(created.displayName).toBe("PBX");
      expect(timestampDate(created.createTime!).toISOString()).toBe("2026-08-01T00:00:00.000Z");
      expect(created.config.value?.endpoints.map((e) => [e.uri, e.priority, e.weight, e.enabled])).toEqual([
        ["sip:pbx1.example.com:5060", 0, 30, true],
        ["sips:pbx2.example.com", 0, 10, true],
        ["sip:standby@pbx3.example.com;transport=tcp", 10, 1, false],
      ]);
      expect(await client.getAlias({ name: created.name })).toEqual(created);
    });

    it("accepts failover handlers alone, ten endpoints, and the limits of priority and weight", async () => {
      const parent = await newDomain();
      const failover = await client.createAlias({
        parent,
        aliasId: "failover",
        alias: { config: lb([], ["https://a.example.com/voice", "http://b.example.com/voice"]) },
      });
      expect(failover.config.value?.failoverCallHandlerUris).toEqual([
        "https://a.example.com/voice",
        "http://b.example.com/voice",
      ]);
      const ten = await client.createAlias({
        parent,
        aliasId: "ten",
        alias: {
          config: lb(
            Array.from({ length: 10 }, (_, i) => ({
              uri: `sip:pbx${i}.example.com`,
              priority: i * 7000,
              weight: 65535,
            })),
          ),
        },
      });
      expect(ten.config.value?.endpoints).toHaveLength(10);
      expect(ten.config.value?.endpoints[9]?.priority).toBe(63000);
    });

    it.each(INVALID_CREATES)("refuses $name with INVALID_ARGUMENT and writes nothing", async (c) => {
      const parent = await newDomain();
      await expectInvalid(
        client.createAlias({
          parent,
          aliasId: c.id ?? "a1",
          alias: "alias" in c ? c.alias : { config: PBX },
        }),
        c.fields,
      );
      expect(await listAll(parent)).toEqual([]);
    });

    it("refuses an id taken in the domain with ALREADY_EXISTS; other domains may use it", async () => {
      const parent = await newDomain();
      await client.createAlias({ parent, aliasId: "dup", alias: { config: PBX } });
      const error = await expectCode(
        client.createAlias({ parent, aliasId: "dup", alias: { config: PBX } }),
        Code.AlreadyExists,
      );
      expect(error.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(`${parent}/aliases/dup`);
      const other = await newDomain();
      expect((await client.createAlias({ parent: other, aliasId: "dup", alias: { config: PBX } })).name).toBe(
        `${other}/aliases/dup`,
      );
    });

    it("lets exactly one of two concurrent creates of one id win", async () => {
      const parent = await newDomain();
      const results = await Promise.allSettled([
        client.createAlias({ parent, aliasId: "race", alias: { config: PBX } }),
        client.createAlias({ parent, aliasId: "race", alias: { config: PBX, displayName: "b" } }),
      ]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      const lost = results.find((r): r is PromiseRejectedResult => r.status === "rejected")!;
      expect(ConnectError.from(lost.reason).code).toBe(Code.AlreadyExists);
      expect(await listAll(parent)).toHaveLength(1);
    });

    it("needs the parent domain in the project: NOT_FOUND naming it", async () => {
      const parent = await newDomain();
      const elsewhere = `${await newProject(database.db)}/sipDomains/${parent.split("/")[3]}`;
      const error = await expectCode(
        client.createAlias({ parent: elsewhere, aliasId: "a", alias: { config: PBX } }),
        Code.NotFound,
      );
      expect(error.findDetails(ResourceInfoSchema)[0]).toMatchObject({
        resourceType: "voice.api.enfonica.com/SipDomain",
        resourceName: elsewhere,
      });
      await expectCode(client.listAliases({ parent: elsewhere }), Code.NotFound);
      await expectCode(client.getAlias({ name: `${elsewhere}/aliases/a` }), Code.NotFound);
    });

    it.each([
      ["a project", "projects/p"],
      ["an alias", "projects/p/sipDomains/d/aliases/a"],
      ["another collection", "projects/p/calls/c"],
    ])("refuses %s as parent with INVALID_ARGUMENT", async (_, parent) => {
      await expectInvalid(client.createAlias({ parent, aliasId: "a", alias: { config: PBX } }), ["parent"]);
    });
  });

  describe("GetAlias, ListAliases", () => {
    it("lists a domain's aliases newest first, in pages", async () => {
      const parent = await newDomain();
      clock.set("2026-08-02T00:00:00.000Z");
      for (let i = 0; i < 12; i++) {
        await client.createAlias({ parent, aliasId: `a${i}`, alias: { config: PBX } });
        clock.advance(1000);
      }
      const all = await listAll(parent);
      expect(all.map((a) => a.aliasId)).toEqual(Array.from({ length: 12 }, (_, i) => `a${11 - i}`));
      const first = await client.listAliases({ parent, pageSize: 5 });
      expect(first.aliases.map((a) => a.aliasId)).toEqual(["a11", "a10", "a9", "a8", "a7"]);
      const second = await client.listAliases({ parent, pageSize: 5, pageToken: first.nextPageToken });
      expect(second.aliases.map((a) => a.aliasId)).toEqual(["a6", "a5", "a4", "a3", "a2"]);
      await expectInvalid(client.listAliases({ parent: await newDomain(), pageToken: first.nextPageToken }), [
        "page_token",
      ]);
    });

    it("returns NOT_FOUND for an unknown alias and INVALID_ARGUMENT for a bad name", async () => {
      const parent = await newDomain();
      await expectCode(client.getAlias({ name: `${parent}/aliases/nope` }), Code.NotFound);
      await expectInvalid(client.getAlias({ name: `${parent}` }), ["name"]);
    });
  });

  describe("UpdateAlias", () => {
    let alias: Alias;

    beforeAll(async () => {
      alias = await client.createAlias({
        parent: await newDomain(),
        aliasId: "upd",
        alias: { displayName: "before", config: PBX },
      });
    });

    async function expectUnchanged() {
      expect(await client.getAlias({ name: alias.name })).toEqual(alias);
    }

    it("without a mask applies the populated fields", async () => {
      const updated = await client.updateAlias({ alias: { name: alias.name, displayName: "after" } });
      expect(updated.displayName).toBe("after");
      expect(updated.config).toEqual(alias.config);
      alias = updated;
      await expectUnchanged();
    });

    it("with a mask replaces the endpoints", async () => {
      const updated = await client.updateAlias({
        alias: {
          name: alias.name,
          config: lb([{ uri: "sip:new.example.com", enabled: true }], ["https://f.example.com/"]),
        },
        updateMask: { paths: ["load_balancer_config.endpoints"] },
      });
      expect(updated.config.value?.endpoints.map((e) => [e.uri, e.weight])).toEqual([
        ["sip:new.example.com", 10],
      ]);
      expect(updated.config.value?.failoverCallHandlerUris).toEqual([]);
      alias = updated;
      await expectUnchanged();
    });

    it.each([
      ["display_name over 100", { displayName: x(101) }, undefined, ["alias.display_name"]],
      [
        "an http endpoint",
        { config: lb([{ uri: "http://pbx.example.com" }]) },
        undefined,
        ["alias.load_balancer_config.endpoints[0].uri"],
      ],
      ["clearing the load balancer", {}, ["load_balancer_config"], ["alias.load_balancer_config"]],
      ["an unknown mask path", { displayName: "a" }, ["display_name", "nope"], ["update_mask"]],
    ] as const)("refuses %s with INVALID_ARGUMENT and changes nothing", async (_, patch, paths, fields) => {
      await expectInvalid(
        client.updateAlias({
          alias: { ...patch, name: alias.name },
          ...(paths ? { updateMask: { paths: [...paths] } } : {}),
        }),
        [...fields],
      );
      await expectUnchanged();
    });

    it("returns NOT_FOUND for an unknown alias", async () => {
      await expectCode(
        client.updateAlias({ alias: { name: `${await newDomain()}/aliases/nope`, displayName: "a" } }),
        Code.NotFound,
      );
    });
  });

  describe("DeleteAlias", () => {
    it("deletes an alias and returns Empty", async () => {
      const parent = await newDomain();
      const created = await client.createAlias({ parent, aliasId: "gone", alias: { config: PBX } });
      await client.deleteAlias({ name: created.name });
      await expectCode(client.getAlias({ name: created.name }), Code.NotFound);
      await expectCode(client.deleteAlias({ name: created.name }), Code.NotFound);
      // the id is free again within the domain
      await client.createAlias({ parent, aliasId: "gone", alias: { config: PBX } });
    });
  });

  describe("on a deleted domain", () => {
    it("reads aliases but refuses to create, change or delete them", async () => {
      const parent = await newDomain();
      const alias = await client.createAlias({ parent, aliasId: "kept", alias: { config: PBX } });
      await domains.deleteSipDomain({ name: parent });
      expect(await client.getAlias({ name: alias.name })).toEqual(alias);
      expect((await client.listAliases({ parent })).aliases).toEqual([alias]);
      for (const call of [
        () => client.createAlias({ parent, aliasId: "new", alias: { config: PBX } }),
        () => client.updateAlias({ alias: { name: alias.name, displayName: "x" } }),
        () => client.deleteAlias({ name: alias.name }),
      ]) {
        expect(errorReason(await expectCode(call(), Code.FailedPrecondition))).toBe("SIP_DOMAIN_DELETED");
      }
      expect(await client.getAlias({ name: alias.name })).toEqual(alias);
    });
  });

  describe("on a collaboration domain", () => {
    it("keeps the service's alias read-only and lets users add their own", async () => {
      const parent = await newDomain(DomainType.COLLAB_DIRECT_ROUTING);
      const managed = await client.getAlias({ name: `${parent}/aliases/collab-proxies` });
      await expectCode(
        client.createAlias({ parent, aliasId: "collab-proxies", alias: { config: PBX } }),
        Code.AlreadyExists,
      );
      const mine = await client.createAlias({ parent, aliasId: "mine", alias: { config: PBX } });
      expect((await listAll(parent)).map((a) => a.aliasId).sort()).toEqual(["collab-proxies", "mine"]);
      const error = await expectCode(
        client.updateAlias({
          alias: { name: managed.name, config: PBX },
          updateMask: { paths: ["load_balancer_config"] },
        }),
        Code.FailedPrecondition,
      );
      expect(errorReason(error)).toBe("ALIAS_READ_ONLY");
      await client.deleteAlias({ name: mine.name });
      expect(await client.getAlias({ name: managed.name })).toEqual(managed);
    });
  });
});
