/**
 * The service-accounts and token commands against a real server, on each
 * database: accounts and their bindings, keys (the key file written once,
 * mode 0600), and `switchboard service-accounts token` getting an access token with the key
 * file, which then works, and stops with the account or the key.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { testDatabases } from "../support/db.js";
import { cli, cliServer, failed, fieldsOf, type Json, rowsOf } from "./cli-support.js";

describe.each(testDatabases())("switchboard service-accounts on $name", (backend) => {
  const { ok, op, json, url } = cliServer(backend);
  const dir = mkdtempSync(join(tmpdir(), "sb-cli-sa-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** `switchboard service-accounts token` (no operator token: it needs none). */
  async function token(keyFile: string, ...scopes: string[]) {
    return cli(
      ["service-accounts", "token", "--key-file", keyFile, ...scopes.flatMap((s) => ["--scope", s])],
      {
        SWITCHBOARD_URL: url(),
      },
    );
  }

  const status = async (bearer: string, path = "/v1/projects/cli-sa/unsubscribers") =>
    (await fetch(`${url()}${path}`, { headers: { authorization: `Bearer ${bearer}` } })).status;

  it("manages accounts, bindings and keys, and gets tokens with a key file", async () => {
    await ok("projects", "create", "cli-sa");
    await ok("projects", "create", "cli-sa-2");
    const created = await json(
      "service-accounts",
      "create",
      "cli-bot",
      "--project",
      "cli-sa",
      "--role",
      "roles/viewer",
      "--display-name",
      "CLI bot",
    );
    expect(created).toMatchObject({
      name: "serviceAccounts/cli-bot",
      displayName: "CLI bot",
      email: "cli-bot@serviceaccounts.switchboard.invalid",
      bindings: [{ project: "projects/cli-sa", roles: ["roles/viewer"] }],
    });
    expect(fieldsOf(await ok("service-accounts", "get", "cli-bot"))).toMatchObject({
      name: "serviceAccounts/cli-bot",
      disabled: "false",
      "bindings[0].project": "projects/cli-sa",
    });
    const list = rowsOf(await ok("service-accounts", "list"));
    expect(list[0]).toEqual(["ACCOUNT", "EMAIL", "DISABLED", "PROJECTS", "CREATED"]);
    expect(list.find((r) => r[0] === "cli-bot")?.slice(0, 4)).toEqual([
      "cli-bot",
      "cli-bot@serviceaccounts.switchboard.invalid",
      "false",
      "projects/cli-sa",
    ]);
    const bound = await json(
      "service-accounts",
      "bind",
      "cli-bot",
      "--project",
      "cli-sa-2",
      "--role",
      "roles/owner",
    );
    expect(bound.bindings).toEqual([
      { project: "projects/cli-sa", roles: ["roles/viewer"] },
      { project: "projects/cli-sa-2", roles: ["roles/owner"] },
    ]);
    const unbound = await json("service-accounts", "unbind", "cli-bot", "--project", "cli-sa-2");
    expect(unbound.bindings).toEqual([{ project: "projects/cli-sa", roles: ["roles/viewer"] }]);

    // A key: the file is written once, readable by its owner only.
    const file = join(dir, "cli-bot.json");
    const wrote = await ok("service-accounts", "keys", "create", "cli-bot", "--output", file);
    expect(wrote).toMatch(/^wrote .*cli-bot\.json \(serviceAccounts\/cli-bot\/keys\/[0-9a-f]{40}\)$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const keyFile = JSON.parse(readFileSync(file, "utf8")) as Json;
    expect(keyFile).toMatchObject({
      type: "service_account",
      project_id: "cli-sa",
      client_email: "cli-bot@serviceaccounts.switchboard.invalid",
      token_uri: `${url()}/oauth2/token`,
    });
    const keyId = keyFile.private_key_id as string;
    // Printed instead: the key file itself.
    const printed = JSON.parse(await ok("service-accounts", "keys", "create", "cli-bot")) as Json;
    expect(printed.type).toBe("service_account");
    expect(printed.private_key_id).not.toBe(keyId);

    const keys = rowsOf(await ok("service-accounts", "keys", "list", "cli-bot"));
    expect(keys[0]).toEqual(["KEY", "ALGORITHM", "DISABLED", "CREATED"]);
    expect(
      keys
        .slice(1)
        .map((r) => r[0])
        .sort(),
    ).toEqual([keyId, printed.private_key_id].sort());
    const shown = await ok("service-accounts", "keys", "get", "cli-bot", keyId);
    expect(fieldsOf(shown).keyAlgorithm).toBe("RSA_2048");
    expect(shown).not.toContain("PRIVATE KEY");

    // The token command does what the SDKs do.
    const got = await token(file, "enfonica.messaging.v1.Unsubscribers");
    expect(got.code, got.stderr).toBe(0);
    const bearer = got.stdout.trim();
    expect(bearer).toMatch(/^sbat_/);
    expect(await status(bearer)).toBe(200);
    expect(await status(bearer, "/v1/projects/cli-sa/messages")).toBe(403); // not in its scope

    expect(fieldsOf(await ok("service-accounts", "keys", "disable", "cli-bot", keyId)).disabled).toBe("true");
    expect(await status(bearer)).toBe(401);
    expect(failed(await token(file, "enfonica.messaging.v1.Unsubscribers"), 1)).toMatch(
      /^error: invalid_grant: the key [0-9a-f]+ is disabled$/,
    );
    expect((await json("service-accounts", "keys", "enable", "cli-bot", keyId)).disabled).toBeUndefined();
    expect(await status(bearer)).toBe(200);

    expect(fieldsOf(await ok("service-accounts", "disable", "cli-bot")).disabled).toBe("true");
    expect(await status(bearer)).toBe(401);
    await ok("service-accounts", "enable", "cli-bot");
    expect(await status(bearer)).toBe(200);

    expect(await ok("service-accounts", "keys", "delete", "cli-bot", keyId)).toBe(
      `deleted serviceAccounts/cli-bot/keys/${keyId}`,
    );
    expect(await status(bearer)).toBe(401);
    expect(failed(await op("service-accounts", "keys", "get", "cli-bot", keyId), 1)).toBe(
      `error: NOT_FOUND: serviceAccounts/cli-bot/keys/${keyId} not found`,
    );
    expect(await ok("service-accounts", "delete", "cli-bot")).toBe("deleted serviceAccounts/cli-bot");
    expect(failed(await op("service-accounts", "get", "cli-bot"), 1)).toBe(
      "error: NOT_FOUND: serviceAccounts/cli-bot not found",
    );
  });

  it("refuses bad usage with exit 2", async () => {
    expect(failed(await op("service-accounts", "create", "x", "--role", "roles/owner"), 2)).toMatch(
      /^error: give at least one --project/,
    );
    expect(failed(await op("service-accounts", "create", "x", "--project", "p"), 2)).toMatch(
      /^error: give at least one --role or --permission/,
    );
    expect(failed(await token(join(dir, "missing.json"), "enfonica.voice.v1beta1.Calls"), 2)).toMatch(
      /^error: cannot read the key file/,
    );
    expect(failed(await cli(["service-accounts", "token", "--scope", "a.B"]), 2)).toMatch(
      /^error: give --key-file/,
    );
    expect(
      failed(await op("service-accounts", "create", "Bad_Id", "--project", "p", "--role", "roles/owner"), 1),
    ).toMatch(/^error: INVALID_ARGUMENT: /);
  });
});
