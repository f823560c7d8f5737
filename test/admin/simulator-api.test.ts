/**
 * SimulatorAdmin over its fixed REST surface, against a listening server:
 * POST /admin/v1/simulator/routes with the route's fields at the top level,
 * GET and DELETE /admin/v1/simulator/routes/{id}; operator only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, build } from "../../src/server.js";
import { newApiKey, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

// biome-ignore lint/suspicious/noExplicitAny: REST responses of varying shape, checked by the assertions
type Json = Record<string, any>;

describe.each(testDatabases())("SimulatorAdmin on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let base: string;

  beforeAll(async () => {
    app = await build({ config: testConfig(), db: database.db });
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
    token: string | null = TEST_OPERATOR_TOKEN,
  ): Promise<{ status: number; json: Json }> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Json };
  }

  const fields = (json: Json): string[] =>
    json.error.details
      .filter((d: { "@type": string }) => d["@type"].endsWith("BadRequest"))
      .flatMap((d: { fieldViolations: { field: string }[] }) => d.fieldViolations.map((v) => v.field));

  it("creates a route from the fixed body, then gets, lists and deletes it", async () => {
    const created = await call("POST", "/admin/v1/simulator/routes", {
      prefix: "+6149157",
      outcome: "ANSWER",
      ringSeconds: 2,
      talkSeconds: 30,
      audio: "SPEECH",
      digits: "1234#",
    });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({
      prefix: "+6149157",
      outcome: "ANSWER",
      ringSeconds: 2,
      talkSeconds: 30,
      audio: "SPEECH",
      digits: "1234#",
    });
    expect(created.json.name).toMatch(/^simulator\/routes\/[a-z][a-z0-9]{15}$/);
    expect(Date.parse(created.json.createTime)).not.toBeNaN();
    const id = (created.json.name as string).split("/")[2];

    const got = await call("GET", `/admin/v1/simulator/routes/${id}`);
    expect(got.status).toBe(200);
    expect(got.json).toEqual(created.json);
    const list = await call("GET", "/admin/v1/simulator/routes?pageSize=100");
    expect(list.status).toBe(200);
    expect(list.json.routes.map((r: { name: string }) => r.name)).toContain(created.json.name);

    const deleted = await call("DELETE", `/admin/v1/simulator/routes/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.json).toEqual({});
    expect((await call("GET", `/admin/v1/simulator/routes/${id}`)).status).toBe(404);
    expect((await call("DELETE", `/admin/v1/simulator/routes/${id}`)).status).toBe(404);
  });

  it("fills in defaults, and the FAIL code, when fields are left out", async () => {
    const answer = await call("POST", "/admin/v1/simulator/routes", { prefix: "+6149158" });
    expect(answer.json).toMatchObject({
      outcome: "ANSWER",
      ringSeconds: 2,
      talkSeconds: 30,
      audio: "SPEECH",
    });
    const fail = await call("POST", "/admin/v1/simulator/routes", { prefix: "+6149159", outcome: "FAIL" });
    expect(fail.json).toMatchObject({ outcome: "FAIL", errorCode: "CARRIER_ERROR" });
    const coded = await call("POST", "/admin/v1/simulator/routes", {
      prefix: "+6149160",
      outcome: "FAIL",
      errorCode: "SIP_503",
      errorMessage: "Service unavailable",
    });
    expect(coded.json).toMatchObject({ errorCode: "SIP_503", errorMessage: "Service unavailable" });
    for (const r of [answer, fail, coded]) await call("DELETE", `/admin/v1/${r.json.name}`);
  });

  it("refuses bad fields with 400 naming each one", async () => {
    const bad = await call("POST", "/admin/v1/simulator/routes", {
      prefix: "6149157",
      ringSeconds: 601,
      talkSeconds: 86_401,
      digits: "12a",
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error.status).toBe("INVALID_ARGUMENT");
    expect(fields(bad.json).sort()).toEqual(
      ["route.digits", "route.prefix", "route.ring_seconds", "route.talk_seconds"].sort(),
    );
    const code = await call("POST", "/admin/v1/simulator/routes", { prefix: "+6149161", errorCode: "X" });
    expect(code.status).toBe(400);
    expect(fields(code.json)).toEqual(["route.error_code"]);
    const outcome = await call("POST", "/admin/v1/simulator/routes", { prefix: "+6149162", outcome: 42 });
    expect(outcome.status).toBe(400);
    expect(fields(outcome.json)).toEqual(["route.outcome"]);
  });

  it("refuses a second route for a prefix with 409", async () => {
    const first = await call("POST", "/admin/v1/simulator/routes", { prefix: "+6149163" });
    const again = await call("POST", "/admin/v1/simulator/routes", { prefix: "+6149163", outcome: "BUSY" });
    expect(again.status).toBe(409);
    expect(again.json.error.status).toBe("ALREADY_EXISTS");
    await call("DELETE", `/admin/v1/${first.json.name}`);
  });

  it("pages the list with tokens bound to the query", async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      made.push((await call("POST", "/admin/v1/simulator/routes", { prefix: `+6149170${i}` })).json.name);
    }
    const seen: string[] = [];
    let token = "";
    do {
      const page = await call("GET", `/admin/v1/simulator/routes?pageSize=1&pageToken=${token}`);
      expect(page.status).toBe(200);
      seen.push(...page.json.routes.map((r: { name: string }) => r.name));
      token = page.json.nextPageToken ?? "";
    } while (token !== "");
    expect(seen.filter((n) => made.includes(n))).toEqual([...made].reverse());
    expect((await call("GET", "/admin/v1/simulator/routes?pageToken=garbage")).status).toBe(400);
    for (const name of made) await call("DELETE", `/admin/v1/${name}`);
  });

  it("is the operator's: an API key gets 403, no credential 401", async () => {
    const project = await newProject(database.db);
    const { secret } = await newApiKey(database.db, [{ project, roles: ["roles/owner"] }]);
    const created = await call("POST", "/admin/v1/simulator/routes", { prefix: "+6149164" }, secret);
    expect(created.status).toBe(403);
    expect(created.json.error.status).toBe("PERMISSION_DENIED");
    expect((await call("GET", "/admin/v1/simulator/routes", undefined, secret)).status).toBe(403);
    expect((await call("GET", "/admin/v1/simulator/routes/abc", undefined, secret)).status).toBe(403);
    expect((await call("DELETE", "/admin/v1/simulator/routes/abc", undefined, secret)).status).toBe(403);
    expect((await call("GET", "/admin/v1/simulator/routes", undefined, null)).status).toBe(401);
  });
});
