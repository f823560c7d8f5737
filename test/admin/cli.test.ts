/** The `switchboard` CLI (package.json bin) against a real running server. */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type App, build } from "../../src/server.js";
import { TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

const bin = fileURLToPath(new URL("../../scripts/switchboard.js", import.meta.url));
const run = promisify(execFile);

describe("switchboard CLI", () => {
  const database = useTestDatabase(testDatabases()[0]!);
  let app: App;
  let url: string;

  beforeAll(async () => {
    app = await build({ config: testConfig(), db: database.db });
    url = `http://127.0.0.1:${(await app.listen(0, "127.0.0.1")).port}`;
  });
  afterAll(async () => {
    await app?.close();
  });

  async function cli(args: string[], token: string | undefined = TEST_OPERATOR_TOKEN) {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATA_DIR: "/nonexistent",
    };
    if (token !== undefined) env.SWITCHBOARD_OPERATOR_TOKEN = token;
    try {
      const { stdout, stderr } = await run(process.execPath, [bin, "--url", url, ...args], { env });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  it("creates a project and an owner key whose secret works, lists keys without secrets, rotates the signing key", async () => {
    const project = await cli(["projects", "create", "cli-demo", "--display-name", "CLI demo"]);
    expect(project.code, project.stderr).toBe(0);
    expect(JSON.parse(project.stdout)).toMatchObject({ name: "projects/cli-demo", displayName: "CLI demo" });

    const key = await cli(["keys", "create", "--project", "cli-demo", "--role", "roles/owner"]);
    expect(key.code, key.stderr).toBe(0);
    const { secret, apiKey } = JSON.parse(key.stdout) as { secret: string; apiKey: { name: string } };
    const res = await fetch(`${url}/v1/projects/cli-demo/unsubscribers`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(res.status).toBe(200);

    const list = await cli(["keys", "list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(apiKey.name);
    expect(list.stdout).not.toContain(secret);

    const disabled = await cli(["keys", "disable", apiKey.name]);
    expect(JSON.parse(disabled.stdout).disabled).toBe(true);
    expect(
      (
        await fetch(`${url}/v1/projects/cli-demo/unsubscribers`, {
          headers: { authorization: `Bearer ${secret}` },
        })
      ).status,
    ).toBe(401);

    const before = JSON.parse((await cli(["signing-key", "get", "cli-demo"])).stdout).key;
    const after = JSON.parse((await cli(["signing-key", "rotate", "cli-demo"])).stdout).key;
    expect(Buffer.from(after, "base64")).toHaveLength(64);
    expect(after).not.toBe(before);
  });

  it("exits 2 with usage for a bad command, and 1 with the server's reason for a bad token", async () => {
    const bad = await cli(["frobnicate"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/unknown command/);
    const denied = await cli(["projects", "list"], "wrong-token-0123456789");
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/Unauthenticated/);
    expect(denied.stderr).not.toContain("wrong-token-0123456789");
  });
});
