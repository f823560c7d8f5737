/**
 * SipDomains and the operator's SipDomainAdmin, in process, on every test
 * backend: creation rules, global ids, soft delete, updates, domain-optional
 * mode, the collaboration type and its verification.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { Aliases } from "../../gen/enfonica/voice/v1beta1/aliases_pb.js";
import {
  PostProcessing,
  CallRecordingConfig_CallRecordingTrigger as Trigger,
} from "../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import {
  SipDomain_DomainType as DomainType,
  SipDomain_TerminationMode as Mode,
  type SipDomain,
  type SipDomainSchema,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { ResourceInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { SipDomainAdmin } from "../../gen/switchboard/admin/v1/sip_domains_pb.js";
import { ProjectsDomain } from "../../src/admin/projects.js";
import { ProjectsRepository } from "../../src/admin/projects-repository.js";
import { systemClock } from "../../src/clock.js";
import { collabVerificationString } from "../../src/voice/sip-domains/collab.js";
import {
  collectPages,
  createTestClient,
  errorReason,
  expectCode,
  expectInvalid,
  newApiKey,
  newProject,
} from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { configuredClient, newSipDomainId } from "./support.js";

type DomainInit = MessageInitShape<typeof SipDomainSchema>;

const BASE = "sip.switchboard.local";
const DEFAULT_SECRET = "switchboard-collab-simulator";
const COLLAB = DomainType.COLLAB_DIRECT_ROUTING;
const x = (n: number) => "x".repeat(n);
const blocks = (...cidrs: string[]) => cidrs.map((cidrBlock) => ({ cidrBlock }));

interface InvalidCreate {
  name: string;
  domain?: DomainInit | undefined;
  id?: string;
  parent?: string;
  fields: string[];
}

const INVALID_CREATES: InvalidCreate[] = [
  { name: "no sip_domain", domain: undefined, fields: ["sip_domain"] },
  { name: "an empty sip_domain_id", id: "", fields: ["sip_domain_id"] },
  { name: "a 1-character sip_domain_id", id: "a", fields: ["sip_domain_id"] },
  { name: "a 31-character sip_domain_id", id: `a${x(29)}b`, fields: ["sip_domain_id"] },
  { name: "an uppercase sip_domain_id", id: "Acme", fields: ["sip_domain_id"] },
  { name: "a sip_domain_id starting with a hyphen", id: "-acme", fields: ["sip_domain_id"] },
  { name: "a sip_domain_id ending with a hyphen", id: "acme-", fields: ["sip_domain_id"] },
  { name: "a sip_domain_id with an underscore", id: "ac_me", fields: ["sip_domain_id"] },
  { name: "a sip_domain_id with a dot", id: "ac.me", fields: ["sip_domain_id"] },
  { name: "a parent that is not a project", parent: "organizations/o", fields: ["parent"] },
  {
    name: "display_name over 100 characters",
    domain: { displayName: x(101) },
    fields: ["sip_domain.display_name"],
  },
  {
    name: "six handler URIs",
    domain: { callTerminationHandlerUris: Array.from({ length: 6 }, (_, i) => `https://h${i}.example.com/`) },
    fields: ["sip_domain.call_termination_handler_uris"],
  },
  {
    name: "a relative handler URI",
    domain: { callTerminationHandlerUris: ["/hook"] },
    fields: ["sip_domain.call_termination_handler_uris[0]"],
  },
  {
    name: "an ftp handler URI",
    domain: { callTerminationHandlerUris: ["https://ok.example.com/", "ftp://files.example.com/x"] },
    fields: ["sip_domain.call_termination_handler_uris[1]"],
  },
  {
    name: "a sip handler URI",
    domain: { callTerminationHandlerUris: ["sip:pbx@example.com"] },
    fields: ["sip_domain.call_termination_handler_uris[0]"],
  },
  {
    name: "PROGRAMMABLE without handler URIs",
    domain: { callTerminationMode: Mode.PROGRAMMABLE },
    fields: ["sip_domain.call_termination_handler_uris"],
  },
  {
    name: "an undefined termination mode",
    domain: { callTerminationMode: 9 as Mode },
    fields: ["sip_domain.call_termination_mode"],
  },
  { name: "an undefined type", domain: { type: 7 as DomainType }, fields: ["sip_domain.type"] },
  {
    name: "101 CIDR blocks",
    domain: { cidrBlocks: Array.from({ length: 101 }, (_, i) => ({ cidrBlock: `10.0.${i}.0/24` })) },
    fields: ["sip_domain.cidr_blocks"],
  },
  {
    name: "a block with host bits set",
    domain: { cidrBlocks: blocks("203.0.113.0/24", "10.0.0.1/24") },
    fields: ["sip_domain.cidr_blocks[1].cidr_block"],
  },
  {
    name: "a prefix over 32",
    domain: { cidrBlocks: blocks("10.0.0.0/33") },
    fields: ["sip_domain.cidr_blocks[0].cidr_block"],
  },
  {
    name: "an address without prefix",
    domain: { cidrBlocks: blocks("10.0.0.7") },
    fields: ["sip_domain.cidr_blocks[0].cidr_block"],
  },
  {
    name: "an IPv6 block",
    domain: { cidrBlocks: blocks("2001:db8::/32") },
    fields: ["sip_domain.cidr_blocks[0].cidr_block"],
  },
  {
    name: "an empty block",
    domain: { cidrBlocks: blocks("") },
    fields: ["sip_domain.cidr_blocks[0].cidr_block"],
  },
  {
    name: "a leading-zero octet",
    domain: { cidrBlocks: blocks("10.0.0.010/32") },
    fields: ["sip_domain.cidr_blocks[0].cidr_block"],
  },
  {
    name: "a block display name over 100 characters",
    domain: { cidrBlocks: [{ cidrBlock: "10.0.0.0/8", displayName: x(101) }] },
    fields: ["sip_domain.cidr_blocks[0].display_name"],
  },
  {
    name: "channel_limit 101",
    domain: { type: COLLAB, channelLimit: 101 },
    fields: ["sip_domain.channel_limit"],
  },
  { name: "a negative channel_limit", domain: { channelLimit: -1 }, fields: ["sip_domain.channel_limit"] },
  {
    name: "a recording_ready_uri that is no URI",
    domain: { callRecording: { recordingReadyUri: "not a uri" } },
    fields: ["sip_domain.call_recording.recording_ready_uri"],
  },
  {
    name: "an ftp recording_ready_uri",
    domain: { callRecording: { recordingReadyUri: "ftp://example.com/r" } },
    fields: ["sip_domain.call_recording.recording_ready_uri"],
  },
  {
    name: "a relative transcription_ready_uri",
    domain: { callRecording: { transcriptionReadyUri: "/t" } },
    fields: ["sip_domain.call_recording.transcription_ready_uri"],
  },
  {
    name: "an undefined recording trigger",
    domain: { callRecording: { trigger: 42 as Trigger } },
    fields: ["sip_domain.call_recording.trigger"],
  },
  {
    name: "CIDR blocks on the collaboration type",
    domain: { type: COLLAB, cidrBlocks: blocks("203.0.113.0/24") },
    fields: ["sip_domain.cidr_blocks"],
  },
];

const VALID_CREATES: { name: string; domain: DomainInit; id?: string }[] = [
  { name: "a 2-character id", domain: {}, id: "z9" },
  { name: "a 30-character id", domain: {}, id: `v${x(28)}1` },
  { name: "an all-digit id", domain: {}, id: "0123456789" },
  {
    name: "100 CIDR blocks",
    domain: { cidrBlocks: Array.from({ length: 100 }, (_, i) => ({ cidrBlock: `10.1.${i}.0/24` })) },
  },
  { name: "0.0.0.0/0 and a /32", domain: { cidrBlocks: blocks("0.0.0.0/0", "198.51.100.7/32") } },
  {
    name: "overlapping blocks inside one domain",
    domain: { cidrBlocks: blocks("10.0.0.0/8", "10.1.0.0/16") },
  },
  { name: "a 100-character display name of emoji", domain: { displayName: "📞".repeat(100) } },
  {
    name: "PROGRAMMABLE with five URIs",
    domain: {
      callTerminationMode: Mode.PROGRAMMABLE,
      callTerminationHandlerUris: Array.from(
        { length: 5 },
        (_, i) => `https://h${i}.example.com/voice?x=${i}`,
      ),
    },
  },
  { name: "channel_limit 100 on the collaboration type", domain: { type: COLLAB, channelLimit: 100 } },
  {
    name: "a call recording config with both URIs",
    domain: {
      callRecording: {
        trigger: Trigger.BRIDGE,
        recordingReadyUri: "http://r.example.com/",
        transcriptionReadyUri: "https://t.example.com/",
      },
    },
  },
];

describe.each(testDatabases())("SipDomains on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock();
  let client: Client<typeof SipDomains>;
  let admin: Client<typeof SipDomainAdmin>;
  let aliases: Client<typeof Aliases>;

  beforeAll(() => {
    client = createTestClient(SipDomains, database.db, clock);
    admin = createTestClient(SipDomainAdmin, database.db, clock);
    aliases = createTestClient(Aliases, database.db, clock);
  });

  async function createDomain(
    parent: string,
    domain: DomainInit = {},
    id = newSipDomainId(),
  ): Promise<SipDomain> {
    return client.createSipDomain({ parent, sipDomainId: id, sipDomain: domain });
  }

  async function listAll(parent: string, showDeleted = true): Promise<SipDomain[]> {
    const { items } = await collectPages(async (pageToken) => {
      const r = await client.listSipDomains({ parent, pageSize: 100, pageToken, showDeleted });
      return { items: r.sipDomains, nextPageToken: r.nextPageToken };
    });
    return items;
  }

  describe("CreateSipDomain", () => {
    it("creates a standard domain named by the client, with its FQDN and defaults", async () => {
      const parent = await newProject(database.db);
      clock.set("2026-03-01T10:00:00.123Z");
      const id = newSipDomainId("acme");
      const created = await createDomain(
        parent,
        { displayName: "Acme trunk", cidrBlocks: blocks("203.0.113.0/24") },
        id,
      );
      expect(created.name).toBe(`${parent}/sipDomains/${id}`);
      expect(created.sipDomainId).toBe(id);
      expect(created.fqdn).toBe(`${id}.${BASE}`);
      expect(created.displayName).toBe("Acme trunk");
      expect(created.type).toBe(DomainType.STANDARD);
      expect(created.callTerminationMode).toBe(Mode.TERMINATION_MODE_DISABLED);
      expect(created.channelLimit).toBe(0);
      expect(created.collabDirectRoutingStatus).toBeUndefined();
      expect(created.domainOptional).toBe(false);
      expect(created.deleteTime).toBeUndefined();
      expect(created.callRecording).toBeUndefined();
      expect(created.cidrBlocks).toMatchObject([{ cidrBlock: "203.0.113.0/24", displayName: "" }]);
      expect(timestampDate(created.createTime!).toISOString()).toBe("2026-03-01T10:00:00.123Z");
      expect(await client.getSipDomain({ name: created.name })).toEqual(created);
    });

    it("keeps every settable field as given", async () => {
      const parent = await newProject(database.db);
      const created = await createDomain(parent, {
        displayName: "pbx",
        allowRegister: true,
        callTerminationMode: Mode.PROGRAMMABLE,
        callTerminationHandlerUris: ["https://a.example.com/voice", "http://b.example.com/voice"],
        cidrBlocks: [
          { cidrBlock: "198.51.100.0/24", displayName: "office" },
          { cidrBlock: "203.0.113.9/32", displayName: "home" },
        ],
        callRecording: {
          trigger: Trigger.ANSWER,
          postProcessing: [PostProcessing.TRIM_SILENCE],
          recordingReadyUri: "https://r.example.com/ready",
        },
      });
      expect(created.allowRegister).toBe(true);
      expect(created.callTerminationMode).toBe(Mode.PROGRAMMABLE);
      expect(created.callTerminationHandlerUris).toEqual([
        "https://a.example.com/voice",
        "http://b.example.com/voice",
      ]);
      expect(created.cidrBlocks.map((b) => [b.cidrBlock, b.displayName])).toEqual([
        ["198.51.100.0/24", "office"],
        ["203.0.113.9/32", "home"],
      ]);
      expect(created.callRecording).toMatchObject({
        trigger: Trigger.ANSWER,
        postProcessing: [PostProcessing.TRIM_SILENCE],
        recordingReadyUri: "https://r.example.com/ready",
        transcriptionReadyUri: "",
      });
      expect(await client.getSipDomain({ name: created.name })).toEqual(created);
    });

    it("treats DOMAIN_TYPE_UNSPECIFIED as STANDARD and ignores channel_limit for it", async () => {
      const created = await createDomain(await newProject(database.db), {
        type: DomainType.UNSPECIFIED,
        channelLimit: 40,
      });
      expect(created.type).toBe(DomainType.STANDARD);
      expect(created.channelLimit).toBe(0);
      const standard = await createDomain(await newProject(database.db), {
        type: DomainType.STANDARD,
        channelLimit: 5,
      });
      expect(standard.channelLimit).toBe(0);
    });

    it("ignores output-only fields and the name in the input", async () => {
      const parent = await newProject(database.db);
      clock.set("2026-03-02T00:00:00.000Z");
      const id = newSipDomainId();
      const created = await createDomain(
        parent,
        {
          name: `${parent}/sipDomains/chosen`,
          sipDomainId: "chosen",
          fqdn: "evil.example.com",
          domainOptional: true,
          collabDirectRoutingStatus: { verified: true },
          createTime: timestampFromDate(new Date("2001-01-01T00:00:00Z")),
          deleteTime: timestampFromDate(new Date("2001-01-02T00:00:00Z")),
        },
        id,
      );
      expect(created.name).toBe(`${parent}/sipDomains/${id}`);
      expect(created.sipDomainId).toBe(id);
      expect(created.fqdn).toBe(`${id}.${BASE}`);
      expect(created.domainOptional).toBe(false);
      expect(created.collabDirectRoutingStatus).toBeUndefined();
      expect(created.deleteTime).toBeUndefined();
      expect(timestampDate(created.createTime!).toISOString()).toBe("2026-03-02T00:00:00.000Z");
    });

    it.each(VALID_CREATES)("accepts $name", async ({ domain, id }) => {
      const created = await createDomain(await newProject(database.db), domain, id ?? newSipDomainId());
      expect(created.cidrBlocks.length).toBeGreaterThanOrEqual(0);
      expect(await client.getSipDomain({ name: created.name })).toEqual(created);
    });

    it.each(INVALID_CREATES)("refuses $name with INVALID_ARGUMENT and writes nothing", async (c) => {
      const parent = await newProject(database.db);
      const id = c.id ?? newSipDomainId();
      const domain = "domain" in c ? c.domain : {};
      await expectInvalid(
        client.createSipDomain({ parent: c.parent ?? parent, sipDomainId: id, sipDomain: domain }),
        c.fields,
      );
      expect(await listAll(parent)).toEqual([]);
      // The id was not taken either.
      if (c.id === undefined) expect((await createDomain(parent, {}, id)).sipDomainId).toBe(id);
    });

    describe("ids are global and never reissued", () => {
      it("refuses an id taken in the same project with ALREADY_EXISTS", async () => {
        const parent = await newProject(database.db);
        const first = await createDomain(parent);
        const error = await expectCode(createDomain(parent, {}, first.sipDomainId), Code.AlreadyExists);
        expect(errorReason(error)).toBe("RESOURCE_ALREADY_EXISTS");
        expect(error.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(first.name);
        expect(error.rawMessage).toContain("unique across all projects");
      });

      it("refuses an id taken in another project, without naming that project", async () => {
        const first = await createDomain(await newProject(database.db));
        const other = await newProject(database.db);
        const error = await expectCode(createDomain(other, {}, first.sipDomainId), Code.AlreadyExists);
        expect(error.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(
          `${other}/sipDomains/${first.sipDomainId}`,
        );
        expect(error.rawMessage).not.toContain(first.name.split("/")[1]!);
        expect(await listAll(other)).toEqual([]);
      });

      it("refuses the id of a deleted domain, in any project", async () => {
        const parent = await newProject(database.db);
        const first = await createDomain(parent);
        await client.deleteSipDomain({ name: first.name });
        await expectCode(createDomain(parent, {}, first.sipDomainId), Code.AlreadyExists);
        await expectCode(
          createDomain(await newProject(database.db), {}, first.sipDomainId),
          Code.AlreadyExists,
        );
      });

      it("refuses the id of a domain whose project was deleted", async () => {
        const parent = await newProject(database.db);
        const first = await createDomain(parent);
        await new ProjectsDomain(new ProjectsRepository(database.db), systemClock).delete(
          parent.split("/")[1]!,
        );
        await expectCode(
          createDomain(await newProject(database.db), {}, first.sipDomainId),
          Code.AlreadyExists,
        );
      });

      it("lets exactly one of two concurrent creates of one id from two projects win", async () => {
        for (let round = 0; round < 8; round++) {
          const [a, b] = [await newProject(database.db), await newProject(database.db)];
          const id = newSipDomainId("race");
          const results = await Promise.allSettled([createDomain(a, {}, id), createDomain(b, {}, id)]);
          const won = results.filter((r) => r.status === "fulfilled");
          const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
          expect(won).toHaveLength(1);
          expect(lost).toHaveLength(1);
          expect(ConnectError.from(lost[0]!.reason).code).toBe(Code.AlreadyExists);
          const listed = [...(await listAll(a)), ...(await listAll(b))];
          expect(listed.map((d) => d.sipDomainId)).toEqual([id]);
        }
      });

      it("lets exactly one of two concurrent collaboration creates win, with one alias", async () => {
        const [a, b] = [await newProject(database.db), await newProject(database.db)];
        const id = newSipDomainId("race");
        const results = await Promise.allSettled([
          createDomain(a, { type: COLLAB }, id),
          createDomain(b, { type: COLLAB }, id),
        ]);
        expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
        const winner = (results.find((r) => r.status === "fulfilled") as PromiseFulfilledResult<SipDomain>)
          .value;
        const listed = await aliases.listAliases({ parent: winner.name });
        expect(listed.aliases.map((l) => l.aliasId)).toEqual(["collab-proxies"]);
      });
    });
  });

  describe("GetSipDomain", () => {
    it("returns NOT_FOUND for an unknown domain", async () => {
      const name = `${await newProject(database.db)}/sipDomains/unknown`;
      const error = await expectCode(client.getSipDomain({ name }), Code.NotFound);
      expect(error.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(name);
    });

    it("returns NOT_FOUND for a domain of another project", async () => {
      const created = await createDomain(await newProject(database.db));
      await expectCode(
        client.getSipDomain({ name: `${await newProject(database.db)}/sipDomains/${created.sipDomainId}` }),
        Code.NotFound,
      );
    });

    it.each([
      ["an empty name", ""],
      ["a parent", "projects/p"],
      ["another collection", "projects/p/regulatoryListings/x"],
      ["a nested name", "projects/p/sipDomains/a/aliases/b"],
    ])("refuses %s with INVALID_ARGUMENT naming name", async (_, name) => {
      await expectInvalid(client.getSipDomain({ name }), ["name"]);
    });
  });

  describe("ListSipDomains", () => {
    it("lists newest first, hides deleted domains unless show_deleted, and shows no one else's", async () => {
      const parent = await newProject(database.db);
      const other = await newProject(database.db);
      clock.set("2026-04-01T00:00:00.000Z");
      const created: SipDomain[] = [];
      for (let i = 0; i < 5; i++) {
        created.push(await createDomain(parent, { displayName: `d${i}` }));
        await createDomain(other);
        clock.advance(1000);
      }
      const deleted = await client.deleteSipDomain({ name: created[1]!.name });
      const live = await client.listSipDomains({ parent });
      expect(live.sipDomains.map((d) => d.displayName)).toEqual(["d4", "d3", "d2", "d0"]);
      expect(live.nextPageToken).toBe("");
      const all = await client.listSipDomains({ parent, showDeleted: true });
      expect(all.sipDomains.map((d) => d.displayName)).toEqual(["d4", "d3", "d2", "d1", "d0"]);
      expect(all.sipDomains[3]).toEqual(deleted);
    });

    it("pages without gaps or repeats, and binds the token to show_deleted", async () => {
      const parent = await newProject(database.db);
      clock.set("2026-04-02T00:00:00.000Z");
      for (let i = 0; i < 23; i++) {
        await createDomain(parent);
        if (i % 2 === 1) clock.advance(1);
      }
      const all = await listAll(parent);
      expect(all).toHaveLength(23);
      for (const size of [1, 4, 10]) {
        const { items, pages } = await collectPages(async (pageToken) => {
          const r = await client.listSipDomains({ parent, pageSize: size, pageToken, showDeleted: true });
          return { items: r.sipDomains, nextPageToken: r.nextPageToken };
        });
        expect(items.map((d) => d.name)).toEqual(all.map((d) => d.name));
        expect(pages).toBe(Math.ceil(23 / size));
      }
      const first = await client.listSipDomains({ parent, pageSize: 5 });
      await expectInvalid(
        client.listSipDomains({ parent, pageSize: 5, pageToken: first.nextPageToken, showDeleted: true }),
        ["page_token"],
      );
    });

    it("refuses a negative page_size", async () => {
      await expectInvalid(client.listSipDomains({ parent: await newProject(database.db), pageSize: -1 }), [
        "page_size",
      ]);
    });
  });

  describe("UpdateSipDomain", () => {
    let domain: SipDomain;

    beforeAll(async () => {
      domain = await createDomain(await newProject(database.db), {
        displayName: "before",
        callTerminationMode: Mode.PSTN_TRUNK,
        callTerminationHandlerUris: ["https://h.example.com/"],
        cidrBlocks: blocks("203.0.113.0/24"),
      });
    });

    async function expectUnchanged() {
      expect(await client.getSipDomain({ name: domain.name })).toEqual(domain);
    }

    it("without a mask applies the populated fields only", async () => {
      const updated = await client.updateSipDomain({
        sipDomain: { name: domain.name, displayName: "after", allowRegister: true },
      });
      expect(updated.displayName).toBe("after");
      expect(updated.allowRegister).toBe(true);
      expect(updated.cidrBlocks).toEqual(domain.cidrBlocks);
      expect(updated.callTerminationMode).toBe(Mode.PSTN_TRUNK);
      domain = updated;
      await expectUnchanged();
    });

    it("with a mask changes exactly the named fields, clearing those sent empty", async () => {
      const updated = await client.updateSipDomain({
        sipDomain: {
          name: domain.name,
          displayName: "ignored",
          cidrBlocks: blocks("198.51.100.0/24", "192.0.2.0/25"),
        },
        updateMask: { paths: ["cidr_blocks", "call_termination_handler_uris"] },
      });
      expect(updated.displayName).toBe(domain.displayName);
      expect(updated.cidrBlocks.map((b) => b.cidrBlock)).toEqual(["198.51.100.0/24", "192.0.2.0/25"]);
      expect(updated.callTerminationHandlerUris).toEqual([]);
      domain = updated;
      await expectUnchanged();
    });

    it("with * replaces every updatable field and keeps the immutable type", async () => {
      const updated = await client.updateSipDomain({
        sipDomain: { name: domain.name, displayName: "star", callRecording: { trigger: Trigger.BRIDGE } },
        updateMask: { paths: ["*"] },
      });
      expect(updated.displayName).toBe("star");
      expect(updated.cidrBlocks).toEqual([]);
      expect(updated.allowRegister).toBe(false);
      // UNSPECIFIED reads back as TERMINATION_MODE_DISABLED.
      expect(updated.callTerminationMode).toBe(Mode.TERMINATION_MODE_DISABLED);
      expect(updated.callRecording?.trigger).toBe(Trigger.BRIDGE);
      expect(updated.type).toBe(DomainType.STANDARD);
      expect(updated.createTime).toEqual(domain.createTime);
      domain = updated;
      await expectUnchanged();
    });

    it("accepts the domain as read back (GET then PATCH with *)", async () => {
      const got = await client.getSipDomain({ name: domain.name });
      expect(await client.updateSipDomain({ sipDomain: got, updateMask: { paths: ["*"] } })).toEqual(domain);
    });

    it("refuses a change of type with INVALID_ARGUMENT naming sip_domain.type", async () => {
      await expectInvalid(client.updateSipDomain({ sipDomain: { name: domain.name, type: COLLAB } }), [
        "sip_domain.type",
      ]);
      await expectUnchanged();
      // sending the current type is fine
      const same = await client.updateSipDomain({
        sipDomain: { name: domain.name, type: DomainType.STANDARD, displayName: "same type" },
      });
      expect(same.type).toBe(DomainType.STANDARD);
      domain = same;
    });

    it("ignores output-only fields", async () => {
      const updated = await client.updateSipDomain({
        sipDomain: { name: domain.name, domainOptional: true, fqdn: "x.example.com", sipDomainId: "other" },
        updateMask: { paths: ["domain_optional", "fqdn", "sip_domain_id"] },
      });
      expect(updated).toEqual(domain);
    });

    const INVALID_UPDATES: { name: string; patch: DomainInit; paths?: string[]; fields: string[] }[] = [
      { name: "display_name over 100", patch: { displayName: x(101) }, fields: ["sip_domain.display_name"] },
      {
        name: "PROGRAMMABLE with no handler URIs left",
        patch: { callTerminationMode: Mode.PROGRAMMABLE },
        paths: ["call_termination_mode", "call_termination_handler_uris"],
        fields: ["sip_domain.call_termination_handler_uris"],
      },
      {
        name: "a relative handler URI",
        patch: { callTerminationHandlerUris: ["hook"] },
        fields: ["sip_domain.call_termination_handler_uris[0]"],
      },
      {
        name: "a block with host bits set",
        patch: { cidrBlocks: blocks("192.0.2.1/24") },
        fields: ["sip_domain.cidr_blocks[0].cidr_block"],
      },
      {
        name: "101 blocks",
        patch: { cidrBlocks: Array.from({ length: 101 }, (_, i) => ({ cidrBlock: `10.2.${i}.0/24` })) },
        fields: ["sip_domain.cidr_blocks"],
      },
      { name: "channel_limit 101", patch: { channelLimit: 101 }, fields: ["sip_domain.channel_limit"] },
      {
        name: "a bad recording URI",
        patch: { callRecording: { recordingReadyUri: "mailto:a@example.com" } },
        fields: ["sip_domain.call_recording.recording_ready_uri"],
      },
      {
        name: "an unknown mask path",
        patch: { displayName: "a" },
        paths: ["display_name", "nope"],
        fields: ["update_mask"],
      },
      {
        name: "* with another path",
        patch: { displayName: "a" },
        paths: ["*", "display_name"],
        fields: ["update_mask"],
      },
    ];

    it.each(INVALID_UPDATES)("refuses $name with INVALID_ARGUMENT and changes nothing", async (c) => {
      await expectInvalid(
        client.updateSipDomain({
          sipDomain: { ...c.patch, name: domain.name },
          ...(c.paths ? { updateMask: { paths: c.paths } } : {}),
        }),
        c.fields,
      );
      await expectUnchanged();
    });

    it("returns NOT_FOUND for an unknown domain and INVALID_ARGUMENT for a bad name", async () => {
      await expectCode(
        client.updateSipDomain({
          sipDomain: { name: `${await newProject(database.db)}/sipDomains/nope`, displayName: "a" },
        }),
        Code.NotFound,
      );
      await expectInvalid(client.updateSipDomain({ sipDomain: { name: "sipDomains/x", displayName: "a" } }), [
        "sip_domain.name",
      ]);
    });
  });

  describe("DeleteSipDomain", () => {
    it("soft-deletes: returns the domain with delete_time, which stays readable and frozen", async () => {
      const parent = await newProject(database.db);
      const created = await createDomain(parent, { cidrBlocks: blocks("203.0.113.0/24") });
      clock.set("2026-06-01T12:00:00.000Z");
      const deleted = await client.deleteSipDomain({ name: created.name });
      expect(timestampDate(deleted.deleteTime!).toISOString()).toBe("2026-06-01T12:00:00.000Z");
      expect({ ...deleted, deleteTime: undefined }).toEqual({ ...created, deleteTime: undefined });
      expect(await client.getSipDomain({ name: created.name })).toEqual(deleted);

      for (const call of [
        () => client.updateSipDomain({ sipDomain: { name: created.name, displayName: "zombie" } }),
        () => client.deleteSipDomain({ name: created.name }),
      ]) {
        const error = await expectCode(call(), Code.FailedPrecondition);
        expect(errorReason(error)).toBe("SIP_DOMAIN_DELETED");
      }
      expect(await client.getSipDomain({ name: created.name })).toEqual(deleted);
    });

    it("returns NOT_FOUND for an unknown domain", async () => {
      await expectCode(
        client.deleteSipDomain({ name: `${await newProject(database.db)}/sipDomains/nope` }),
        Code.NotFound,
      );
    });
  });

  describe("domain-optional mode (SipDomainAdmin.SetDomainOptional)", () => {
    it("is set by the operator with the blocks; then users cannot change cidr_blocks", async () => {
      const parent = await newProject(database.db);
      const domain = await createDomain(parent, { cidrBlocks: blocks("10.9.0.0/16") });
      const on = await admin.setDomainOptional({
        name: domain.name,
        domainOptional: true,
        cidrBlocks: [{ cidrBlock: "100.64.10.0/24", displayName: "carrier" }],
      });
      expect(on.domainOptional).toBe(true);
      expect(on.cidrBlocks.map((b) => [b.cidrBlock, b.displayName])).toEqual([["100.64.10.0/24", "carrier"]]);
      expect(await client.getSipDomain({ name: domain.name })).toEqual(on);

      const error = await expectCode(
        client.updateSipDomain({ sipDomain: { name: domain.name, cidrBlocks: blocks("100.64.11.0/24") } }),
        Code.FailedPrecondition,
      );
      expect(errorReason(error)).toBe("CIDR_BLOCKS_MANAGED_BY_OPERATOR");
      await expectCode(
        client.updateSipDomain({ sipDomain: { name: domain.name }, updateMask: { paths: ["cidr_blocks"] } }),
        Code.FailedPrecondition,
      );
      expect(await client.getSipDomain({ name: domain.name })).toEqual(on);

      // other fields stay the user's, and the blocks may be sent back unchanged
      const renamed = await client.updateSipDomain({
        sipDomain: { ...on, displayName: "renamed" },
        updateMask: { paths: ["*"] },
      });
      expect(renamed.displayName).toBe("renamed");
      expect(renamed.cidrBlocks).toEqual(on.cidrBlocks);

      // turning it off keeps the blocks, and users own them again
      const off = await admin.setDomainOptional({ name: domain.name, domainOptional: false });
      expect(off.domainOptional).toBe(false);
      expect(off.cidrBlocks).toEqual(on.cidrBlocks);
      const changed = await client.updateSipDomain({
        sipDomain: { name: domain.name, cidrBlocks: blocks("100.64.11.0/24") },
      });
      expect(changed.cidrBlocks.map((b) => b.cidrBlock)).toEqual(["100.64.11.0/24"]);

      // off with blocks replaces them
      const replaced = await admin.setDomainOptional({
        name: domain.name,
        cidrBlocks: blocks("100.64.12.0/24"),
      });
      expect(replaced.domainOptional).toBe(false);
      expect(replaced.cidrBlocks.map((b) => b.cidrBlock)).toEqual(["100.64.12.0/24"]);
    });

    it("cannot be set by users: domain_optional is output only, the admin API is the operator's", async () => {
      const parent = await newProject(database.db);
      const domain = await createDomain(parent, { cidrBlocks: blocks("100.65.0.0/24") });
      const owner = await newApiKey(database.db, [{ project: parent, roles: ["roles/owner"] }]);
      const userAdmin = createTestClient(SipDomainAdmin, database.db, clock, owner.secret);
      const error = await expectCode(
        userAdmin.setDomainOptional({
          name: domain.name,
          domainOptional: true,
          cidrBlocks: blocks("100.65.0.0/24"),
        }),
        Code.PermissionDenied,
      );
      expect(errorReason(error)).toBe("PERMISSION_DENIED");
      const userClient = createTestClient(SipDomains, database.db, clock, owner.secret);
      const updated = await userClient.updateSipDomain({
        sipDomain: { name: domain.name, domainOptional: true },
        updateMask: { paths: ["domain_optional"] },
      });
      expect(updated.domainOptional).toBe(false);
    });

    it("refuses blocks overlapping another live domain-optional domain, naming both", async () => {
      const a = await createDomain(await newProject(database.db));
      const b = await createDomain(await newProject(database.db), { cidrBlocks: blocks("100.66.0.0/24") });
      await admin.setDomainOptional({
        name: a.name,
        domainOptional: true,
        cidrBlocks: blocks("100.66.0.0/16"),
      });
      const error = await expectCode(
        admin.setDomainOptional({
          name: b.name,
          domainOptional: true,
          cidrBlocks: blocks("100.67.0.0/24", "100.66.5.0/24"),
        }),
        Code.FailedPrecondition,
      );
      expect(errorReason(error)).toBe("CIDR_BLOCKS_OVERLAP");
      expect(error.rawMessage).toContain(a.name);
      expect(error.rawMessage).toContain(b.name);
      expect(error.rawMessage).toContain("100.66.5.0/24");
      expect(error.rawMessage).toContain("100.66.0.0/16");
      expect(await client.getSipDomain({ name: b.name })).toEqual(b);
    });

    it("allows adjacent blocks, and overlaps with domains that are not domain-optional or are deleted", async () => {
      const a = await createDomain(await newProject(database.db));
      await admin.setDomainOptional({
        name: a.name,
        domainOptional: true,
        cidrBlocks: blocks("100.68.0.0/25"),
      });
      const adjacent = await createDomain(await newProject(database.db));
      await admin.setDomainOptional({
        name: adjacent.name,
        domainOptional: true,
        cidrBlocks: blocks("100.68.0.128/25"),
      });
      // a plain domain may share the networks
      const plain = await createDomain(await newProject(database.db), {
        cidrBlocks: blocks("100.68.0.0/24"),
      });
      expect(plain.domainOptional).toBe(false);
      // a deleted domain-optional domain no longer holds its blocks
      await client.deleteSipDomain({ name: a.name });
      const after = await createDomain(await newProject(database.db));
      const on = await admin.setDomainOptional({
        name: after.name,
        domainOptional: true,
        cidrBlocks: blocks("100.68.0.0/26"),
      });
      expect(on.domainOptional).toBe(true);
    });

    it("lets exactly one of two concurrent overlapping changes win", async () => {
      const a = await createDomain(await newProject(database.db));
      const b = await createDomain(await newProject(database.db));
      const results = await Promise.allSettled([
        admin.setDomainOptional({ name: a.name, domainOptional: true, cidrBlocks: blocks("100.69.0.0/24") }),
        admin.setDomainOptional({ name: b.name, domainOptional: true, cidrBlocks: blocks("100.69.0.0/25") }),
      ]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      const lost = results.find((r): r is PromiseRejectedResult => r.status === "rejected")!;
      expect(ConnectError.from(lost.reason).code).toBe(Code.FailedPrecondition);
    });

    it.each([
      ["true without blocks", { domainOptional: true }, ["cidr_blocks"]],
      [
        "a block with host bits set",
        { domainOptional: true, cidrBlocks: blocks("100.70.0.1/24") },
        ["cidr_blocks[0].cidr_block"],
      ],
      [
        "101 blocks",
        {
          domainOptional: true,
          cidrBlocks: Array.from({ length: 101 }, (_, i) => ({ cidrBlock: `10.3.${i}.0/24` })),
        },
        ["cidr_blocks"],
      ],
    ])("refuses %s with INVALID_ARGUMENT and changes nothing", async (_, request, fields) => {
      const domain = await createDomain(await newProject(database.db), {
        cidrBlocks: blocks("100.70.0.0/24"),
      });
      await expectInvalid(admin.setDomainOptional({ name: domain.name, ...request }), fields);
      expect(await client.getSipDomain({ name: domain.name })).toEqual(domain);
    });

    it("refuses the collaboration type and deleted domains with FAILED_PRECONDITION; unknown ones are NOT_FOUND", async () => {
      const collab = await createDomain(await newProject(database.db), { type: COLLAB });
      const e1 = await expectCode(
        admin.setDomainOptional({
          name: collab.name,
          domainOptional: true,
          cidrBlocks: blocks("100.71.0.0/24"),
        }),
        Code.FailedPrecondition,
      );
      expect(errorReason(e1)).toBe("COLLAB_DIRECT_ROUTING_NOT_DOMAIN_OPTIONAL");
      const gone = await createDomain(await newProject(database.db));
      await client.deleteSipDomain({ name: gone.name });
      const e2 = await expectCode(
        admin.setDomainOptional({
          name: gone.name,
          domainOptional: true,
          cidrBlocks: blocks("100.71.0.0/24"),
        }),
        Code.FailedPrecondition,
      );
      expect(errorReason(e2)).toBe("SIP_DOMAIN_DELETED");
      await expectCode(
        admin.setDomainOptional({
          name: `${await newProject(database.db)}/sipDomains/nope`,
          cidrBlocks: blocks("100.71.0.0/24"),
          domainOptional: true,
        }),
        Code.NotFound,
      );
    });
  });

  describe("DOMAIN_TYPE_COLLAB_DIRECT_ROUTING", () => {
    it("gets the platform's networks, channel_limit 1, unverified status and a read-only proxy alias", async () => {
      const parent = await newProject(database.db);
      clock.set("2026-07-01T00:00:00.000Z");
      const created = await createDomain(parent, { type: COLLAB, displayName: "Teams" });
      expect(created.type).toBe(COLLAB);
      expect(created.cidrBlocks.map((b) => b.cidrBlock)).toEqual(["192.0.2.0/24", "198.51.100.0/24"]);
      expect(created.channelLimit).toBe(1);
      expect(created.collabDirectRoutingStatus).toMatchObject({ verified: false });
      expect(created.domainOptional).toBe(false);

      const listed = await aliases.listAliases({ parent: created.name });
      expect(listed.aliases).toHaveLength(1);
      const alias = listed.aliases[0]!;
      expect(alias.name).toBe(`${created.name}/aliases/collab-proxies`);
      expect(timestampDate(alias.createTime!).toISOString()).toBe("2026-07-01T00:00:00.000Z");
      expect(alias.config.case).toBe("loadBalancerConfig");
      expect(alias.config.value?.endpoints.map((e) => [e.uri, e.priority, e.weight, e.enabled])).toEqual([
        ["sip:sip.collab.example:5061;transport=tls", 0, 10, true],
        ["sip:sip2.collab.example:5061;transport=tls", 1, 10, true],
        ["sip:sip3.collab.example:5061;transport=tls", 2, 10, true],
      ]);
      expect(await aliases.getAlias({ name: alias.name })).toEqual(alias);

      for (const call of [
        () => aliases.updateAlias({ alias: { name: alias.name, displayName: "mine" } }),
        () => aliases.deleteAlias({ name: alias.name }),
      ]) {
        expect(errorReason(await expectCode(call(), Code.FailedPrecondition))).toBe("ALIAS_READ_ONLY");
      }
      expect(await aliases.getAlias({ name: alias.name })).toEqual(alias);
    });

    it("keeps channel_limit (0 means 1) and lets users change it", async () => {
      const parent = await newProject(database.db);
      const fifty = await createDomain(parent, { type: COLLAB, channelLimit: 50 });
      expect(fifty.channelLimit).toBe(50);
      const updated = await client.updateSipDomain({ sipDomain: { name: fifty.name, channelLimit: 100 } });
      expect(updated.channelLimit).toBe(100);
      const reset = await client.updateSipDomain({
        sipDomain: { name: fifty.name },
        updateMask: { paths: ["channel_limit"] },
      });
      expect(reset.channelLimit).toBe(1);
    });

    it("has read-only cidr_blocks (FAILED_PRECONDITION), though sending them back unchanged is fine", async () => {
      const domain = await createDomain(await newProject(database.db), { type: COLLAB });
      const error = await expectCode(
        client.updateSipDomain({ sipDomain: { name: domain.name, cidrBlocks: blocks("203.0.113.0/24") } }),
        Code.FailedPrecondition,
      );
      expect(errorReason(error)).toBe("CIDR_BLOCKS_READ_ONLY");
      await expectCode(
        client.updateSipDomain({ sipDomain: { name: domain.name }, updateMask: { paths: ["cidr_blocks"] } }),
        Code.FailedPrecondition,
      );
      const same = await client.updateSipDomain({
        sipDomain: { ...domain, displayName: "ok" },
        updateMask: { paths: ["*"] },
      });
      expect(same.displayName).toBe("ok");
      expect(same.cidrBlocks).toEqual(domain.cidrBlocks);
      await expectInvalid(
        client.updateSipDomain({ sipDomain: { name: domain.name, type: DomainType.STANDARD } }),
        ["sip_domain.type"],
      );
    });

    it("follows the configured networks and proxies, also for domains created before a change", async () => {
      const parent = await newProject(database.db);
      const domain = await createDomain(parent, { type: COLLAB });
      const env = {
        COLLAB_SIGNALLING_NETWORKS: "203.0.113.0/25",
        COLLAB_SIP_PROXIES: "sips:edge.collab.example priority=5 weight=20,sip:backup.collab.example",
        SIP_BASE_DOMAIN: "voice.example.net",
      };
      const reconfigured = configuredClient(SipDomains, database.db, clock, env);
      const got = await reconfigured.getSipDomain({ name: domain.name });
      expect(got.cidrBlocks.map((b) => b.cidrBlock)).toEqual(["203.0.113.0/25"]);
      expect(got.fqdn).toBe(`${domain.sipDomainId}.voice.example.net`);
      const alias = await configuredClient(Aliases, database.db, clock, env).getAlias({
        name: `${domain.name}/aliases/collab-proxies`,
      });
      expect(alias.config.value?.endpoints.map((e) => [e.uri, e.priority, e.weight])).toEqual([
        ["sips:edge.collab.example", 5, 20],
        ["sip:backup.collab.example", 1, 10],
      ]);
    });

    describe("VerifyCollabDirectRouting", () => {
      it("verifies at once with the string the platform issues for the domain", async () => {
        const domain = await createDomain(await newProject(database.db), { type: COLLAB });
        const issued = collabVerificationString(domain.fqdn, DEFAULT_SECRET);
        expect(issued).toMatch(/^collab-verification=[A-Za-z0-9_-]{43}$/);
        clock.set("2026-07-02T00:00:00.000Z");
        const verified = await client.verifyCollabDirectRouting({
          sipDomain: domain.name,
          verificationString: issued,
        });
        expect(verified.collabDirectRoutingStatus?.verified).toBe(true);
        expect(await client.getSipDomain({ name: domain.name })).toEqual(verified);
        const state = await admin.getCollabVerification({ name: domain.name });
        expect(state).toMatchObject({
          sipDomain: domain.name,
          verificationRecord: issued,
          verified: true,
          platformCheckPassed: true,
        });
        expect(timestampDate(state.verifyTime!).toISOString()).toBe("2026-07-02T00:00:00.000Z");
        // re-applying changes nothing
        expect(
          await client.verifyCollabDirectRouting({ sipDomain: domain.name, verificationString: issued }),
        ).toEqual(verified);
      });

      it("records another string unverified until the operator's platform hook accepts it", async () => {
        const domain = await createDomain(await newProject(database.db), { type: COLLAB });
        const other = `collab-verification=${"A".repeat(43)}`;
        const pending = await client.verifyCollabDirectRouting({
          sipDomain: domain.name,
          verificationString: other,
        });
        expect(pending.collabDirectRoutingStatus?.verified).toBe(false);
        expect(await admin.getCollabVerification({ name: domain.name })).toMatchObject({
          verificationRecord: other,
          verified: false,
          platformCheckPassed: false,
        });
        const accepted = await admin.acceptCollabVerification({ name: domain.name });
        expect(accepted).toMatchObject({ verificationRecord: other, verified: true });
        expect((await client.getSipDomain({ name: domain.name })).collabDirectRoutingStatus?.verified).toBe(
          true,
        );
        // the same record again keeps it verified; a different one is checked afresh
        expect(
          (await client.verifyCollabDirectRouting({ sipDomain: domain.name, verificationString: other }))
            .collabDirectRoutingStatus?.verified,
        ).toBe(true);
        const changed = await client.verifyCollabDirectRouting({
          sipDomain: domain.name,
          verificationString: `collab-verification=${"B".repeat(20)}`,
        });
        expect(changed.collabDirectRoutingStatus?.verified).toBe(false);
      });

      it.each([
        ["empty", ""],
        ["over 255 bytes", `collab-verification=${"a".repeat(236)}`],
        ["of 130 characters but 257 bytes of UTF-8", `MS=${"é".repeat(127)}`],
        ["with a newline", "MS=ms12345678\nx"],
        ["with a NUL", "MS=ms1234\u00005678"],
        ["with DEL", "MS=ms1234\u007f"],
      ])(
        "refuses a string %s with INVALID_ARGUMENT naming verification_string",
        async (_, verificationString) => {
          const domain = await createDomain(await newProject(database.db), { type: COLLAB });
          await expectInvalid(
            client.verifyCollabDirectRouting({ sipDomain: domain.name, verificationString }),
            ["verification_string"],
          );
          expect(await client.getSipDomain({ name: domain.name })).toEqual(domain);
          expect((await admin.getCollabVerification({ name: domain.name })).verificationRecord).toBe("");
        },
      );

      it.each([
        ["a DNS TXT form of a real platform", "MS=ms12345678"],
        ["the longest TXT string", `v=${"x".repeat(253)}`],
        ["with spaces", "google-site-verification=abc def"],
        ["the simulated form with a short token", "collab-verification=abc"],
        ["in UTF-8", "vérification=ünïcode"],
      ])(
        "records a tenant-issued string %s, unverified until the platform accepts it",
        async (_, verificationString) => {
          const domain = await createDomain(await newProject(database.db), { type: COLLAB });
          const applied = await client.verifyCollabDirectRouting({
            sipDomain: domain.name,
            verificationString,
          });
          expect(applied.collabDirectRoutingStatus?.verified).toBe(false);
          expect((await admin.getCollabVerification({ name: domain.name })).verificationRecord).toBe(
            verificationString,
          );
          expect(await admin.acceptCollabVerification({ name: domain.name })).toMatchObject({
            verificationRecord: verificationString,
            verified: true,
          });
        },
      );

      it("refuses other types with FAILED_PRECONDITION (a malformed string is INVALID_ARGUMENT first)", async () => {
        const standard = await createDomain(await newProject(database.db));
        const good = collabVerificationString(standard.fqdn, DEFAULT_SECRET);
        const error = await expectCode(
          client.verifyCollabDirectRouting({ sipDomain: standard.name, verificationString: good }),
          Code.FailedPrecondition,
        );
        expect(errorReason(error)).toBe("NOT_COLLAB_DIRECT_ROUTING");
        await expectInvalid(
          client.verifyCollabDirectRouting({ sipDomain: standard.name, verificationString: "" }),
          ["verification_string"],
        );
        for (const call of [
          () => admin.getCollabVerification({ name: standard.name }),
          () => admin.acceptCollabVerification({ name: standard.name }),
        ]) {
          expect(errorReason(await expectCode(call(), Code.FailedPrecondition))).toBe(
            "NOT_COLLAB_DIRECT_ROUTING",
          );
        }
      });

      it("refuses deleted domains, unknown ones, and accepting without a record", async () => {
        const domain = await createDomain(await newProject(database.db), { type: COLLAB });
        expect(
          errorReason(
            await expectCode(admin.acceptCollabVerification({ name: domain.name }), Code.FailedPrecondition),
          ),
        ).toBe("VERIFICATION_RECORD_MISSING");
        const good = collabVerificationString(domain.fqdn, DEFAULT_SECRET);
        await client.deleteSipDomain({ name: domain.name });
        expect(
          errorReason(
            await expectCode(
              client.verifyCollabDirectRouting({ sipDomain: domain.name, verificationString: good }),
              Code.FailedPrecondition,
            ),
          ),
        ).toBe("SIP_DOMAIN_DELETED");
        await expectCode(
          client.verifyCollabDirectRouting({
            sipDomain: `${await newProject(database.db)}/sipDomains/nope`,
            verificationString: good,
          }),
          Code.NotFound,
        );
      });
    });
  });
});
