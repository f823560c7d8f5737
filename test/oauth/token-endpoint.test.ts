/**
 * Service accounts end to end against a real server, on each database: the
 * admin API issues a key file; assertions signed with it (by `jose`, here a
 * stand-in for any client) are exchanged at POST /oauth2/token for access
 * tokens that work on all six transports, for the scoped service only; bad
 * assertions are refused with the RFC 6749 error each deserves; a disabled
 * or deleted account or key stops its tokens at once; an assertion is
 * accepted once, even by two replicas on one database.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Messages } from "../../gen/enfonica/messaging/v1/messages_pb.js";
import { Unsubscribers } from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { ServiceAccounts } from "../../gen/switchboard/admin/v1/service_accounts_pb.js";
import { type App, build } from "../../src/server.js";
import { allAdapters, type Outcome, type TransportAdapter } from "../e2e/transports.js";
import { TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

// biome-ignore lint/suspicious/noExplicitAny: JSON answers, checked by the assertions
type Json = Record<string, any>;

interface KeyFile {
  type: string;
  project_id: string;
  private_key_id: string;
  private_key: string;
  client_email: string;
  client_id: string;
  token_uri: string;
}

const UNSUBSCRIBERS_SCOPE = "https://messaging.api.example.com/enfonica.messaging.v1.Unsubscribers";

describe.each(testDatabases())("service accounts and POST /oauth2/token on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let replica: App;
  let base: string;
  let replicaBase: string;
  let tokenUrl: string;
  let adapters: TransportAdapter[];
  let counter = 0;
  const newId = (prefix: string) => `${prefix}-${counter++}-${Date.now().toString(36)}`;

  beforeAll(async () => {
    app = await build({ config: testConfig(), db: database.db });
    const address = await app.listen(0, "127.0.0.1");
    base = `http://127.0.0.1:${address.port}`;
    tokenUrl = `${base}/oauth2/token`;
    // A second replica on the same database, told the first one's public token URL.
    replica = await build({
      config: testConfig({ OAUTH_TOKEN_URL: tokenUrl, ROLE: "api" }),
      db: database.db,
    });
    replicaBase = `http://127.0.0.1:${(await replica.listen(0, "127.0.0.1")).port}`;
    adapters = await allAdapters(address.port, [Unsubscribers, Messages, ServiceAccounts]);
  });

  afterAll(async () => {
    for (const a of adapters ?? []) await a.close();
    await replica?.close();
    await app?.close();
  });

  async function call(method: string, path: string, body?: unknown, token = TEST_OPERATOR_TOKEN) {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Json };
  }

  /** A project and an account with `roles/viewer` on it, and a key file. */
  async function setup(): Promise<{ project: string; account: string; keyFile: KeyFile; keyName: string }> {
    const project = newId("sa-p");
    expect((await call("POST", `/admin/v1/projects?projectId=${project}`, {})).status).toBe(200);
    const account = newId("bot");
    const created = await call("POST", `/admin/v1/serviceAccounts?serviceAccountId=${account}`, {
      displayName: "Reporting bot",
      bindings: [{ project: `projects/${project}`, roles: ["roles/viewer"] }],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const key = await call("POST", `/admin/v1/serviceAccounts/${account}/keys`, {});
    expect(key.status, JSON.stringify(key.json)).toBe(200);
    return { project, account, keyFile: JSON.parse(key.json.keyFile) as KeyFile, keyName: key.json.key.name };
  }

  interface AssertionOptions {
    claims?: Json;
    header?: Json;
    key?: KeyObject | Uint8Array;
    iat?: number;
    exp?: number;
  }

  /** An assertion as the official SDKs make it, with changes. */
  function assertion(keyFile: KeyFile, o: AssertionOptions = {}): Promise<string> {
    const iat = o.iat ?? Math.floor(Date.now() / 1000);
    return new SignJWT({
      scope: UNSUBSCRIBERS_SCOPE,
      iss: keyFile.client_email,
      sub: keyFile.client_email,
      aud: tokenUrl,
      iat,
      exp: o.exp ?? iat + 3600,
      ...o.claims,
    })
      .setProtectedHeader({ alg: "RS256", typ: "JWT", kid: keyFile.private_key_id, ...o.header })
      .sign(o.key ?? createPrivateKey(keyFile.private_key));
  }

  async function exchange(
    form: Record<string, string> | string,
    init: { url?: string; method?: string; contentType?: string } = {},
  ): Promise<{ status: number; json: Json; headers: Headers }> {
    const res = await fetch(init.url ?? tokenUrl, {
      method: init.method ?? "POST",
      headers: { "content-type": init.contentType ?? "application/x-www-form-urlencoded" },
      ...(init.method === "GET"
        ? {}
        : { body: typeof form === "string" ? form : new URLSearchParams(form).toString() }),
    });
    return { status: res.status, json: (await res.json()) as Json, headers: res.headers };
  }

  const grant = (a: string) => ({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion: a });

  async function token(keyFile: KeyFile, o: AssertionOptions = {}): Promise<string> {
    const res = await exchange(grant(await assertion(keyFile, o)));
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    return res.json.access_token as string;
  }

  /** ListUnsubscribers of `project` with `bearer` over every transport. */
  async function everywhere(project: string, bearer: string): Promise<Map<string, Outcome>> {
    const out = new Map<string, Outcome>();
    for (const a of adapters) {
      out.set(
        a.name,
        await a.call(Unsubscribers, "ListUnsubscribers", { parent: `projects/${project}` }, bearer),
      );
    }
    return out;
  }

  function refusedEverywhere(outcomes: Map<string, Outcome>, code: string, reason: string) {
    for (const [name, o] of outcomes) {
      expect(o.ok, name).toBe(false);
      if (!o.ok) expect({ name, code: o.code, reason: o.reason }).toEqual({ name, code, reason });
    }
  }

  it("issues a Google-style key file once and keeps only the public key", async () => {
    const { project, account, keyFile, keyName } = await setup();
    expect(keyFile).toEqual({
      type: "service_account",
      project_id: project,
      private_key_id: keyName.split("/").at(-1),
      private_key: expect.stringMatching(/^-----BEGIN PRIVATE KEY-----\n[\s\S]+-----END PRIVATE KEY-----\n$/),
      client_email: `${account}@serviceaccounts.switchboard.invalid`,
      client_id: account,
      token_uri: tokenUrl,
    });
    expect(keyFile.private_key_id).toMatch(/^[0-9a-f]{40}$/);
    const stored = await call("GET", `/admin/v1/${keyName}`);
    expect(stored.json).toMatchObject({ name: keyName, keyAlgorithm: "RSA_2048" });
    expect(stored.json.disabled).toBeUndefined(); // false: proto3 JSON leaves it out
    expect(JSON.stringify(stored.json)).not.toContain("PRIVATE KEY");
    const derived = createPublicKey(createPrivateKey(keyFile.private_key)).export({
      type: "spki",
      format: "pem",
    });
    expect(stored.json.publicKey).toBe(derived);
    const list = await call("GET", `/admin/v1/serviceAccounts/${account}/keys`);
    expect(list.json.keys.map((k: Json) => k.name)).toEqual([keyName]);
    expect(JSON.stringify(list.json)).not.toContain("PRIVATE KEY");
    const got = await call("GET", `/admin/v1/serviceAccounts/${account}`);
    expect(got.json).toMatchObject({
      name: `serviceAccounts/${account}`,
      displayName: "Reporting bot",
      email: keyFile.client_email,
      bindings: [{ project: `projects/${project}`, roles: ["roles/viewer"] }],
    });
    const accounts = await call("GET", "/admin/v1/serviceAccounts?pageSize=100");
    expect(accounts.json.serviceAccounts.map((a: Json) => a.name)).toContain(`serviceAccounts/${account}`);
  });

  it("refuses bad admin input naming the field, and changes nothing", async () => {
    const project = newId("sa-p");
    await call("POST", `/admin/v1/projects?projectId=${project}`, {});
    const noBindings = await call("POST", "/admin/v1/serviceAccounts?serviceAccountId=lonely", {});
    expect(noBindings.status).toBe(400);
    expect(JSON.stringify(noBindings.json)).toContain("service_account.bindings");
    const badId = await call("POST", "/admin/v1/serviceAccounts?serviceAccountId=Not_Valid", {
      bindings: [{ project: `projects/${project}`, roles: ["roles/viewer"] }],
    });
    expect(badId.status).toBe(400);
    expect(JSON.stringify(badId.json)).toContain("service_account_id");
    const unknownRole = await call("POST", "/admin/v1/serviceAccounts?serviceAccountId=roleless", {
      bindings: [{ project: `projects/${project}`, roles: ["roles/nobody"] }],
    });
    expect(unknownRole.status).toBe(400);
    expect(JSON.stringify(unknownRole.json)).toContain("service_account.bindings[0].roles[0]");
    expect((await call("GET", "/admin/v1/serviceAccounts/lonely")).status).toBe(404);
    expect((await call("GET", "/admin/v1/serviceAccounts/roleless")).status).toBe(404);
    const id = newId("twice");
    const body = { bindings: [{ project: `projects/${project}`, roles: ["roles/viewer"] }] };
    expect((await call("POST", `/admin/v1/serviceAccounts?serviceAccountId=${id}`, body)).status).toBe(200);
    const again = await call("POST", `/admin/v1/serviceAccounts?serviceAccountId=${id}`, body);
    expect(again.status).toBe(409);
    expect((await call("POST", "/admin/v1/serviceAccounts/nobody-here/keys", {})).status).toBe(404);
  });

  it("keeps the admin API to the operator", async () => {
    const { project, keyFile } = await setup();
    const bearer = await token(keyFile);
    const apiKey = await call("POST", "/admin/v1/apiKeys", {
      bindings: [{ project: `projects/${project}`, roles: ["roles/owner"] }],
    });
    for (const credential of [bearer, apiKey.json.secret as string]) {
      expect((await call("GET", "/admin/v1/serviceAccounts", undefined, credential)).status).toBe(403);
    }
  });

  it("exchanges an assertion for a Bearer token that works on every transport", async () => {
    const { project, keyFile } = await setup();
    const res = await exchange(grant(await assertion(keyFile)));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      access_token: expect.stringMatching(/^sbat_[a-z0-9]+_[A-Za-z0-9_-]{43}$/),
      token_type: "Bearer",
      expires_in: 3600,
    });
    expect(res.headers.get("cache-control")).toBe("no-store");
    for (const [name, o] of await everywhere(project, res.json.access_token)) {
      expect({ name, ok: o.ok }).toEqual({ name, ok: true });
    }
  });

  it("limits a token to its scope's service and to the account's permissions", async () => {
    const { project, keyFile } = await setup();
    const bearer = await token(keyFile);
    // Messages is not in the scope: refused, even with a permission the account has.
    // (the e2e REST adapter knows Unsubscribers' routes only: REST is checked below)
    for (const a of adapters.filter((x) => x.name !== "rest")) {
      const o = await a.call(Messages, "ListMessages", { parent: `projects/${project}` }, bearer);
      expect(o.ok ? undefined : [a.name, o.code, o.reason]).toEqual([
        a.name,
        "PERMISSION_DENIED",
        "ACCESS_TOKEN_SCOPE",
      ]);
    }
    const rest = await call("GET", `/v1/projects/${project}/messages`, undefined, bearer);
    expect(rest.status).toBe(403);
    expect(JSON.stringify(rest.json)).toContain("ACCESS_TOKEN_SCOPE");
    // In scope but beyond roles/viewer: refused.
    const create = await call(
      "POST",
      `/v1/projects/${project}/unsubscribers`,
      { phone: "+61491570156" },
      bearer,
    );
    expect(create.status).toBe(403);
    // A scope of two services gives both.
    const both = await token(keyFile, {
      claims: {
        scope: `${UNSUBSCRIBERS_SCOPE} https://messaging.api.example.com/enfonica.messaging.v1.Messages`,
      },
    });
    expect((await call("GET", `/v1/projects/${project}/messages`, undefined, both)).status).toBe(200);
    // Another project: refused.
    const other = newId("sa-p");
    await call("POST", `/admin/v1/projects?projectId=${other}`, {});
    expect((await call("GET", `/v1/projects/${other}/unsubscribers`, undefined, bearer)).status).toBe(403);
  });

  it("refuses each bad assertion with invalid_grant and says why", async () => {
    const { keyFile, account } = await setup();
    const now = Math.floor(Date.now() / 1000);
    const stranger = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
    const cases: Array<[string, () => Promise<string>, RegExp]> = [
      ["wrong aud", () => assertion(keyFile, { claims: { aud: "https://oauth2.example.com/token" } }), /aud/],
      ["expired", () => assertion(keyFile, { iat: now - 7200, exp: now - 3600 }), /expired/],
      ["lives over an hour", () => assertion(keyFile, { iat: now, exp: now + 3601 }), /iat \+ 3600/],
      ["issued in the future", () => assertion(keyFile, { iat: now + 600, exp: now + 1200 }), /future/],
      ["bad signature", () => assertion(keyFile, { key: stranger }), /signature/],
      ["unknown kid", () => assertion(keyFile, { header: { kid: "0".repeat(40) } }), /kid/],
      ["sub not iss", () => assertion(keyFile, { claims: { sub: "someone@example.com" } }), /sub/],
      [
        "iss of another account",
        () => assertion(keyFile, { claims: { iss: "other@serviceaccounts.switchboard.invalid" } }),
        /kid/,
      ],
      ["no exp", () => assertion(keyFile, { claims: { exp: undefined } }), /exp/],
      [
        "HS256 (alg confusion with the public key)",
        async () =>
          new SignJWT({
            iss: keyFile.client_email,
            sub: keyFile.client_email,
            aud: tokenUrl,
            scope: UNSUBSCRIBERS_SCOPE,
          })
            .setProtectedHeader({ alg: "HS256", kid: keyFile.private_key_id })
            .setIssuedAt()
            .setExpirationTime("1h")
            .sign(
              new TextEncoder().encode(
                createPublicKey(createPrivateKey(keyFile.private_key)).export({
                  type: "spki",
                  format: "pem",
                }) as string,
              ),
            ),
        /RS256/,
      ],
      [
        "RS512",
        async () =>
          new SignJWT({
            iss: keyFile.client_email,
            sub: keyFile.client_email,
            aud: tokenUrl,
            scope: UNSUBSCRIBERS_SCOPE,
          })
            .setProtectedHeader({ alg: "RS512", kid: keyFile.private_key_id })
            .setIssuedAt()
            .setExpirationTime("1h")
            .sign(createPrivateKey(keyFile.private_key)),
        /RS256/,
      ],
      [
        "alg none",
        async () => {
          const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
          return `${enc({ alg: "none", kid: keyFile.private_key_id })}.${enc({
            iss: keyFile.client_email,
            sub: keyFile.client_email,
            aud: tokenUrl,
            iat: now,
            exp: now + 3600,
            scope: UNSUBSCRIBERS_SCOPE,
          })}.`;
        },
        /RS256/,
      ],
      ["not a JWT", async () => "not-a-jwt", /JWT/],
    ];
    for (const [name, make, why] of cases) {
      const res = await exchange(grant(await make()));
      expect({ name, status: res.status, error: res.json.error }).toEqual({
        name,
        status: 400,
        error: "invalid_grant",
      });
      expect(res.json.error_description, name).toMatch(why);
    }
    expect(account).toBeTruthy();
  });

  it("answers the other RFC 6749 errors", async () => {
    const { keyFile } = await setup();
    const cases: Array<[string, () => Promise<{ status: number; json: Json }>, number, string]> = [
      [
        "no scope",
        async () => exchange(grant(await assertion(keyFile, { claims: { scope: undefined } }))),
        400,
        "invalid_scope",
      ],
      [
        "a scope naming no service",
        async () =>
          exchange(
            grant(await assertion(keyFile, { claims: { scope: "https://x.example/auth/messaging" } })),
          ),
        400,
        "invalid_scope",
      ],
      [
        "another grant type",
        async () => exchange({ grant_type: "client_credentials", assertion: await assertion(keyFile) }),
        400,
        "unsupported_grant_type",
      ],
      ["no grant type", async () => exchange({ assertion: "x" }), 400, "invalid_request"],
      [
        "no assertion",
        async () => exchange({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer" }),
        400,
        "invalid_request",
      ],
      [
        "an assertion twice in the form",
        async () => {
          const a = await assertion(keyFile);
          return exchange(`${new URLSearchParams(grant(a))}&assertion=${a}`);
        },
        400,
        "invalid_request",
      ],
      [
        "a JSON body",
        async () =>
          exchange(JSON.stringify(grant(await assertion(keyFile))), { contentType: "application/json" }),
        400,
        "invalid_request",
      ],
      ["GET", async () => exchange({}, { method: "GET" }), 405, "invalid_request"],
      ["a body over 64 KiB", async () => exchange({ assertion: "x".repeat(70_000) }), 413, "invalid_request"],
    ];
    for (const [name, run, status, error] of cases) {
      const res = await run();
      expect({ name, status: res.status, error: res.json.error }).toEqual({ name, status, error });
      expect(typeof res.json.error_description, name).toBe("string");
    }
  });

  it("accepts an assertion's jti once: a replay is refused, on another replica too", async () => {
    const { keyFile } = await setup();
    const a = await assertion(keyFile, { claims: { jti: "once-only" } });
    // Six at once, half to each replica (on PostgreSQL, each with its own pool): one wins.
    const answers = await Promise.all(
      [0, 1, 2, 3, 4, 5].map((i) => exchange(grant(a), i % 2 ? { url: `${replicaBase}/oauth2/token` } : {})),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([200, 400, 400, 400, 400, 400]);
    expect(answers.filter((r) => r.status === 400).map((r) => r.json.error)).toEqual(
      Array(5).fill("invalid_grant"),
    );
    const again = await exchange(grant(a), { url: `${replicaBase}/oauth2/token` });
    expect(again.status).toBe(400);
    expect(again.json.error_description).toMatch(/jti was already used/);
    // The same jti in another assertion (other claims) is a replay too; a new jti is fine.
    const sameJti = await assertion(keyFile, {
      claims: { jti: "once-only" },
      exp: Math.floor(Date.now() / 1000) + 1800,
    });
    expect(sameJti).not.toBe(a);
    expect((await exchange(grant(sameJti))).status).toBe(400);
    expect((await exchange(grant(await assertion(keyFile, { claims: { jti: "another" } })))).status).toBe(
      200,
    );
    // A jti is the account's: another account may use the same one.
    const other = await setup();
    expect(
      (await exchange(grant(await assertion(other.keyFile, { claims: { jti: "once-only" } })))).status,
    ).toBe(200);
    for (const jti of ["", 42]) {
      const res = await exchange(grant(await assertion(keyFile, { claims: { jti } })));
      expect(res.status).toBe(400);
      expect(res.json.error_description).toMatch(/jti must be a non-empty string/);
    }
  });

  it("exchanges an assertion without jti as often as it is sent, each time for a new token (as the SDKs need)", async () => {
    const { keyFile } = await setup();
    // What two SDK clients on one key file sign in the same second: the very same bytes.
    const a = await assertion(keyFile);
    const answers = await Promise.all(
      [0, 1, 2].map((i) => exchange(grant(a), i % 2 ? { url: `${replicaBase}/oauth2/token` } : {})),
    );
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    const tokens = answers.map((r) => r.json.access_token);
    expect(new Set(tokens).size).toBe(3);
  });

  it("tries the account's keys when the assertion has no kid", async () => {
    const { project, account, keyFile } = await setup();
    // A second key: the first must still be found without kid.
    expect((await call("POST", `/admin/v1/serviceAccounts/${account}/keys`, {})).status).toBe(200);
    const bearer = await token(keyFile, { header: { kid: undefined } });
    expect((await call("GET", `/v1/projects/${project}/unsubscribers`, undefined, bearer)).status).toBe(200);
  });

  it("stops a disabled account's tokens at once, and gives it no new ones until enabled", async () => {
    const { project, account, keyFile } = await setup();
    const bearer = await token(keyFile);
    const patch = (disabled: boolean) =>
      call("PATCH", `/admin/v1/serviceAccounts/${account}?updateMask=disabled`, { disabled });
    expect((await patch(true)).json.disabled).toBe(true);
    refusedEverywhere(await everywhere(project, bearer), "UNAUTHENTICATED", "SERVICE_ACCOUNT_DISABLED");
    const refused = await exchange(grant(await assertion(keyFile)));
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({
      error: "invalid_grant",
      error_description: expect.stringMatching(/disabled/),
    });
    await patch(false);
    expect((await call("GET", `/v1/projects/${project}/unsubscribers`, undefined, bearer)).status).toBe(200);
  });

  it("stops a disabled key's tokens at once", async () => {
    const { project, keyFile, keyName } = await setup();
    const bearer = await token(keyFile);
    const disabled = await call("PATCH", `/admin/v1/${keyName}`, { disabled: true });
    expect(disabled.json.disabled).toBe(true);
    refusedEverywhere(await everywhere(project, bearer), "UNAUTHENTICATED", "SERVICE_ACCOUNT_KEY_DISABLED");
    const refused = await exchange(grant(await assertion(keyFile)));
    expect(refused.json.error).toBe("invalid_grant");
  });

  it("stops the tokens of a deleted key, and of a deleted account, at once", async () => {
    const { project, account, keyFile, keyName } = await setup();
    const byKey = await token(keyFile);
    expect((await call("DELETE", `/admin/v1/${keyName}`)).status).toBe(200);
    refusedEverywhere(await everywhere(project, byKey), "UNAUTHENTICATED", "CREDENTIALS_INVALID");
    expect((await exchange(grant(await assertion(keyFile)))).json.error).toBe("invalid_grant");

    const key = await call("POST", `/admin/v1/serviceAccounts/${account}/keys`, {});
    const second = JSON.parse(key.json.keyFile) as KeyFile;
    const byAccount = await token(second);
    expect((await call("GET", `/v1/projects/${project}/unsubscribers`, undefined, byAccount)).status).toBe(
      200,
    );
    expect((await call("DELETE", `/admin/v1/serviceAccounts/${account}`)).status).toBe(200);
    refusedEverywhere(await everywhere(project, byAccount), "UNAUTHENTICATED", "CREDENTIALS_INVALID");
    expect((await call("GET", `/admin/v1/serviceAccounts/${account}`)).status).toBe(404);
  });

  it("refuses bad admin input with INVALID_ARGUMENT naming the field on gRPC, gRPC-Web and Connect", async () => {
    const project = newId("sa-p");
    await call("POST", `/admin/v1/projects?projectId=${project}`, {});
    const cases: Array<[Json, string]> = [
      [
        {
          serviceAccountId: "Not_Valid",
          serviceAccount: { bindings: [{ project: `projects/${project}`, roles: ["roles/viewer"] }] },
        },
        "service_account_id",
      ],
      [{ serviceAccountId: "no-bindings", serviceAccount: {} }, "service_account.bindings"],
      [
        {
          serviceAccountId: "ghost-project",
          serviceAccount: { bindings: [{ project: "projects/nowhere", roles: ["roles/viewer"] }] },
        },
        "service_account.bindings[0].project",
      ],
    ];
    for (const a of adapters.filter((x) => x.name !== "rest")) {
      for (const [request, field] of cases) {
        const o = await a.call(ServiceAccounts, "CreateServiceAccount", request, TEST_OPERATOR_TOKEN);
        expect(o.ok ? undefined : [a.name, o.code, o.fieldViolations]).toEqual([
          a.name,
          "INVALID_ARGUMENT",
          [field],
        ]);
      }
    }
    expect((await call("GET", "/admin/v1/serviceAccounts/no-bindings")).status).toBe(404);
  });

  it("refuses an access token once it has expired", async () => {
    const clock = new TestClock(new Date());
    const timed = await build({
      config: testConfig({ OAUTH_TOKEN_URL: tokenUrl, OAUTH_ACCESS_TOKEN_TTL_SECONDS: "60", ROLE: "api" }),
      db: database.db,
      clock,
    });
    try {
      const timedBase = `http://127.0.0.1:${(await timed.listen(0, "127.0.0.1")).port}`;
      const { project, keyFile } = await setup();
      const res = await exchange(
        grant(await assertion(keyFile, { iat: Math.floor(clock.now().getTime() / 1000) })),
        {
          url: `${timedBase}/oauth2/token`,
        },
      );
      expect(res.json.expires_in).toBe(60);
      const bearer = res.json.access_token as string;
      const list = () =>
        fetch(`${timedBase}/v1/projects/${project}/unsubscribers`, {
          headers: { authorization: `Bearer ${bearer}` },
        });
      expect((await list()).status).toBe(200);
      clock.advance(61_000);
      const refused = await list();
      expect(refused.status).toBe(401);
      expect(JSON.stringify(await refused.json())).toContain("ACCESS_TOKEN_EXPIRED");
    } finally {
      await timed.close();
    }
  });
});
