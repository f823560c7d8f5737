/**
 * SIP users of SIP domains, in process, on every test backend: the
 * lifecycle, the write-only password kept only as digest hashes (read back
 * from the row), the field rules, uniqueness, the parent domain's state, and
 * the users' effect on the domain's authorization rules.
 */
import { createHash } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { and, eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { SipDomain_TerminationMode, SipDomains } from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { ResourceInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { type SipUser, SipUsers } from "../../gen/switchboard/voice/v1/sip_users_pb.js";
import { sipUsers } from "../../src/db/schema/index.js";
import { SipDomainsDomain } from "../../src/voice/sip-domains/domain.js";
import { VoiceStore } from "../../src/voice/sip-domains/repository.js";
import { SipUsersDomain } from "../../src/voice/sip-users/domain.js";
import {
  collectPages,
  createTestClient,
  errorReason,
  expectCode,
  expectInvalid,
  newProject,
  testConfig,
} from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { newSipDomainId } from "./support.js";

const BASE = "sip.switchboard.local"; // SIP_BASE_DOMAIN's default
const x = (n: number) => "x".repeat(n);
const md5 = (s: string) => createHash("md5").update(s, "utf8").digest("hex");
const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");

describe.each(testDatabases())("SipUsers on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock();
  let client: Client<typeof SipUsers>;
  let domains: Client<typeof SipDomains>;

  beforeAll(() => {
    client = createTestClient(SipUsers, database.db, clock);
    domains = createTestClient(SipDomains, database.db, clock);
  });

  async function newDomain(cidrBlocks: string[] = []): Promise<string> {
    const d = await domains.createSipDomain({
      parent: await newProject(database.db),
      sipDomainId: newSipDomainId("su"),
      sipDomain: {
        cidrBlocks: cidrBlocks.map((cidrBlock) => ({ cidrBlock })),
        callTerminationMode: SipDomain_TerminationMode.PROGRAMMABLE,
        callTerminationHandlerUris: ["https://handler.example.com/voice"],
      },
    });
    return d.name;
  }

  async function row(name: string) {
    const [, , , sipDomainId, , id] = name.split("/");
    const [r] = await database.db
      .select()
      .from(sipUsers)
      .where(and(eq(sipUsers.sipDomainId, sipDomainId!), eq(sipUsers.id, id!)));
    return r;
  }

  async function listAll(parent: string): Promise<SipUser[]> {
    const { items } = await collectPages(async (pageToken) => {
      const r = await client.listSipUsers({ parent, pageSize: 100, pageToken });
      return { items: r.sipUsers, nextPageToken: r.nextPageToken };
    });
    return items;
  }

  describe("CreateSipUser", () => {
    it("creates a user, never returns the password, and stores only its digest hashes", async () => {
      const parent = await newDomain();
      const domainId = parent.split("/")[3]!;
      clock.set("2026-08-01T00:00:00.000Z");
      const created = await client.createSipUser({
        parent,
        sipUserId: "alice",
        sipUser: { username: "alice.smith", password: "correct horse battery", displayName: "Alice" },
      });
      expect(created.name).toBe(`${parent}/users/alice`);
      expect(created.sipUserId).toBe("alice");
      expect(created.username).toBe("alice.smith");
      expect(created.password).toBe("");
      expect(created.displayName).toBe("Alice");
      expect(created.disabled).toBe(false);
      expect(created.realm).toBe(`${domainId}.${BASE}`);
      expect(timestampDate(created.createTime!).toISOString()).toBe("2026-08-01T00:00:00.000Z");
      expect(timestampDate(created.updateTime!).toISOString()).toBe("2026-08-01T00:00:00.000Z");
      expect(await client.getSipUser({ name: created.name })).toEqual(created);

      const stored = (await row(created.name))!;
      const a1 = `alice.smith:${domainId}.${BASE}:correct horse battery`;
      expect(stored.realm).toBe(`${domainId}.${BASE}`);
      expect(stored.ha1Md5).toBe(md5(a1));
      expect(stored.ha1Sha256).toBe(sha256(a1));
      // The password appears in no column.
      expect(JSON.stringify(stored)).not.toContain("correct horse battery");
    });

    it.each([
      { name: "no sip_user", sipUser: undefined, fields: ["sip_user"] },
      { name: "an empty sip_user_id", id: "", fields: ["sip_user_id"] },
      { name: "an uppercase sip_user_id", id: "Alice", fields: ["sip_user_id"] },
      { name: "a 64-character sip_user_id", id: `a${x(62)}b`, fields: ["sip_user_id"] },
      { name: "no username", sipUser: { password: "password1" }, fields: ["sip_user.username"] },
      {
        name: "a username with a space",
        sipUser: { username: "a b", password: "password1" },
        fields: ["sip_user.username"],
      },
      {
        name: "a username with @",
        sipUser: { username: "a@b", password: "password1" },
        fields: ["sip_user.username"],
      },
      {
        name: "a 65-character username",
        sipUser: { username: x(65), password: "password1" },
        fields: ["sip_user.username"],
      },
      { name: "no password", sipUser: { username: "bob" }, fields: ["sip_user.password"] },
      {
        name: "a 7-character password",
        sipUser: { username: "bob", password: "1234567" },
        fields: ["sip_user.password"],
      },
      {
        name: "a 129-character password",
        sipUser: { username: "bob", password: x(129) },
        fields: ["sip_user.password"],
      },
      {
        name: "a password with a newline",
        sipUser: { username: "bob", password: "pass\nword1" },
        fields: ["sip_user.password"],
      },
      {
        name: "display_name over 100",
        sipUser: { username: "bob", password: "password1", displayName: x(101) },
        fields: ["sip_user.display_name"],
      },
    ])("refuses $name with INVALID_ARGUMENT naming the field, and writes nothing", async (c) => {
      const parent = await newDomain();
      await expectInvalid(
        client.createSipUser({
          parent,
          sipUserId: c.id ?? "u1",
          sipUser: "sipUser" in c ? c.sipUser : { username: "bob", password: "password1" },
        }),
        c.fields,
      );
      expect(await listAll(parent)).toEqual([]);
    });

    it("accepts every character RFC 3261 allows unescaped in a user part", async () => {
      const parent = await newDomain();
      const username = "+61-4_1.2!~*'()&=$,;?/Z";
      const created = await client.createSipUser({
        parent,
        sipUserId: "odd",
        sipUser: { username, password: "password1" },
      });
      expect(created.username).toBe(username);
    });

    it("refuses a taken id or username with ALREADY_EXISTS; another domain may use both", async () => {
      const parent = await newDomain();
      await client.createSipUser({
        parent,
        sipUserId: "u1",
        sipUser: { username: "bob", password: "password1" },
      });
      const byId = await expectCode(
        client.createSipUser({
          parent,
          sipUserId: "u1",
          sipUser: { username: "carol", password: "password1" },
        }),
        Code.AlreadyExists,
      );
      expect(byId.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(`${parent}/users/u1`);
      const byUsername = await expectCode(
        client.createSipUser({
          parent,
          sipUserId: "u2",
          sipUser: { username: "bob", password: "password1" },
        }),
        Code.AlreadyExists,
      );
      expect(byUsername.message).toContain('"bob"');
      // Usernames are case-sensitive, like SIP user parts.
      await client.createSipUser({
        parent,
        sipUserId: "u3",
        sipUser: { username: "Bob", password: "password1" },
      });
      const other = await newDomain();
      await client.createSipUser({
        parent: other,
        sipUserId: "u1",
        sipUser: { username: "bob", password: "password1" },
      });
      expect((await listAll(parent)).map((u) => u.sipUserId).sort()).toEqual(["u1", "u3"]);
    });

    it("lets exactly one of two concurrent creates of one username win", async () => {
      const parent = await newDomain();
      const results = await Promise.allSettled([
        client.createSipUser({
          parent,
          sipUserId: "a",
          sipUser: { username: "race", password: "password1" },
        }),
        client.createSipUser({
          parent,
          sipUserId: "b",
          sipUser: { username: "race", password: "password2" },
        }),
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
        client.createSipUser({
          parent: elsewhere,
          sipUserId: "u",
          sipUser: { username: "u", password: "password1" },
        }),
        Code.NotFound,
      );
      expect(error.findDetails(ResourceInfoSchema)[0]).toMatchObject({
        resourceType: "voice.api.enfonica.com/SipDomain",
        resourceName: elsewhere,
      });
      await expectCode(client.listSipUsers({ parent: elsewhere }), Code.NotFound);
      await expectCode(client.getSipUser({ name: `${elsewhere}/users/u` }), Code.NotFound);
    });

    it.each([
      ["a project", "projects/p"],
      ["a user", "projects/p/sipDomains/d/users/u"],
      ["another collection", "projects/p/calls/c"],
    ])("refuses %s as parent with INVALID_ARGUMENT naming parent", async (_, parent) => {
      await expectInvalid(
        client.createSipUser({ parent, sipUserId: "u", sipUser: { username: "u", password: "password1" } }),
        ["parent"],
      );
    });
  });

  describe("ListSipUsers", () => {
    it("lists newest first over pages, and refuses a token used with another parent", async () => {
      const parent = await newDomain();
      for (let i = 0; i < 5; i++) {
        clock.advance(1000);
        await client.createSipUser({
          parent,
          sipUserId: `u${i}`,
          sipUser: { username: `user${i}`, password: "password1" },
        });
      }
      const first = await client.listSipUsers({ parent, pageSize: 2 });
      expect(first.sipUsers.map((u) => u.sipUserId)).toEqual(["u4", "u3"]);
      expect(first.sipUsers.every((u) => u.password === "")).toBe(true);
      const { items, pages } = await collectPages(async (pageToken) => {
        const r = await client.listSipUsers({ parent, pageSize: 2, pageToken });
        return { items: r.sipUsers, nextPageToken: r.nextPageToken };
      });
      expect(items.map((u) => u.sipUserId)).toEqual(["u4", "u3", "u2", "u1", "u0"]);
      expect(pages).toBe(3);
      const other = await newDomain();
      await expectInvalid(client.listSipUsers({ parent: other, pageToken: first.nextPageToken }), [
        "page_token",
      ]);
      await expectInvalid(client.listSipUsers({ parent, pageSize: -1 }), ["page_size"]);
    });
  });

  describe("UpdateSipUser", () => {
    async function alice(parent: string): Promise<SipUser> {
      return client.createSipUser({
        parent,
        sipUserId: "alice",
        sipUser: { username: "alice", password: "first-password" },
      });
    }

    it("changes display_name and disabled, keeping the hashes when no password is sent", async () => {
      const parent = await newDomain();
      const created = await alice(parent);
      const before = (await row(created.name))!;
      clock.advance(5000);
      const updated = await client.updateSipUser({
        sipUser: { name: created.name, displayName: "Alice B", disabled: true },
      });
      expect(updated.displayName).toBe("Alice B");
      expect(updated.disabled).toBe(true);
      expect(updated.password).toBe("");
      expect(timestampDate(updated.updateTime!).getTime()).toBe(
        timestampDate(created.updateTime!).getTime() + 5000,
      );
      const after = (await row(created.name))!;
      expect([after.ha1Md5, after.ha1Sha256]).toEqual([before.ha1Md5, before.ha1Sha256]);
      // Clearing with a mask.
      const enabled = await client.updateSipUser({
        sipUser: { name: created.name },
        updateMask: { paths: ["disabled"] },
      });
      expect(enabled.disabled).toBe(false);
      expect(enabled.displayName).toBe("Alice B");
    });

    it("replaces the hashes with a new password, never returning it", async () => {
      const parent = await newDomain();
      const created = await alice(parent);
      const updated = await client.updateSipUser({
        sipUser: { name: created.name, password: "second-password" },
        updateMask: { paths: ["password"] },
      });
      expect(updated.password).toBe("");
      const stored = (await row(created.name))!;
      expect(stored.ha1Md5).toBe(md5(`alice:${created.realm}:second-password`));
      expect(stored.ha1Sha256).toBe(sha256(`alice:${created.realm}:second-password`));
    });

    it("needs the password with a new username, and rehashes for it", async () => {
      const parent = await newDomain();
      const created = await alice(parent);
      await expectInvalid(client.updateSipUser({ sipUser: { name: created.name, username: "alicia" } }), [
        "sip_user.password",
      ]);
      const renamed = await client.updateSipUser({
        sipUser: { name: created.name, username: "alicia", password: "third-password" },
      });
      expect(renamed.username).toBe("alicia");
      expect((await row(created.name))!.ha1Md5).toBe(md5(`alicia:${created.realm}:third-password`));
    });

    it("refuses a taken username, bad values and bad names, naming the field", async () => {
      const parent = await newDomain();
      const created = await alice(parent);
      await client.createSipUser({
        parent,
        sipUserId: "bob",
        sipUser: { username: "bob", password: "password1" },
      });
      await expectCode(
        client.updateSipUser({ sipUser: { name: created.name, username: "bob", password: "password1" } }),
        Code.AlreadyExists,
      );
      await expectInvalid(client.updateSipUser({ sipUser: { name: created.name, password: "short" } }), [
        "sip_user.password",
      ]);
      await expectInvalid(client.updateSipUser({ sipUser: { name: created.name, displayName: x(101) } }), [
        "sip_user.display_name",
      ]);
      await expectInvalid(
        client.updateSipUser({ sipUser: { name: created.name }, updateMask: { paths: ["nope"] } }),
        ["update_mask"],
      );
      await expectInvalid(client.updateSipUser({ sipUser: { name: `${parent}/aliases/alice` } }), [
        "sip_user.name",
      ]);
      await expectCode(
        client.updateSipUser({ sipUser: { name: `${parent}/users/nobody`, displayName: "x" } }),
        Code.NotFound,
      );
      expect((await client.getSipUser({ name: created.name })).username).toBe("alice");
    });
  });

  describe("DeleteSipUser", () => {
    it("deletes a user; a second delete is NOT_FOUND", async () => {
      const parent = await newDomain();
      const created = await client.createSipUser({
        parent,
        sipUserId: "gone",
        sipUser: { username: "gone", password: "password1" },
      });
      await client.deleteSipUser({ name: created.name });
      await expectCode(client.getSipUser({ name: created.name }), Code.NotFound);
      await expectCode(client.deleteSipUser({ name: created.name }), Code.NotFound);
      expect(await row(created.name)).toBeUndefined();
    });
  });

  describe("a deleted SIP domain", () => {
    it("keeps its users readable but refuses every change with SIP_DOMAIN_DELETED", async () => {
      const parent = await newDomain();
      const created = await client.createSipUser({
        parent,
        sipUserId: "kept",
        sipUser: { username: "kept", password: "password1" },
      });
      await domains.deleteSipDomain({ name: parent });
      expect((await client.getSipUser({ name: created.name })).username).toBe("kept");
      expect(await listAll(parent)).toHaveLength(1);
      const changes = [
        () =>
          client.createSipUser({
            parent,
            sipUserId: "new",
            sipUser: { username: "new", password: "password1" },
          }),
        () => client.updateSipUser({ sipUser: { name: created.name, displayName: "x" } }),
        () => client.deleteSipUser({ name: created.name }),
      ];
      for (const change of changes) {
        expect(errorReason(await expectCode(change(), Code.FailedPrecondition))).toBe("SIP_DOMAIN_DELETED");
      }
    });
  });

  describe("the domain's authorization rules", () => {
    it("require authentication once the domain has users, disabled ones included", async () => {
      const config = testConfig();
      const store = new VoiceStore(database.db);
      const users = new SipUsersDomain(store, clock, config.sipDomains);
      const sipDomains = new SipDomainsDomain(store, clock, config.sipDomains, users);
      const parent = await newDomain(["10.1.0.0/16"]);
      const fqdn = `${parent.split("/")[3]}.${BASE}`;
      const call = (authenticatedUser: boolean) =>
        sipDomains.resolveSipCall({ domainName: fqdn, sourceIp: "10.1.2.3", authenticatedUser });

      expect((await call(false)).allow).toBe(true); // rule 2: blocks, no users
      const user = await client.createSipUser({
        parent,
        sipUserId: "pbx",
        sipUser: { username: "pbx", password: "password1", disabled: true },
      });
      const refused = await call(false);
      expect(refused.allow === false && refused.code).toBe("AUTHENTICATION_REQUIRED");
      expect(await call(true)).toMatchObject({ allow: true, rule: 3 });

      await client.deleteSipUser({ name: user.name });
      expect((await call(false)).allow).toBe(true);
    });

    it("give the SIP core the stored credentials of a username", async () => {
      const config = testConfig();
      const users = new SipUsersDomain(new VoiceStore(database.db), clock, config.sipDomains);
      const parent = await newDomain();
      const domainId = parent.split("/")[3]!;
      await client.createSipUser({
        parent,
        sipUserId: "desk",
        sipUser: { username: "desk-1", password: "password1" },
      });
      expect(await users.credentials(domainId, "desk-1")).toEqual({
        projectId: parent.split("/")[1],
        sipDomainId: domainId,
        userId: "desk",
        username: "desk-1",
        disabled: false,
        realm: `${domainId}.${BASE}`,
        ha1Md5: md5(`desk-1:${domainId}.${BASE}:password1`),
        ha1Sha256: sha256(`desk-1:${domainId}.${BASE}:password1`),
      });
      expect(await users.credentials(domainId, "DESK-1")).toBeUndefined();
    });
  });
});
