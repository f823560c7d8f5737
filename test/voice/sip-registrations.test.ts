/**
 * The registrar's rules (RFC 3261 section 10.3) over REGISTER bindings in
 * the database, on every test backend: adding, refreshing and removing
 * bindings, `Contact: *`, Call-ID/CSeq ordering, Min-Expires (423), the
 * longest expiry, the binding limit, disabled and deleted users and domains,
 * expiry and purging, and two replicas registering the same user at once.
 */
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { SipDomains } from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipUsers } from "../../gen/switchboard/voice/v1/sip_users_pb.js";
import { sipRegistrations } from "../../src/db/schema/index.js";
import { VoiceStore } from "../../src/voice/sip-domains/repository.js";
import { type RegisterRequest, Registrar } from "../../src/voice/sip-registrations/registrar.js";
import { createTestClient, newProject } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { newSipDomainId } from "./support.js";

describe.each(testDatabases())("Registrar on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock("2026-09-01T00:00:00.000Z");
  let registrar: Registrar;
  let users: ReturnType<typeof createTestClient<typeof SipUsers>>;
  let domains: ReturnType<typeof createTestClient<typeof SipDomains>>;

  beforeAll(() => {
    registrar = new Registrar(new VoiceStore(database.db), clock, {
      minExpires: 60,
      maxExpires: 3600,
      defaultExpires: 1800,
      maxBindings: 3,
    });
    users = createTestClient(SipUsers, database.db, clock);
    domains = createTestClient(SipDomains, database.db, clock);
  });

  /** A domain with user `alice` (id `alice`); returns the domain's id and name. */
  async function aliceDomain(): Promise<{ sipDomainId: string; domain: string; user: string }> {
    const d = await domains.createSipDomain({
      parent: await newProject(database.db),
      sipDomainId: newSipDomainId("rg"),
      sipDomain: { allowRegister: true },
    });
    const u = await users.createSipUser({
      parent: d.name,
      sipUserId: "alice",
      sipUser: { username: "alice", password: "password1" },
    });
    return { sipDomainId: d.sipDomainId, domain: d.name, user: u.name };
  }

  function request(sipDomainId: string, over: Partial<RegisterRequest> = {}): RegisterRequest {
    return {
      sipDomainId,
      userId: "alice",
      callId: "call-1@phone",
      cseq: 1,
      wildcard: false,
      contacts: [{ uri: "sip:alice@192.0.2.10:5060" }],
      sourceAddress: "192.0.2.10:5060",
      sourceTransport: "UDP",
      replicaId: "replica-a",
      userAgent: "Test Phone 1.0",
      ...over,
    };
  }

  const uris = (r: Awaited<ReturnType<Registrar["register"]>>) =>
    r.status === 200 ? r.bindings.map((b) => b.contactUri) : r;

  it("binds a contact for the default expiry and returns it with every stored field", async () => {
    const { sipDomainId } = await aliceDomain();
    const result = await registrar.register(
      request(sipDomainId, { contacts: [{ uri: "sip:alice@192.0.2.10:5060", instanceId: "<urn:uuid:1>" }] }),
    );
    expect(result).toEqual({
      status: 200,
      bindings: [
        {
          contactUri: "sip:alice@192.0.2.10:5060",
          expiresAt: new Date("2026-09-01T00:30:00.000Z"),
          expiresIn: 1800,
          sourceAddress: "192.0.2.10:5060",
          sourceTransport: "UDP",
          callId: "call-1@phone",
          cseq: 1,
          instanceId: "<urn:uuid:1>",
          replicaId: "replica-a",
          userAgent: "Test Phone 1.0",
        },
      ],
    });
    expect((await registrar.bindings(sipDomainId, "alice")).map((b) => b.contactUri)).toEqual([
      "sip:alice@192.0.2.10:5060",
    ]);
  });

  it("takes the contact's expires over the Expires header, and shortens past the longest", async () => {
    const { sipDomainId } = await aliceDomain();
    const result = await registrar.register(
      request(sipDomainId, {
        expires: 120,
        contacts: [
          { uri: "sip:a@192.0.2.1" },
          { uri: "sip:b@192.0.2.2", expires: 600 },
          { uri: "sip:c@192.0.2.3", expires: 86_400 },
        ],
      }),
    );
    expect(result.status === 200 && result.bindings.map((b) => [b.contactUri, b.expiresIn])).toEqual([
      ["sip:a@192.0.2.1", 120],
      ["sip:b@192.0.2.2", 600],
      ["sip:c@192.0.2.3", 3600],
    ]);
  });

  it("answers a REGISTER without contacts with the live bindings (a query)", async () => {
    const { sipDomainId } = await aliceDomain();
    await registrar.register(request(sipDomainId));
    clock.advance(100_000);
    const query = await registrar.register(request(sipDomainId, { contacts: [], cseq: 2 }));
    expect(query.status === 200 && query.bindings.map((b) => [b.contactUri, b.expiresIn])).toEqual([
      ["sip:alice@192.0.2.10:5060", 1700],
    ]);
  });

  it("refuses an expiry below Min-Expires with 423 and changes nothing", async () => {
    const { sipDomainId } = await aliceDomain();
    expect(
      await registrar.register(
        request(sipDomainId, {
          contacts: [{ uri: "sip:ok@192.0.2.1" }, { uri: "sip:brief@192.0.2.2", expires: 59 }],
        }),
      ),
    ).toEqual({ status: 423, minExpires: 60 });
    expect(await registrar.register(request(sipDomainId, { expires: 30 }))).toEqual({
      status: 423,
      minExpires: 60,
    });
    expect(await registrar.bindings(sipDomainId, "alice")).toEqual([]);
  });

  it("refreshes a binding from the same Call-ID only with a higher CSeq (500 otherwise, nothing changed)", async () => {
    const { sipDomainId } = await aliceDomain();
    await registrar.register(request(sipDomainId, { cseq: 5, expires: 600 }));
    for (const cseq of [5, 4]) {
      const stale = await registrar.register(
        request(sipDomainId, {
          cseq,
          expires: 900,
          contacts: [{ uri: "sip:alice@192.0.2.10:5060" }, { uri: "sip:new@192.0.2.99" }],
        }),
      );
      expect(stale).toMatchObject({ status: 500, reason: "CSEQ_OUT_OF_ORDER" });
    }
    expect((await registrar.bindings(sipDomainId, "alice")).map((b) => [b.contactUri, b.expiresIn])).toEqual([
      ["sip:alice@192.0.2.10:5060", 600],
    ]);
    clock.advance(10_000);
    const refreshed = await registrar.register(
      request(sipDomainId, {
        cseq: 6,
        expires: 900,
        sourceAddress: "198.51.100.7:40000",
        replicaId: "replica-b",
      }),
    );
    expect(refreshed.status === 200 && refreshed.bindings[0]).toMatchObject({
      expiresIn: 900,
      cseq: 6,
      sourceAddress: "198.51.100.7:40000",
      replicaId: "replica-b",
    });
  });

  it("refreshes one binding of several: every live binding is answered, the others unchanged, its create time kept", async () => {
    const { sipDomainId } = await aliceDomain();
    await registrar.register(
      request(sipDomainId, { callId: "desk", contacts: [{ uri: "sip:desk@192.0.2.1" }] }),
    );
    await registrar.register(
      request(sipDomainId, { callId: "mobile", contacts: [{ uri: "sip:mobile@192.0.2.2" }] }),
    );
    const [created] = await database.db
      .select()
      .from(sipRegistrations)
      .where(eq(sipRegistrations.contactUri, "sip:mobile@192.0.2.2"));
    clock.advance(30_000);
    const refreshed = await registrar.register(
      request(sipDomainId, {
        callId: "mobile",
        cseq: 2,
        expires: 120,
        contacts: [{ uri: "sip:mobile@192.0.2.2", instanceId: "<urn:uuid:m>" }],
        userAgent: "Mobile 2.0",
      }),
    );
    expect(
      refreshed.status === 200 && refreshed.bindings.map((b) => [b.contactUri, b.cseq, b.expiresIn]),
    ).toEqual([
      ["sip:desk@192.0.2.1", 1, 1770],
      ["sip:mobile@192.0.2.2", 2, 120],
    ]);
    const [after] = await database.db
      .select()
      .from(sipRegistrations)
      .where(eq(sipRegistrations.contactUri, "sip:mobile@192.0.2.2"));
    expect(after).toMatchObject({
      cseq: 2,
      instanceId: "<urn:uuid:m>",
      userAgent: "Mobile 2.0",
      createTime: created!.createTime,
      updateTime: clock.now(),
      expiresAt: new Date(clock.now().getTime() + 120_000),
    });
  });

  it("does not refresh a disabled user's binding (403) and renews an expired one as new", async () => {
    const { sipDomainId, user } = await aliceDomain();
    await registrar.register(request(sipDomainId, { cseq: 1, expires: 60 }));
    clock.advance(61_000);
    expect(await registrar.register(request(sipDomainId, { cseq: 2, expires: 60 }))).toMatchObject({
      status: 200,
    });
    const [renewed] = await database.db
      .select()
      .from(sipRegistrations)
      .where(eq(sipRegistrations.sipDomainId, sipDomainId));
    expect(renewed!.createTime).toEqual(clock.now());
    await users.updateSipUser({ sipUser: { name: user, disabled: true } });
    expect(await registrar.register(request(sipDomainId, { cseq: 3, expires: 60 }))).toMatchObject({
      status: 403,
      reason: "USER_DISABLED",
    });
    const [kept] = await database.db
      .select()
      .from(sipRegistrations)
      .where(eq(sipRegistrations.sipDomainId, sipDomainId));
    expect(kept!.cseq).toBe(2);
  });

  it("lets another Call-ID change a binding whatever its CSeq (a rebooted phone)", async () => {
    const { sipDomainId } = await aliceDomain();
    await registrar.register(request(sipDomainId, { cseq: 100 }));
    const rebooted = await registrar.register(
      request(sipDomainId, { callId: "call-2@phone", cseq: 1, expires: 300 }),
    );
    expect(rebooted.status === 200 && rebooted.bindings.map((b) => [b.callId, b.cseq, b.expiresIn])).toEqual([
      ["call-2@phone", 1, 300],
    ]);
  });

  it("removes one binding with expires 0, and all with Contact: * and Expires: 0", async () => {
    const { sipDomainId } = await aliceDomain();
    await registrar.register(
      request(sipDomainId, { contacts: [{ uri: "sip:a@192.0.2.1" }, { uri: "sip:b@192.0.2.2" }] }),
    );
    const one = await registrar.register(
      request(sipDomainId, { cseq: 2, contacts: [{ uri: "sip:a@192.0.2.1", expires: 0 }] }),
    );
    expect(uris(one)).toEqual(["sip:b@192.0.2.2"]);
    // Removing a contact that is not bound is fine.
    expect(
      uris(
        await registrar.register(
          request(sipDomainId, { cseq: 3, expires: 0, contacts: [{ uri: "sip:zz@x" }] }),
        ),
      ),
    ).toEqual(["sip:b@192.0.2.2"]);
    const all = await registrar.register(
      request(sipDomainId, { cseq: 4, wildcard: true, contacts: [], expires: 0 }),
    );
    expect(all).toEqual({ status: 200, bindings: [] });
    expect(await registrar.bindings(sipDomainId, "alice")).toEqual([]);
  });

  it("refuses * with other contacts or without Expires: 0 (400), and a stale * (500)", async () => {
    const { sipDomainId } = await aliceDomain();
    await registrar.register(request(sipDomainId, { cseq: 10 }));
    for (const bad of [
      { wildcard: true, contacts: [], expires: 60 },
      { wildcard: true, contacts: [] },
      { wildcard: true, contacts: [{ uri: "sip:a@192.0.2.1" }], expires: 0 },
    ]) {
      expect(await registrar.register(request(sipDomainId, { cseq: 11, ...bad }))).toMatchObject({
        status: 400,
        reason: "INVALID_WILDCARD",
      });
    }
    expect(
      await registrar.register(request(sipDomainId, { cseq: 9, wildcard: true, contacts: [], expires: 0 })),
    ).toMatchObject({ status: 500, reason: "CSEQ_OUT_OF_ORDER" });
    expect(await registrar.bindings(sipDomainId, "alice")).toHaveLength(1);
  });

  it("refuses malformed CSeq and expiry values with 400", async () => {
    const { sipDomainId } = await aliceDomain();
    for (const [over, reason] of [
      [{ cseq: -1 }, "INVALID_CSEQ"],
      [{ cseq: 2 ** 32 }, "INVALID_CSEQ"],
      [{ cseq: 1.5 }, "INVALID_CSEQ"],
      [{ expires: -5 }, "INVALID_EXPIRES"],
      [{ contacts: [{ uri: "sip:a@b", expires: 2 ** 32 }] }, "INVALID_EXPIRES"],
    ] as [Partial<RegisterRequest>, string][]) {
      expect(await registrar.register(request(sipDomainId, over))).toMatchObject({ status: 400, reason });
    }
  });

  it("keeps a user to maxBindings live contacts (403, nothing changed)", async () => {
    const { sipDomainId } = await aliceDomain();
    const contacts = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ uri: `sip:d${i}@192.0.2.${i + 1}` }));
    expect(uris(await registrar.register(request(sipDomainId, { contacts: contacts(3) })))).toHaveLength(3);
    expect(
      await registrar.register(
        request(sipDomainId, { cseq: 2, contacts: [{ uri: "sip:fourth@192.0.2.50" }] }),
      ),
    ).toMatchObject({ status: 403, reason: "TOO_MANY_BINDINGS" });
    expect(await registrar.bindings(sipDomainId, "alice")).toHaveLength(3);
    // Replacing one in the same request fits.
    const swapped = await registrar.register(
      request(sipDomainId, {
        cseq: 3,
        contacts: [{ uri: "sip:d0@192.0.2.1", expires: 0 }, { uri: "sip:fourth@192.0.2.50" }],
      }),
    );
    expect(uris(swapped)).toEqual(["sip:d1@192.0.2.2", "sip:d2@192.0.2.3", "sip:fourth@192.0.2.50"]);
  });

  it("forgets expired bindings: never listed, replaced as absent, purged", async () => {
    const { sipDomainId } = await aliceDomain();
    await registrar.register(request(sipDomainId, { cseq: 50, expires: 60 }));
    clock.advance(60_000);
    expect(await registrar.bindings(sipDomainId, "alice")).toEqual([]);
    // The same Call-ID with a lower CSeq is fine once the binding is dead.
    expect(uris(await registrar.register(request(sipDomainId, { cseq: 1, expires: 60 })))).toEqual([
      "sip:alice@192.0.2.10:5060",
    ]);
    clock.advance(61_000);
    const purged = await registrar.purgeExpired();
    expect(purged).toBeGreaterThanOrEqual(1);
    const left = await database.db
      .select()
      .from(sipRegistrations)
      .where(eq(sipRegistrations.sipDomainId, sipDomainId));
    expect(left).toEqual([]);
  });

  it("refuses disabled (403) and unknown (404) users; a disabled user's bindings are not used", async () => {
    const { sipDomainId, user } = await aliceDomain();
    await registrar.register(request(sipDomainId));
    await users.updateSipUser({ sipUser: { name: user, disabled: true } });
    expect(await registrar.bindings(sipDomainId, "alice")).toEqual([]);
    expect(await registrar.register(request(sipDomainId, { cseq: 2 }))).toMatchObject({
      status: 403,
      reason: "USER_DISABLED",
    });
    expect(await registrar.register(request(sipDomainId, { userId: "nobody" }))).toMatchObject({
      status: 404,
      reason: "USER_NOT_FOUND",
    });
  });

  it("drops a user's bindings with the user, and a domain's with the domain", async () => {
    const a = await aliceDomain();
    await registrar.register(request(a.sipDomainId));
    await users.deleteSipUser({ name: a.user });
    const b = await aliceDomain();
    await registrar.register(request(b.sipDomainId));
    await domains.deleteSipDomain({ name: b.domain });
    for (const id of [a.sipDomainId, b.sipDomainId]) {
      expect(
        await database.db.select().from(sipRegistrations).where(eq(sipRegistrations.sipDomainId, id)),
      ).toEqual([]);
    }
  });

  it("applies concurrent REGISTERs of one user from two replicas one after the other", async () => {
    const { sipDomainId } = await aliceDomain();
    const store = new VoiceStore(database.db);
    const replicaB = new Registrar(store, clock, registrar.policy);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 === 0 ? registrar : replicaB).register(
          request(sipDomainId, {
            callId: `phone-${i}`,
            contacts: [{ uri: `sip:p${i}@192.0.2.${i + 1}` }],
          }),
        ),
      ),
    );
    // Three fit; each later one finds three and is refused: never more than three.
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    expect(results.filter((r) => r.status === 403)).toHaveLength(3);
    expect(await registrar.bindings(sipDomainId, "alice")).toHaveLength(3);
  });
});
