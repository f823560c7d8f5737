/**
 * SIP users (switchboard.voice.v1.SipUsers) and carrier trunks
 * (switchboard.admin.v1.SipTrunks) over a listening server, on all six
 * transports of test/e2e/transports.ts (Connect JSON and binary, gRPC,
 * grpc-js, gRPC-Web, REST on the google.api.http paths), on every test
 * backend: the same results, codes and field violations everywhere; the
 * password in no response; users' keys by permission; trunks for the
 * operator only, their passwords sealed with SIP_CREDENTIALS_KEY.
 */
import { createHash } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SipDomains } from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipTrunks } from "../../gen/switchboard/admin/v1/sip_trunks_pb.js";
import { SipUsers } from "../../gen/switchboard/voice/v1/sip_users_pb.js";
import { sipTrunks, sipUsers } from "../../src/db/schema/index.js";
import { type App, build } from "../../src/server.js";
import { SecretBox } from "../../src/voice/sip-trunks/secret-box.js";
import { allAdapters, type Outcome, type TransportAdapter } from "../e2e/transports.js";
import { newApiKey, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { newSipDomainId } from "./support.js";

const CREDENTIALS_KEY = "sip-credentials-key-for-tests";
const md5 = (text: string) => createHash("md5").update(text, "utf8").digest("hex");

function json(outcome: Outcome): JsonObject {
  if (!outcome.ok) throw new Error(`expected success, got ${outcome.code}: ${outcome.message}`);
  return outcome.json as JsonObject;
}

function failure(outcome: Outcome): { code: string; reason: string | undefined; fields: string[] } {
  if (outcome.ok) throw new Error(`expected a failure, got ${JSON.stringify(outcome.json)}`);
  return { code: outcome.code, reason: outcome.reason, fields: [...new Set(outcome.fieldViolations)].sort() };
}

describe.each(testDatabases())("SipUsers and SipTrunks on every transport on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let adapters: TransportAdapter[];

  beforeAll(async () => {
    app = await build({ config: testConfig({ SIP_CREDENTIALS_KEY: CREDENTIALS_KEY }), db: database.db });
    const address = await app.listen(0, "127.0.0.1");
    adapters = await allAdapters(address.port, [SipUsers, SipTrunks, SipDomains]);
  });

  afterAll(async () => {
    for (const a of adapters ?? []) await a.close();
    await app?.close();
  });

  it("runs six transports", () => {
    expect(adapters.map((a) => a.name)).toEqual([
      "connect-json",
      "connect-binary",
      "grpc",
      "grpc-js",
      "grpc-web",
      "rest",
    ]);
  });

  /** A project, an owner key, a viewer key and a key of another project; a domain in the project. */
  async function setup(t: TransportAdapter) {
    const project = await newProject(database.db);
    const owner = (await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret;
    const viewer = (await newApiKey(database.db, [{ project, roles: ["roles/viewer"] }])).secret;
    const stranger = (
      await newApiKey(database.db, [{ project: await newProject(database.db), roles: ["roles/owner"] }])
    ).secret;
    const domain = json(
      await t.call(
        SipDomains,
        "CreateSipDomain",
        { parent: project, sipDomainId: newSipDomainId("api"), sipDomain: {} },
        owner,
      ),
    );
    return { project, owner, viewer, stranger, domain: domain.name as string, fqdn: domain.fqdn as string };
  }

  describe("SipUsers", () => {
    it("creates, gets, lists, updates and deletes; the password is never returned", async () => {
      for (const t of adapters) {
        const s = await setup(t);
        const created = json(
          await t.call(
            SipUsers,
            "CreateSipUser",
            {
              parent: s.domain,
              sipUserId: "alice",
              sipUser: { username: "alice", password: "s3cret-password", displayName: "Alice" },
            },
            s.owner,
          ),
        );
        expect(created, t.name).toMatchObject({
          name: `${s.domain}/users/alice`,
          sipUserId: "alice",
          username: "alice",
          displayName: "Alice",
          realm: s.fqdn,
        });
        expect(JSON.stringify(created), t.name).not.toContain("s3cret-password");
        expect(created, t.name).not.toHaveProperty("password");
        expect(
          json(await t.call(SipUsers, "GetSipUser", { name: created.name as string }, s.viewer)),
        ).toEqual(created);
        const listed = json(await t.call(SipUsers, "ListSipUsers", { parent: s.domain }, s.viewer));
        expect(listed.sipUsers, t.name).toEqual([created]);

        const updated = json(
          await t.call(
            SipUsers,
            "UpdateSipUser",
            {
              sipUser: { name: created.name as string, password: "another-password", disabled: true },
              updateMask: "password,disabled",
            },
            s.owner,
          ),
        );
        expect(updated.disabled, t.name).toBe(true);
        expect(JSON.stringify(updated), t.name).not.toContain("another-password");
        const [stored] = await database.db
          .select()
          .from(sipUsers)
          .where(eq(sipUsers.sipDomainId, s.domain.split("/")[3]!));
        expect(stored?.ha1Md5, t.name).toBe(md5(`alice:${s.fqdn}:another-password`));

        expect(
          json(await t.call(SipUsers, "DeleteSipUser", { name: created.name as string }, s.owner)),
        ).toEqual({});
        expect(
          failure(await t.call(SipUsers, "GetSipUser", { name: created.name as string }, s.owner)).code,
        ).toBe("NOT_FOUND");
      }
    });

    it("refuses bad input with INVALID_ARGUMENT naming the field, the same on every transport", async () => {
      const cases: { request: (domain: string) => JsonObject; fields: string[] }[] = [
        {
          request: (parent) => ({
            parent,
            sipUserId: "u1",
            sipUser: { username: "a b", password: "password1" },
          }),
          fields: ["sip_user.username"],
        },
        {
          request: (parent) => ({ parent, sipUserId: "u1", sipUser: { username: "bob" } }),
          fields: ["sip_user.password"],
        },
        {
          request: (parent) => ({
            parent,
            sipUserId: "u1",
            sipUser: { username: "bob", password: "password1", displayName: "x".repeat(101) },
          }),
          fields: ["sip_user.display_name"],
        },
        {
          request: (parent) => ({
            parent,
            sipUserId: "Bad_Id",
            sipUser: { username: "bob", password: "password1" },
          }),
          fields: ["sip_user_id"],
        },
        {
          request: (parent) => ({
            parent,
            sipUserId: "u1",
            sipUser: { username: "bob", password: "x".repeat(129) },
          }),
          fields: ["sip_user.password"],
        },
      ];
      for (const t of adapters) {
        const s = await setup(t);
        for (const c of cases) {
          const f = failure(await t.call(SipUsers, "CreateSipUser", c.request(s.domain), s.owner));
          expect({ transport: t.name, code: f.code, fields: f.fields }).toEqual({
            transport: t.name,
            code: "INVALID_ARGUMENT",
            fields: c.fields,
          });
        }
        const list = failure(
          await t.call(SipUsers, "ListSipUsers", { parent: s.domain, pageSize: -1 }, s.owner),
        );
        expect([list.code, list.fields]).toEqual(["INVALID_ARGUMENT", ["page_size"]]);
      }
    });

    it("checks permissions: viewers read, owners write, other projects' keys get nothing", async () => {
      for (const t of adapters) {
        const s = await setup(t);
        const body = {
          parent: s.domain,
          sipUserId: "u1",
          sipUser: { username: "u1", password: "password1" },
        };
        expect(failure(await t.call(SipUsers, "CreateSipUser", body, s.viewer)).code, t.name).toBe(
          "PERMISSION_DENIED",
        );
        expect(failure(await t.call(SipUsers, "CreateSipUser", body, s.stranger)).code, t.name).toBe(
          "PERMISSION_DENIED",
        );
        expect(failure(await t.call(SipUsers, "CreateSipUser", body, undefined)).code, t.name).toBe(
          "UNAUTHENTICATED",
        );
        json(await t.call(SipUsers, "CreateSipUser", body, s.owner));
        const name = `${s.domain}/users/u1`;
        expect(failure(await t.call(SipUsers, "GetSipUser", { name }, s.stranger)).code, t.name).toBe(
          "PERMISSION_DENIED",
        );
        expect(failure(await t.call(SipUsers, "DeleteSipUser", { name }, s.viewer)).code, t.name).toBe(
          "PERMISSION_DENIED",
        );
        expect(
          failure(await t.call(SipUsers, "UpdateSipUser", { sipUser: { name, disabled: true } }, s.viewer))
            .code,
          t.name,
        ).toBe("PERMISSION_DENIED");
        const dup = failure(await t.call(SipUsers, "CreateSipUser", { ...body, sipUserId: "u2" }, s.owner));
        expect(dup.code, t.name).toBe("ALREADY_EXISTS");
      }
    });
  });

  describe("SipTrunks", () => {
    let counter = 0;

    it("are the operator's only; created, read, listed, updated and deleted on every transport", async () => {
      for (const t of adapters) {
        const s = await setup(t);
        const id = `trunk-${t.name}-${++counter}`;
        const trunk = {
          displayName: "Carrier A",
          address: "sip.carrier.example:5061",
          transport: "TLS",
          username: "acct-42",
          password: "trunk-password-1",
          inboundNetworks: ["203.0.113.0/24", "198.51.100.7/32"],
          enabled: true,
          priority: 10,
        };
        expect(
          failure(await t.call(SipTrunks, "CreateSipTrunk", { sipTrunkId: id, sipTrunk: trunk }, s.owner))
            .code,
          t.name,
        ).toBe("PERMISSION_DENIED");
        const created = json(
          await t.call(SipTrunks, "CreateSipTrunk", { sipTrunkId: id, sipTrunk: trunk }, TEST_OPERATOR_TOKEN),
        );
        const { password: _, ...shown } = trunk;
        expect(created, t.name).toMatchObject({
          ...shown,
          name: `sipTrunks/${id}`,
          sipTrunkId: id,
          passwordSet: true,
        });
        expect(JSON.stringify(created), t.name).not.toContain("trunk-password-1");

        const [row] = await database.db.select().from(sipTrunks).where(eq(sipTrunks.id, id));
        expect(row!.password, t.name).toMatch(/^aes256gcm:/);
        expect(row!.password, t.name).not.toContain("trunk-password-1");
        expect(new SecretBox(CREDENTIALS_KEY).open(row!.password!)).toBe("trunk-password-1");

        expect(
          json(await t.call(SipTrunks, "GetSipTrunk", { name: `sipTrunks/${id}` }, TEST_OPERATOR_TOKEN)),
        ).toEqual(created);
        expect(
          failure(await t.call(SipTrunks, "GetSipTrunk", { name: `sipTrunks/${id}` }, s.owner)).code,
        ).toBe("PERMISSION_DENIED");
        const listed = json(await t.call(SipTrunks, "ListSipTrunks", { pageSize: 100 }, TEST_OPERATOR_TOKEN));
        expect(
          (listed.sipTrunks as JsonObject[]).map((x) => x.name),
          t.name,
        ).toContain(`sipTrunks/${id}`);

        // An update without the password keeps it; naming it in the mask with no value removes it.
        const kept = json(
          await t.call(
            SipTrunks,
            "UpdateSipTrunk",
            { sipTrunk: { name: `sipTrunks/${id}`, priority: 5 } },
            TEST_OPERATOR_TOKEN,
          ),
        );
        expect([kept.priority, kept.passwordSet], t.name).toEqual([5, true]);
        const removed = json(
          await t.call(
            SipTrunks,
            "UpdateSipTrunk",
            { sipTrunk: { name: `sipTrunks/${id}` }, updateMask: "password" },
            TEST_OPERATOR_TOKEN,
          ),
        );
        expect(removed.passwordSet ?? false, t.name).toBe(false);
        const [after] = await database.db.select().from(sipTrunks).where(eq(sipTrunks.id, id));
        expect(after!.password, t.name).toBeNull();

        expect(
          json(await t.call(SipTrunks, "DeleteSipTrunk", { name: `sipTrunks/${id}` }, TEST_OPERATOR_TOKEN)),
        ).toEqual({});
        expect(
          failure(await t.call(SipTrunks, "GetSipTrunk", { name: `sipTrunks/${id}` }, TEST_OPERATOR_TOKEN))
            .code,
        ).toBe("NOT_FOUND");
      }
    });

    it("refuses bad trunks with INVALID_ARGUMENT naming the field", async () => {
      const cases: { trunk: JsonObject; id?: string; fields: string[] }[] = [
        { trunk: {}, fields: ["sip_trunk.address"] },
        { trunk: { address: "sip.carrier.example:99999" }, fields: ["sip_trunk.address"] },
        { trunk: { address: "sip:carrier.example" }, fields: ["sip_trunk.address"] },
        { trunk: { address: "[2001:db8::1]:5060" }, id: "ok-v6", fields: [] },
        { trunk: { address: "192.0.2.300" }, fields: ["sip_trunk.address"] },
        {
          trunk: { address: "192.0.2.1", inboundNetworks: ["203.0.113.0/24", "203.0.113.1/24"] },
          fields: ["sip_trunk.inbound_networks[1]"],
        },
        { trunk: { address: "192.0.2.1", password: "pw" }, fields: ["sip_trunk.username"] },
        { trunk: { address: "192.0.2.1", priority: 70000 }, fields: ["sip_trunk.priority"] },
        { trunk: { address: "192.0.2.1" }, id: "Bad", fields: ["sip_trunk_id"] },
      ];
      for (const t of adapters) {
        for (const c of cases) {
          const id = c.id === undefined ? `bad-${++counter}` : c.id === "ok-v6" ? `v6-${++counter}` : c.id;
          const outcome = await t.call(
            SipTrunks,
            "CreateSipTrunk",
            { sipTrunkId: id, sipTrunk: c.trunk },
            TEST_OPERATOR_TOKEN,
          );
          if (c.fields.length === 0) {
            expect(json(outcome).address, t.name).toBe(c.trunk.address);
            continue;
          }
          const f = failure(outcome);
          expect({ transport: t.name, code: f.code, fields: f.fields }).toEqual({
            transport: t.name,
            code: "INVALID_ARGUMENT",
            fields: c.fields,
          });
        }
      }
    });
  });
});

describe("SecretBox", () => {
  it("seals with the key, opens only with it, and keeps passwords as given without one", () => {
    const box = new SecretBox("a-key-of-sixteen+");
    const sealed = box.seal("pässword");
    expect(sealed).toMatch(/^aes256gcm:/);
    expect(box.seal("pässword")).not.toBe(sealed); // a fresh IV each time
    expect(box.open(sealed)).toBe("pässword");
    expect(() => new SecretBox("another-key-of-16").open(sealed)).toThrow(/another SIP_CREDENTIALS_KEY/);
    expect(() => new SecretBox(undefined).open(sealed)).toThrow(/SIP_CREDENTIALS_KEY is needed/);
    const plain = new SecretBox(undefined).seal("pw");
    expect(plain).toBe("plain:pw");
    expect(box.open(plain)).toBe("pw");
  });
});
