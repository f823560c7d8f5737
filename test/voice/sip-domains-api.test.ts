/**
 * SIP domains, aliases and the operator's SipDomainAdmin over a listening
 * server: REST (the google.api.http paths, proto3 JSON) and gRPC (HTTP/2),
 * with the operator token and with users' API keys, configured with a base
 * domain, collaboration networks, proxies and verification secret of its own.
 */
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Aliases } from "../../gen/enfonica/voice/v1beta1/aliases_pb.js";
import {
  SipDomain_DomainType as DomainType,
  SipDomains,
} from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipDomainAdmin } from "../../gen/switchboard/admin/v1/sip_domains_pb.js";
import { type App, build } from "../../src/server.js";
import { collabVerificationString } from "../../src/voice/sip-domains/collab.js";
import {
  bearer,
  errorReason,
  newApiKey,
  newProject,
  TEST_OPERATOR_TOKEN,
  testConfig,
} from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { newSipDomainId } from "./support.js";

const ENV = {
  SIP_BASE_DOMAIN: "SIP.Test.Example.",
  COLLAB_SIGNALLING_NETWORKS: "192.0.2.64/26, 198.18.0.0/15",
  COLLAB_SIP_PROXIES:
    "sips:edge1.collab.example:5061 weight=40,sips:edge2.collab.example:5061 priority=0 weight=60",
  COLLAB_VERIFICATION_SECRET: "scenario-secret-123",
};
const BASE = "sip.test.example";

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies of any shape
type Json = Record<string, any>;

interface Reply {
  status: number;
  json: Json;
}

function detail(json: Json, type: string): Json | undefined {
  return (json.error?.details ?? []).find((d: Json) => String(d["@type"]).endsWith(type));
}

function restReason(reply: Reply): string | undefined {
  return detail(reply.json, "ErrorInfo")?.reason;
}

function restFields(reply: Reply): string[] {
  const fields: string[] = (detail(reply.json, "BadRequest")?.fieldViolations ?? []).map(
    (v: Json) => v.field,
  );
  return [...new Set(fields)].sort();
}

describe.each(testDatabases())("SIP domains over REST and gRPC on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let base: string;

  beforeAll(async () => {
    app = await build({ config: testConfig(ENV), db: database.db });
    const address = await app.listen(0, "127.0.0.1");
    base = `http://127.0.0.1:${address.port}`;
  });

  afterAll(async () => {
    await app?.close();
  });

  async function rest(
    method: string,
    path: string,
    body?: unknown,
    token: string = TEST_OPERATOR_TOKEN,
  ): Promise<Reply> {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Json };
  }

  function grpc<S extends typeof SipDomains | typeof Aliases | typeof SipDomainAdmin>(
    service: S,
    token: string = TEST_OPERATOR_TOKEN,
  ): Client<S> {
    return createClient(service, createGrpcTransport({ baseUrl: base, interceptors: [bearer(token)] }));
  }

  async function grpcCode(
    call: Promise<unknown>,
  ): Promise<{ code: Code; reason: string | undefined; message: string }> {
    try {
      await call;
    } catch (err) {
      const e = ConnectError.from(err);
      return { code: e.code, reason: errorReason(e), message: e.rawMessage };
    }
    throw new Error("the call should have failed");
  }

  /** A project and an API key owning it. */
  async function owned(): Promise<{ project: string; key: string }> {
    const project = await newProject(database.db);
    const { secret } = await newApiKey(database.db, [{ project, roles: ["roles/owner"] }]);
    return { project, key: secret };
  }

  describe("SipDomains over REST", () => {
    it("creates with a client-chosen id, reads, lists, updates and soft-deletes", async () => {
      const { project, key } = await owned();
      const id = newSipDomainId("rest");
      const created = await rest(
        "POST",
        `/v1beta1/${project}/sipDomains?sipDomainId=${id}`,
        {
          displayName: "Office PBX",
          callTerminationMode: "PROGRAMMABLE",
          callTerminationHandlerUris: ["https://app.example.com/voice"],
          cidrBlocks: [{ cidrBlock: "203.0.113.0/24", displayName: "office" }],
          domainOptional: true,
          channelLimit: 7,
        },
        key,
      );
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      expect(created.json).toMatchObject({
        name: `${project}/sipDomains/${id}`,
        sipDomainId: id,
        fqdn: `${id}.${BASE}`,
        displayName: "Office PBX",
        callTerminationMode: "PROGRAMMABLE",
        type: "DOMAIN_TYPE_STANDARD",
      });
      // output only, and ignored for the standard type
      expect(created.json.domainOptional).toBeUndefined();
      expect(created.json.channelLimit).toBeUndefined();
      expect((await rest("GET", `/v1beta1/${created.json.name}`, undefined, key)).json).toEqual(created.json);

      const patched = await rest(
        "PATCH",
        `/v1beta1/${created.json.name}?updateMask=displayName,cidrBlocks`,
        { displayName: "Renamed", cidrBlocks: [{ cidrBlock: "198.51.100.0/24" }] },
        key,
      );
      expect(patched.status).toBe(200);
      expect(patched.json.displayName).toBe("Renamed");
      expect(patched.json.cidrBlocks).toEqual([{ cidrBlock: "198.51.100.0/24" }]);

      const deleted = await rest("DELETE", `/v1beta1/${created.json.name}`, undefined, key);
      expect(deleted.status).toBe(200);
      expect(Date.parse(deleted.json.deleteTime)).not.toBeNaN();
      expect({ ...deleted.json, deleteTime: undefined }).toEqual({ ...patched.json, deleteTime: undefined });

      const frozen = await rest("PATCH", `/v1beta1/${created.json.name}`, { displayName: "zombie" }, key);
      expect(frozen.status).toBe(400);
      expect(frozen.json.error.status).toBe("FAILED_PRECONDITION");
      expect(restReason(frozen)).toBe("SIP_DOMAIN_DELETED");

      expect(
        (await rest("GET", `/v1beta1/${project}/sipDomains`, undefined, key)).json.sipDomains ?? [],
      ).toEqual([]);
      const withDeleted = await rest(
        "GET",
        `/v1beta1/${project}/sipDomains?showDeleted=true`,
        undefined,
        key,
      );
      expect(withDeleted.json.sipDomains).toEqual([deleted.json]);

      // the id stays taken, for everyone
      const again = await rest(
        "POST",
        `/v1beta1/${(await owned()).project}/sipDomains?sipDomainId=${id}`,
        {},
      );
      expect(again.status).toBe(409);
      expect(again.json.error.status).toBe("ALREADY_EXISTS");
    });

    it.each([
      ["a bad id", "Bad_Id", {}, ["sip_domain_id"]],
      [
        "a block with host bits set",
        "ok-id",
        { cidrBlocks: [{ cidrBlock: "203.0.113.9/24" }] },
        ["sip_domain.cidr_blocks[0].cidr_block"],
      ],
      [
        "PROGRAMMABLE without handlers",
        "ok-id",
        { callTerminationMode: "PROGRAMMABLE" },
        ["sip_domain.call_termination_handler_uris"],
      ],
      [
        "a relative handler URI",
        "ok-id",
        { callTerminationHandlerUris: ["voice"] },
        ["sip_domain.call_termination_handler_uris[0]"],
      ],
      [
        "channel_limit 0..100 exceeded",
        "ok-id",
        { type: "DOMAIN_TYPE_COLLAB_DIRECT_ROUTING", channelLimit: 101 },
        ["sip_domain.channel_limit"],
      ],
    ])("answers 400 naming the field for %s, and creates nothing", async (_, id, body, fields) => {
      const { project, key } = await owned();
      const reply = await rest("POST", `/v1beta1/${project}/sipDomains?sipDomainId=${id}`, body, key);
      expect(reply.status).toBe(400);
      expect(reply.json.error.status).toBe("INVALID_ARGUMENT");
      expect(restFields(reply)).toEqual(fields);
      expect(
        (await rest("GET", `/v1beta1/${project}/sipDomains?showDeleted=true`, undefined, key)).json,
      ).toEqual({});
    });
  });

  describe("SipDomains over gRPC", () => {
    it("creates, gets, lists, updates and deletes with the same rules and codes", async () => {
      const { project, key } = await owned();
      const client = grpc(SipDomains, key);
      const id = newSipDomainId("grpc");
      const created = await client.createSipDomain({
        parent: project,
        sipDomainId: id,
        sipDomain: { cidrBlocks: [{ cidrBlock: "198.51.100.0/25" }] },
      });
      expect(created.fqdn).toBe(`${id}.${BASE}`);
      expect(await client.getSipDomain({ name: created.name })).toEqual(created);
      expect((await client.listSipDomains({ parent: project })).sipDomains).toEqual([created]);
      const updated = await client.updateSipDomain({
        sipDomain: { name: created.name, allowRegister: true },
      });
      expect(updated.allowRegister).toBe(true);
      expect(
        (
          await grpcCode(
            client.updateSipDomain({
              sipDomain: { name: created.name, type: DomainType.COLLAB_DIRECT_ROUTING },
            }),
          )
        ).code,
      ).toBe(Code.InvalidArgument);
      const deleted = await client.deleteSipDomain({ name: created.name });
      expect(deleted.deleteTime).toBeDefined();
      const failed = await grpcCode(client.deleteSipDomain({ name: created.name }));
      expect(failed).toMatchObject({ code: Code.FailedPrecondition, reason: "SIP_DOMAIN_DELETED" });
      expect((await client.listSipDomains({ parent: project, showDeleted: true })).sipDomains).toEqual([
        deleted,
      ]);
      const taken = await grpcCode(
        client.createSipDomain({ parent: project, sipDomainId: id, sipDomain: {} }),
      );
      expect(taken.code).toBe(Code.AlreadyExists);
    });
  });

  describe("concurrent create of one id from two projects", () => {
    it("lets exactly one win, whichever transport each uses", async () => {
      for (let round = 0; round < 6; round++) {
        const a = await owned();
        const b = await owned();
        const id = newSipDomainId("race");
        const viaRest = rest(
          "POST",
          `/v1beta1/${a.project}/sipDomains?sipDomainId=${id}`,
          { displayName: "a" },
          a.key,
        );
        const viaGrpc = grpc(SipDomains, b.key)
          .createSipDomain({ parent: b.project, sipDomainId: id, sipDomain: { displayName: "b" } })
          .then(
            () => "OK",
            (err) => (ConnectError.from(err).code === Code.AlreadyExists ? "ALREADY_EXISTS" : String(err)),
          );
        const [restReply, grpcOutcome] = await Promise.all([viaRest, viaGrpc]);
        const restOutcome = restReply.status === 200 ? "OK" : restReply.json.error.status;
        expect([restOutcome, grpcOutcome].sort()).toEqual(["ALREADY_EXISTS", "OK"]);
        const owners = [
          ...((await rest("GET", `/v1beta1/${a.project}/sipDomains`, undefined, a.key)).json.sipDomains ??
            []),
          ...((await rest("GET", `/v1beta1/${b.project}/sipDomains`, undefined, b.key)).json.sipDomains ??
            []),
        ];
        expect(owners.map((d: Json) => d.sipDomainId)).toEqual([id]);
      }
    });

    it("lets exactly one of several simultaneous REST creates win", async () => {
      const id = newSipDomainId("race");
      const contenders = await Promise.all(Array.from({ length: 4 }, () => owned()));
      const replies = await Promise.all(
        contenders.map((c) => rest("POST", `/v1beta1/${c.project}/sipDomains?sipDomainId=${id}`, {}, c.key)),
      );
      expect(replies.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
    });
  });

  describe("domain-optional mode (operator only)", () => {
    it("refuses a user's key; the operator sets it with the fixed REST body; users then cannot change cidr_blocks", async () => {
      const { project, key } = await owned();
      const id = newSipDomainId("opt");
      const name = `${project}/sipDomains/${id}`;
      await rest(
        "POST",
        `/v1beta1/${project}/sipDomains?sipDomainId=${id}`,
        { cidrBlocks: [{ cidrBlock: "100.90.0.0/24" }] },
        key,
      );
      const body = { domainOptional: true, cidrBlocks: [{ cidrBlock: "100.91.0.0/24" }] };

      const byUser = await rest("POST", `/admin/v1/${name}:setDomainOptional`, body, key);
      expect(byUser.status).toBe(403);
      expect(byUser.json.error.status).toBe("PERMISSION_DENIED");
      const byUserGrpc = await grpcCode(grpc(SipDomainAdmin, key).setDomainOptional({ name, ...body }));
      expect(byUserGrpc.code).toBe(Code.PermissionDenied);
      // nor through the public API: domain_optional is output only
      const sneaky = await rest(
        "PATCH",
        `/v1beta1/${name}?updateMask=domainOptional`,
        { domainOptional: true },
        key,
      );
      expect(sneaky.status).toBe(200);
      expect(sneaky.json.domainOptional).toBeUndefined();

      const set = await rest("POST", `/admin/v1/${name}:setDomainOptional`, body);
      expect(set.status, JSON.stringify(set.json)).toBe(200);
      expect(set.json).toMatchObject({
        name,
        domainOptional: true,
        cidrBlocks: [{ cidrBlock: "100.91.0.0/24" }],
      });

      const change = await rest(
        "PATCH",
        `/v1beta1/${name}`,
        { cidrBlocks: [{ cidrBlock: "100.92.0.0/24" }] },
        key,
      );
      expect(change.status).toBe(400);
      expect(change.json.error.status).toBe("FAILED_PRECONDITION");
      expect(restReason(change)).toBe("CIDR_BLOCKS_MANAGED_BY_OPERATOR");
      const changeGrpc = await grpcCode(
        grpc(SipDomains, key).updateSipDomain({
          sipDomain: { name, cidrBlocks: [] },
          updateMask: { paths: ["cidr_blocks"] },
        }),
      );
      expect(changeGrpc).toMatchObject({
        code: Code.FailedPrecondition,
        reason: "CIDR_BLOCKS_MANAGED_BY_OPERATOR",
      });
      const rename = await rest("PATCH", `/v1beta1/${name}`, { displayName: "still mine" }, key);
      expect(rename.status).toBe(200);
      expect(rename.json).toMatchObject({
        displayName: "still mine",
        domainOptional: true,
        cidrBlocks: [{ cidrBlock: "100.91.0.0/24" }],
      });

      // the operator can turn it off over gRPC; the blocks are the user's again
      const off = await grpc(SipDomainAdmin).setDomainOptional({ name, domainOptional: false });
      expect(off.domainOptional).toBe(false);
      expect(
        (await rest("PATCH", `/v1beta1/${name}`, { cidrBlocks: [{ cidrBlock: "100.92.0.0/24" }] }, key))
          .status,
      ).toBe(200);
    });

    it("refuses overlapping blocks across domain-optional domains, naming both, on both transports", async () => {
      const a = await owned();
      const b = await owned();
      const [idA, idB] = [newSipDomainId("ova"), newSipDomainId("ovb")];
      await rest("POST", `/v1beta1/${a.project}/sipDomains?sipDomainId=${idA}`, {}, a.key);
      await rest("POST", `/v1beta1/${b.project}/sipDomains?sipDomainId=${idB}`, {}, b.key);
      const nameA = `${a.project}/sipDomains/${idA}`;
      const nameB = `${b.project}/sipDomains/${idB}`;
      expect(
        (
          await rest("POST", `/admin/v1/${nameA}:setDomainOptional`, {
            domainOptional: true,
            cidrBlocks: [{ cidrBlock: "100.93.0.0/16" }],
          })
        ).status,
      ).toBe(200);
      const overlap = await rest("POST", `/admin/v1/${nameB}:setDomainOptional`, {
        domainOptional: true,
        cidrBlocks: [{ cidrBlock: "100.93.7.0/24" }],
      });
      expect(overlap.status).toBe(400);
      expect(overlap.json.error.status).toBe("FAILED_PRECONDITION");
      expect(restReason(overlap)).toBe("CIDR_BLOCKS_OVERLAP");
      expect(overlap.json.error.message).toContain(nameA);
      expect(overlap.json.error.message).toContain(nameB);
      expect(detail(overlap.json, "ErrorInfo")?.metadata).toMatchObject({
        resource: nameB,
        conflicting_resource: nameA,
        cidr_block: "100.93.7.0/24",
        conflicting_cidr_block: "100.93.0.0/16",
      });
      const viaGrpc = await grpcCode(
        grpc(SipDomainAdmin).setDomainOptional({
          name: nameB,
          domainOptional: true,
          cidrBlocks: [{ cidrBlock: "100.93.0.0/30" }],
        }),
      );
      expect(viaGrpc.code).toBe(Code.FailedPrecondition);
      expect(viaGrpc.message).toContain(nameA);
      expect((await rest("GET", `/v1beta1/${nameB}`, undefined, b.key)).json.domainOptional).toBeUndefined();
    });

    it("answers 400 for a bad request and 404 for an unknown domain", async () => {
      const bad = await rest("POST", `/admin/v1/projects/nope/sipDomains/nope:setDomainOptional`, {
        domainOptional: true,
      });
      expect(bad.status).toBe(400);
      expect(restFields(bad)).toEqual(["cidr_blocks"]);
      const missing = await rest("POST", `/admin/v1/projects/nope/sipDomains/nope:setDomainOptional`, {
        domainOptional: true,
        cidrBlocks: [{ cidrBlock: "100.94.0.0/24" }],
      });
      expect(missing.status).toBe(404);
    });
  });

  describe("DOMAIN_TYPE_COLLAB_DIRECT_ROUTING", () => {
    it("is populated from configuration and verified by the platform's string or the operator's hook", async () => {
      const { project, key } = await owned();
      const id = newSipDomainId("teams");
      const name = `${project}/sipDomains/${id}`;
      const created = await rest(
        "POST",
        `/v1beta1/${project}/sipDomains?sipDomainId=${id}`,
        { type: "DOMAIN_TYPE_COLLAB_DIRECT_ROUTING", channelLimit: 12 },
        key,
      );
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      expect(created.json).toMatchObject({
        type: "DOMAIN_TYPE_COLLAB_DIRECT_ROUTING",
        channelLimit: 12,
        collabDirectRoutingStatus: {},
        cidrBlocks: [
          { cidrBlock: "192.0.2.64/26", displayName: "Collaboration platform signalling" },
          { cidrBlock: "198.18.0.0/15", displayName: "Collaboration platform signalling" },
        ],
      });
      const alias = await rest("GET", `/v1beta1/${name}/aliases/collab-proxies`, undefined, key);
      expect(alias.json.loadBalancerConfig.endpoints).toEqual([
        { uri: "sips:edge1.collab.example:5061", weight: 40, enabled: true },
        { uri: "sips:edge2.collab.example:5061", weight: 60, enabled: true },
      ]);
      const aliasPatch = await rest(
        "PATCH",
        `/v1beta1/${name}/aliases/collab-proxies`,
        { displayName: "x" },
        key,
      );
      expect(aliasPatch.status).toBe(400);
      expect(restReason(aliasPatch)).toBe("ALIAS_READ_ONLY");
      expect(
        restReason(await rest("DELETE", `/v1beta1/${name}/aliases/collab-proxies`, undefined, key)),
      ).toBe("ALIAS_READ_ONLY");
      const blocks = await rest(
        "PATCH",
        `/v1beta1/${name}`,
        { cidrBlocks: [{ cidrBlock: "203.0.113.0/24" }] },
        key,
      );
      expect(blocks.status).toBe(400);
      expect(restReason(blocks)).toBe("CIDR_BLOCKS_READ_ONLY");
      expect(
        (
          await rest("POST", `/admin/v1/${name}:setDomainOptional`, {
            domainOptional: true,
            cidrBlocks: [{ cidrBlock: "100.95.0.0/24" }],
          })
        ).status,
      ).toBe(400);

      // what cannot be a DNS TXT value is 400 INVALID_ARGUMENT; a wrong one is recorded, unverified
      const malformed = await rest(
        "POST",
        `/v1beta1/${name}:verifyCollabDirectRouting`,
        { verificationString: "MS=ms123\r\n" },
        key,
      );
      expect(malformed.status).toBe(400);
      expect(malformed.json.error.status).toBe("INVALID_ARGUMENT");
      expect(restFields(malformed)).toEqual(["verification_string"]);
      const wrong = `collab-verification=${"w".repeat(43)}`;
      const pending = await rest(
        "POST",
        `/v1beta1/${name}:verifyCollabDirectRouting`,
        { verificationString: wrong },
        key,
      );
      expect(pending.status).toBe(200);
      expect(pending.json.collabDirectRoutingStatus).toEqual({});
      const record = await rest("GET", `/admin/v1/${name}/collabVerification`);
      expect(record.json).toMatchObject({ sipDomain: name, verificationRecord: wrong });
      expect(record.json.verified).toBeUndefined();

      // the platform's own string (HMAC of the FQDN with the configured secret) verifies at once
      const issued = collabVerificationString(`${id}.${BASE}`, ENV.COLLAB_VERIFICATION_SECRET);
      const verified = await rest(
        "POST",
        `/v1beta1/${name}:verifyCollabDirectRouting`,
        { verificationString: issued },
        key,
      );
      expect(verified.json.collabDirectRoutingStatus).toEqual({ verified: true });
      // the default secret's string is not accepted under another secret
      expect(collabVerificationString(`${id}.${BASE}`, "switchboard-collab-simulator")).not.toBe(issued);

      // gRPC: the operator's hook accepts a recorded string
      const other = await grpc(SipDomains, key).createSipDomain({
        parent: project,
        sipDomainId: newSipDomainId("teams"),
        sipDomain: { type: DomainType.COLLAB_DIRECT_ROUTING },
      });
      const unverified = await grpc(SipDomains, key).verifyCollabDirectRouting({
        sipDomain: other.name,
        verificationString: wrong,
      });
      expect(unverified.collabDirectRoutingStatus?.verified).toBe(false);
      expect(
        (await grpcCode(grpc(SipDomainAdmin, key).acceptCollabVerification({ name: other.name }))).code,
      ).toBe(Code.PermissionDenied);
      const accepted = await rest("POST", `/admin/v1/${other.name}:acceptCollabVerification`, {});
      expect(accepted.status).toBe(200);
      expect(accepted.json).toMatchObject({
        sipDomain: other.name,
        verificationRecord: wrong,
        verified: true,
      });
      expect(
        (await grpc(SipDomains, key).getSipDomain({ name: other.name })).collabDirectRoutingStatus?.verified,
      ).toBe(true);
    });

    it("refuses verification of other types with FAILED_PRECONDITION on both transports", async () => {
      const { project, key } = await owned();
      const id = newSipDomainId("std");
      const name = `${project}/sipDomains/${id}`;
      await rest("POST", `/v1beta1/${project}/sipDomains?sipDomainId=${id}`, {}, key);
      const issued = collabVerificationString(`${id}.${BASE}`, ENV.COLLAB_VERIFICATION_SECRET);
      const reply = await rest(
        "POST",
        `/v1beta1/${name}:verifyCollabDirectRouting`,
        { verificationString: issued },
        key,
      );
      expect(reply.status).toBe(400);
      expect(reply.json.error.status).toBe("FAILED_PRECONDITION");
      expect(restReason(reply)).toBe("NOT_COLLAB_DIRECT_ROUTING");
      const viaGrpc = await grpcCode(
        grpc(SipDomains, key).verifyCollabDirectRouting({ sipDomain: name, verificationString: issued }),
      );
      expect(viaGrpc).toMatchObject({ code: Code.FailedPrecondition, reason: "NOT_COLLAB_DIRECT_ROUTING" });
    });
  });

  describe("Aliases", () => {
    it("are created, listed, updated and deleted over REST and gRPC", async () => {
      const { project, key } = await owned();
      const id = newSipDomainId("al");
      const domain = `${project}/sipDomains/${id}`;
      await rest("POST", `/v1beta1/${project}/sipDomains?sipDomainId=${id}`, {}, key);
      const created = await rest(
        "POST",
        `/v1beta1/${domain}/aliases?aliasId=main`,
        {
          displayName: "PBX pool",
          loadBalancerConfig: {
            endpoints: [
              { uri: "sip:pbx1.example.com", priority: 1, enabled: true },
              { uri: "sip:pbx2.example.com", priority: 1, weight: 30, enabled: true },
            ],
            failoverCallHandlerUris: ["https://app.example.com/failover"],
          },
        },
        key,
      );
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      expect(created.json).toMatchObject({
        name: `${domain}/aliases/main`,
        aliasId: "main",
        loadBalancerConfig: {
          endpoints: [
            { uri: "sip:pbx1.example.com", priority: 1, weight: 10, enabled: true },
            { uri: "sip:pbx2.example.com", priority: 1, weight: 30, enabled: true },
          ],
        },
      });
      const tooMany = await rest(
        "POST",
        `/v1beta1/${domain}/aliases?aliasId=big`,
        {
          loadBalancerConfig: {
            endpoints: Array.from({ length: 11 }, (_, i) => ({ uri: `sip:p${i}.example.com` })),
          },
        },
        key,
      );
      expect(tooMany.status).toBe(400);
      expect(restFields(tooMany)).toEqual(["alias.load_balancer_config.endpoints"]);

      const aliases = grpc(Aliases, key);
      const second = await aliases.createAlias({
        parent: domain,
        aliasId: "backup",
        alias: {
          config: {
            case: "loadBalancerConfig",
            value: { endpoints: [{ uri: "sips:backup.example.com", priority: 65535 }] },
          },
        },
      });
      expect((await aliases.listAliases({ parent: domain })).aliases.map((a) => a.aliasId).sort()).toEqual([
        "backup",
        "main",
      ]);
      const listed = await rest("GET", `/v1beta1/${domain}/aliases`, undefined, key);
      expect(listed.json.aliases.map((a: Json) => a.aliasId).sort()).toEqual(["backup", "main"]);

      const patched = await rest(
        "PATCH",
        `/v1beta1/${domain}/aliases/main?updateMask=displayName`,
        { displayName: "Main pool" },
        key,
      );
      expect(patched.json.displayName).toBe("Main pool");
      const removed = await rest("DELETE", `/v1beta1/${domain}/aliases/main`, undefined, key);
      expect(removed.status).toBe(200);
      expect(removed.json).toEqual({});
      await aliases.deleteAlias({ name: second.name });
      expect((await aliases.listAliases({ parent: domain })).aliases).toEqual([]);
      expect((await grpcCode(aliases.getAlias({ name: second.name }))).code).toBe(Code.NotFound);
    });
  });
});
