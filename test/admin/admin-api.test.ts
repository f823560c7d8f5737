/**
 * The admin API over its fixed REST surface (operator tools rely on it), and
 * what API keys do once created: bindings, disabling and deleting take effect
 * at once; secrets never come back.
 */
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, build } from "../../src/server.js";
import { TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

/** A response body, read deep in assertions (a wrong path fails the assertion it is in). */
// biome-ignore lint/suspicious/noExplicitAny: the assertions are the type check here
type JsonBody = Record<string, any>;

describe.each(testDatabases())("admin API on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let base: string;
  const logLines: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        logLines.push(String(chunk));
        done();
      },
    });
    app = await build({ config: testConfig(), db: database.db, log: pino({ level: "trace" }, sink) });
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
    token: string | undefined = TEST_OPERATOR_TOKEN,
  ): Promise<{ status: number; json: JsonBody }> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as JsonBody };
  }

  let counter = 0;
  const newId = () => `adm-${backend.name}-${Date.now().toString(36)}-${counter++}`;

  describe("projects", () => {
    it("creates, gets, lists and deletes a project through the fixed REST paths", async () => {
      const id = newId();
      const created = await call("POST", `/admin/v1/projects?projectId=${id}`, { displayName: "Acme" });
      expect(created.status).toBe(200);
      expect(created.json).toMatchObject({ name: `projects/${id}`, displayName: "Acme" });
      expect(Date.parse(created.json.createTime)).not.toBeNaN();

      expect((await call("GET", `/admin/v1/projects/${id}`)).json).toEqual(created.json);
      const list = await call("GET", "/admin/v1/projects?pageSize=100");
      expect(list.json.projects.map((p: { name: string }) => p.name)).toContain(`projects/${id}`);

      const deleted = await call("DELETE", `/admin/v1/projects/${id}`);
      expect(deleted.json.name).toBe(`projects/${id}`);
      expect((await call("GET", `/admin/v1/projects/${id}`)).status).toBe(404);
    });

    it("refuses a taken id with 409 ALREADY_EXISTS and a bad id with 400 naming project_id", async () => {
      const id = newId();
      expect((await call("POST", `/admin/v1/projects?projectId=${id}`, {})).status).toBe(200);
      const again = await call("POST", `/admin/v1/projects?projectId=${id}`, {});
      expect(again.status).toBe(409);
      expect(again.json.error.status).toBe("ALREADY_EXISTS");
      const bad = await call("POST", "/admin/v1/projects?projectId=Not_Valid", {});
      expect(bad.status).toBe(400);
      const violations = bad.json.error.details.find((d: { "@type": string }) =>
        d["@type"].endsWith("BadRequest"),
      );
      expect(violations.fieldViolations[0].field).toBe("project_id");
    });

    it("gives a 64-byte signing key, and a new one on rotate", async () => {
      const id = newId();
      await call("POST", `/admin/v1/projects?projectId=${id}`, {});
      const key = await call("GET", `/admin/v1/projects/${id}/signingKey`);
      expect(key.status).toBe(200);
      expect(Buffer.from(key.json.key, "base64")).toHaveLength(64);
      const rotated = await call("POST", `/admin/v1/projects/${id}/signingKey:rotate`, {});
      expect(rotated.status).toBe(200);
      expect(Buffer.from(rotated.json.key, "base64")).toHaveLength(64);
      expect(rotated.json.key).not.toBe(key.json.key);
      expect((await call("GET", `/admin/v1/projects/${id}/signingKey`)).json.key).toBe(rotated.json.key);
    });

    it("lets an API key read the signing key with projects.signingKey.get, and nothing more", async () => {
      const id = newId();
      await call("POST", `/admin/v1/projects?projectId=${id}`, {});
      const verifier = await call("POST", "/admin/v1/apiKeys", {
        displayName: "webhook verifier",
        bindings: [{ project: `projects/${id}`, roles: ["roles/webhooks.verifier"] }],
      });
      const secret = verifier.json.secret as string;
      expect((await call("GET", `/admin/v1/projects/${id}/signingKey`, undefined, secret)).status).toBe(200);
      expect((await call("POST", `/admin/v1/projects/${id}/signingKey:rotate`, {}, secret)).status).toBe(403);
      expect((await call("GET", `/admin/v1/projects/${id}`, undefined, secret)).status).toBe(403);
      expect((await call("GET", "/admin/v1/apiKeys", undefined, secret)).status).toBe(403);
    });

    it("deleting a project deletes its resources and the keys' bindings to it", async () => {
      const id = newId();
      await call("POST", `/admin/v1/projects?projectId=${id}`, {});
      const key = await call("POST", "/admin/v1/apiKeys", {
        bindings: [{ project: `projects/${id}`, roles: ["roles/owner"] }],
      });
      const secret = key.json.secret as string;
      const unsub = await call("POST", `/v1/projects/${id}/unsubscribers`, { phone: "+61491570156" }, secret);
      expect(unsub.status).toBe(200);
      await call("DELETE", `/admin/v1/projects/${id}`);
      const after = await call("GET", `/admin/v1/${key.json.apiKey.name}`);
      expect(after.json.bindings ?? []).toEqual([]);
      expect((await call("GET", `/v1/${unsub.json.name}`, undefined, secret)).status).toBe(403);
      // recreating the project does not bring anything back
      await call("POST", `/admin/v1/projects?projectId=${id}`, {});
      expect((await call("GET", `/v1/${unsub.json.name}`)).status).toBe(404);
    });

    it("answers NOT_FOUND for a call as the operator on a project that does not exist", async () => {
      const res = await call("GET", `/v1/projects/${newId()}/unsubscribers`);
      expect(res.status).toBe(404);
      expect(res.json.error.message).toMatch(/^projects\/.+ not found$/);
    });
  });

  describe("API keys", () => {
    let project: string;
    beforeAll(async () => {
      project = `projects/${newId()}`;
      await call("POST", `/admin/v1/projects?projectId=${project.split("/")[1]}`, {});
    });

    it("creates a key whose secret is shown once and stored only as a hash", async () => {
      const res = await call("POST", "/admin/v1/apiKeys", {
        displayName: "ci",
        bindings: [{ project, roles: ["roles/owner"], permissions: ["voice.calls.get"] }],
      });
      expect(res.status).toBe(200);
      const secret = res.json.secret as string;
      expect(secret).toMatch(/^sb_[a-z0-9]+_[A-Za-z0-9_-]{43}$/);
      expect(res.json.apiKey).toMatchObject({
        displayName: "ci",
        bindings: [{ project, roles: ["roles/owner"], permissions: ["voice.calls.get"] }],
      });
      expect(res.json.apiKey.name).toMatch(/^apiKeys\/[a-z0-9]+$/);

      const got = await call("GET", `/admin/v1/${res.json.apiKey.name}`);
      const listed = await call("GET", "/admin/v1/apiKeys?pageSize=100");
      for (const body of [got.json, listed.json]) expect(JSON.stringify(body)).not.toContain(secret);
      const random = secret.slice(secret.indexOf("_", 3) + 1);
      expect(got.json.secretPrefix).toBe(
        `${secret.slice(0, secret.length - random.length)}${random.slice(0, 4)}…`,
      );

      // stored as SHA-256 only: no column holds the secret
      const rows = await database.db.execute(
        // biome-ignore lint/suspicious/noExplicitAny: raw row check
        (await import("drizzle-orm")).sql`select * from api_keys` as any,
      );
      expect(JSON.stringify(rows)).not.toContain(random.slice(4));
    });

    it("works at once, and stops working at once when disabled or deleted", async () => {
      const res = await call("POST", "/admin/v1/apiKeys", {
        bindings: [{ project, roles: ["roles/owner"] }],
      });
      const secret = res.json.secret as string;
      const name = res.json.apiKey.name as string;
      const list = `/v1/${project}/unsubscribers`;
      expect((await call("GET", list, undefined, secret)).status).toBe(200);

      const disabled = await call("PATCH", `/admin/v1/${name}?updateMask=disabled`, { disabled: true });
      expect(disabled.json.disabled).toBe(true);
      const refused = await call("GET", list, undefined, secret);
      expect(refused.status).toBe(401);
      expect(refused.json.error.details[0].reason).toBe("API_KEY_DISABLED");

      await call("PATCH", `/admin/v1/${name}?updateMask=disabled`, { disabled: false });
      expect((await call("GET", list, undefined, secret)).status).toBe(200);

      expect((await call("DELETE", `/admin/v1/${name}`)).status).toBe(200);
      expect((await call("GET", list, undefined, secret)).status).toBe(401);
      expect((await call("GET", `/admin/v1/${name}`)).status).toBe(404);
    });

    it("applies new bindings at once", async () => {
      const res = await call("POST", "/admin/v1/apiKeys", {
        bindings: [{ project, permissions: ["messaging.unsubscribers.get"] }],
      });
      const secret = res.json.secret as string;
      const list = `/v1/${project}/unsubscribers`;
      expect((await call("GET", list, undefined, secret)).status).toBe(403);
      const updated = await call("PATCH", `/admin/v1/${res.json.apiKey.name}`, {
        bindings: [{ project, roles: ["roles/viewer"] }],
      });
      expect(updated.status).toBe(200);
      expect(updated.json.bindings).toEqual([{ project, roles: ["roles/viewer"] }]);
      expect((await call("GET", list, undefined, secret)).status).toBe(200);
      // viewer reads but does not write
      expect((await call("POST", list, { phone: "+61491570157" }, secret)).status).toBe(403);
    });

    it.each([
      ["no binding", { bindings: [] }, "api_key.bindings"],
      [
        "an unknown role",
        { bindings: [{ project: "PROJECT", roles: ["roles/nope"] }] },
        "api_key.bindings[0].roles[0]",
      ],
      [
        "an unknown permission",
        { bindings: [{ project: "PROJECT", permissions: ["voice.calls.fly"] }] },
        "api_key.bindings[0].permissions[0]",
      ],
      ["a binding granting nothing", { bindings: [{ project: "PROJECT" }] }, "api_key.bindings[0]"],
      [
        "a project that does not exist",
        { bindings: [{ project: "projects/no-such-project", roles: ["roles/owner"] }] },
        "api_key.bindings[0].project",
      ],
      [
        "a project bound twice",
        {
          bindings: [
            { project: "PROJECT", roles: ["roles/owner"] },
            { project: "PROJECT", roles: ["roles/viewer"] },
          ],
        },
        "api_key.bindings[1].project",
      ],
    ])("refuses %s with 400 naming the field", async (_name, body, field) => {
      const before = await call("GET", "/admin/v1/apiKeys?pageSize=100");
      const res = await call(
        "POST",
        "/admin/v1/apiKeys",
        JSON.parse(JSON.stringify(body).replaceAll("PROJECT", project)),
      );
      expect(res.status).toBe(400);
      const violations = res.json.error.details.find((d: { "@type": string }) =>
        d["@type"].endsWith("BadRequest"),
      );
      expect(violations.fieldViolations.map((v: { field: string }) => v.field)).toContain(field);
      const after = await call("GET", "/admin/v1/apiKeys?pageSize=100");
      expect(after.json.apiKeys?.length).toBe(before.json.apiKeys?.length);
    });

    it("is operator-only: an owner key cannot manage keys or projects", async () => {
      const owner = (
        await call("POST", "/admin/v1/apiKeys", { bindings: [{ project, roles: ["roles/owner"] }] })
      ).json.secret as string;
      expect((await call("GET", "/admin/v1/apiKeys", undefined, owner)).status).toBe(403);
      expect((await call("POST", "/admin/v1/apiKeys", { bindings: [] }, owner)).status).toBe(403);
      expect((await call("POST", `/admin/v1/projects?projectId=${newId()}`, {}, owner)).status).toBe(403);
    });
  });

  describe("secrets stay secret", () => {
    it("never appear in logs, errors or list responses", async () => {
      const project = newId();
      await call("POST", `/admin/v1/projects?projectId=${project}`, {});
      const created = await call("POST", "/admin/v1/apiKeys", {
        bindings: [{ project: `projects/${project}`, roles: ["roles/owner"] }],
      });
      const secret = created.json.secret as string;
      const wrong = `${secret.slice(0, -4)}AAAA`;
      const responses = [
        await call("GET", "/admin/v1/apiKeys?pageSize=100"),
        await call("GET", `/v1/projects/${project}/unsubscribers`, undefined, wrong),
        await call("GET", `/v1/projects/${project}/unsubscribers`, undefined, "not-a-key-at-all"),
        await call("GET", "/admin/v1/apiKeys", undefined, secret),
        await call("POST", `/v1/projects/${project}/unsubscribers`, { phone: "bad" }, secret),
      ];
      expect(responses.map((r) => r.status)).toEqual([200, 401, 401, 403, 400]);
      const seen = JSON.stringify(responses) + logLines.join("");
      expect(logLines.length).toBeGreaterThan(0);
      const random = secret.slice(secret.indexOf("_", 3) + 1);
      for (const s of [secret, wrong, TEST_OPERATOR_TOKEN, random.slice(4)]) {
        const at = seen.indexOf(s);
        expect(at, `${s} found in: ${seen.slice(Math.max(0, at - 300), at + 100)}`).toBe(-1);
      }
    });
  });
});
