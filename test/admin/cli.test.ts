/**
 * The `switchboard` CLI: usage, help for every command, errors (exit code,
 * one stderr line), projects, API keys and signing keys against a real
 * listening server, and the package bin as a child process. The numbering,
 * voice and simulator commands are in cli-data.test.ts.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { dispatch } from "../../src/cli/dispatch.js";
import { groups } from "../../src/cli.js";
import { TEST_OPERATOR_TOKEN } from "../support/app.js";
import { testDatabases } from "../support/db.js";
import {
  allCommands,
  cli,
  cliServer,
  failed,
  fieldsOf,
  type Json,
  type Result,
  rowsOf,
} from "./cli-support.js";

const bin = fileURLToPath(new URL("../../scripts/switchboard.js", import.meta.url));
const run = promisify(execFile);

describe("switchboard CLI usage", () => {
  it("prints usage to stderr and exits 2 with no arguments", async () => {
    const r = await cli([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/^usage: switchboard <group> <command>/);
    for (const g of groups) expect(r.stderr).toContain(`  ${g.name} `);
  });

  it("prints help for the CLI, for every group and for every command, exiting 0", async () => {
    const top = await cli(["--help"]);
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/^usage: switchboard <group> <command>/);
    expect(top.stdout).toContain("--json");

    for (const g of groups) {
      const r = await cli([g.name, "--help"]);
      expect(r.code, g.name).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^usage: switchboard ${g.name} <command>`));
    }
    const commands = await allCommands();
    expect(commands.length).toBeGreaterThanOrEqual(45);
    for (const c of commands) {
      const r = await cli([...c.path, "--help"]);
      expect(r.code, c.path.join(" ")).toBe(0);
      expect(r.stderr).toBe("");
      expect(r.stdout.split("\n")[0]).toBe(
        ["usage: switchboard", ...c.path, ...(c.args ?? []), ...(c.options ? ["[options]"] : [])].join(" "),
      );
      expect(r.stdout).toContain(c.summary);
      for (const name of Object.keys(c.options ?? {})) expect(r.stdout).toContain(`--${name}`);
      expect(r.stdout, `${c.path.join(" ")} has an example`).toMatch(/Examples:\n {2}switchboard /);
      // -h works too, anywhere on the line
      expect((await cli(["-h", ...c.path])).stdout).toBe(r.stdout);
    }
    // simulator routes is a group within a group
    const routes = await cli(["simulator", "routes", "--help"]);
    expect(routes.stdout).toMatch(/^usage: switchboard simulator routes <command>/);
    expect(routes.stdout).not.toContain("incoming-call");
  });

  it("loads no command group for the top-level help, and only the named group for a command", async () => {
    const loaded: string[] = [];
    const spied = groups.map((g) => ({
      ...g,
      load: () => {
        loaded.push(g.name);
        return g.load();
      },
    }));
    const out: string[] = [];
    const io = { env: {}, out: (t: string) => out.push(t) };
    await dispatch(spied, ["--help"], io);
    await expect(dispatch(spied, [], io)).rejects.toThrow(/^usage: switchboard/);
    expect(loaded).toEqual([]);
    await dispatch(spied, ["calls", "list", "--help"], io);
    expect(loaded).toEqual(["calls"]);
  });

  it("imports no server code: only its own modules, generated code, protobuf-es and connect", () => {
    const src = fileURLToPath(new URL("../../src/", import.meta.url));
    const files = ["cli.ts", ...readdirSync(join(src, "cli")).map((f) => `cli/${f}`)];
    const allowed =
      /^(\.\/cli\/|\.\/|(\.\.\/)+gen\/|node:|@bufbuild\/protobuf(\/|$)|@connectrpc\/connect(-node)?$)/;
    for (const file of files) {
      const text = readFileSync(join(src, file), "utf8");
      const specifiers = [...text.matchAll(/\bfrom\s+"([^"]+)";|\bimport\("([^"]+)"\)/g)].map(
        (m) => (m[1] ?? m[2])!,
      );
      expect(specifiers.length, file).toBeGreaterThan(0);
      for (const s of specifiers) {
        // The command that runs here on the service's settings loads its code when it runs.
        if (file === "cli/migrate-blobs.ts" && text.includes(`import("${s}")`) && s.startsWith("../"))
          continue;
        expect(s, `${file} imports ${s}`).toMatch(allowed);
        if (file === "cli.ts")
          expect(s, `${file} imports ${s}`).toMatch(/^(\.\/cli\/|@connectrpc\/connect$)/);
      }
    }
  });

  it("documents every command, with an example, in docs/cli.md", async () => {
    const doc = readFileSync(fileURLToPath(new URL("../../docs/cli.md", import.meta.url)), "utf8");
    for (const c of await allCommands()) {
      const heading = `### \`switchboard ${[...c.path, ...(c.args ?? [])].join(" ")}\``;
      expect(doc, heading).toContain(heading);
      const section = doc.slice(doc.indexOf(heading)).split("\n### ")[0]!;
      expect(section, heading).toContain(`switchboard ${c.path.join(" ")}`);
      expect(section, heading).toMatch(/```sh\nswitchboard /);
    }
  });

  it.each([
    [["frobnicate"], /^error: unknown command: frobnicate \(see 'switchboard --help'\)$/],
    [["projects"], /^error: missing command after 'projects' \(see 'switchboard projects --help'\)$/],
    [["projects", "frob"], /^error: unknown command for 'projects': frob/],
    [["projects", "get"], /^error: missing argument <project> \(see 'switchboard projects get --help'\)$/],
    [["projects", "get", "a", "b"], /^error: unexpected argument "b"/],
    [["projects", "get", "a", "--bogus"], /^error: Unknown option '--bogus' \(see/],
    [["--json"], /^error: missing command/],
    [["keys", "create", "--role", "roles/owner"], /^error: give at least one --project/],
    [["keys", "create", "--project", "p"], /^error: give at least one --role or --permission/],
    [["inventory", "add-block", "+61255501000", "--size", "ten"], /^error: --size must be a whole number/],
    [
      ["inventory", "add-block", "+61255501000", "--size", "1", "--type", "FIXED", "--capability", "VOICE"],
      /^error: give --size, --type, --capability and --country/,
    ],
    [
      [
        "inventory",
        "add-block",
        "+6125550",
        "--size",
        "1",
        "--type",
        "FIXED",
        "--capability",
        "VOICE",
        "--country",
        "AU",
      ],
      /^error: --type must be one of LOCAL, NATIONAL, MOBILE, TOLL_FREE, SHARED_RATE, got FIXED/,
    ],
    [
      ["numbers", "get", "61255501000"],
      /^error: give the full name projects\/<project>\/phoneNumberInstances\//,
    ],
    [
      ["numbers", "suspend", "projects/p/calls/c"],
      /^error: expected projects\/<project>\/phoneNumberInstances\/<id>/,
    ],
    [["listings", "review", "l1", "--project", "p"], /^error: give --valid or --verified/],
    [
      ["listings", "review", "l1", "--project", "p", "--valid", "maybe"],
      /^error: --valid must be true or false/,
    ],
    [["sip-domains", "domain-optional", "d", "maybe", "--project", "p"], /^error: expected on or off/],
    [["projects", "list", "--limit", "0"], /^error: --limit must be a whole number from 1/],
    [["projects", "list", "--page-size", "101"], /^error: --page-size must be a whole number from 1 to 100/],
  ])("exits 2 with one line for the usage error of %j", async (args, message) => {
    const line = failed(await cli(["--url", "http://127.0.0.1:1", "--token", "t", ...args]), 2);
    expect(line).toMatch(message);
  });

  it("exits 2 without an operator token, and 1 naming the URL when no server answers", async () => {
    expect(failed(await cli(["projects", "list"]), 2)).toMatch(/^error: no operator token: pass --token/);
    expect(failed(await cli(["projects", "list", "--url", "http://127.0.0.1:1", "--token", "t"]), 1)).toMatch(
      /^error: UNAVAILABLE: .* \(is the server running at http:\/\/127\.0\.0\.1:1\? see --url\)$/,
    );
  });
});
describe.each(testDatabases())("switchboard CLI on $name", (backend) => {
  const { url, op, ok, json } = cliServer(backend);

  it("creates, shows, lists and deletes projects; NOT_FOUND exits 1 with the canonical code", async () => {
    const created = fieldsOf(await ok("projects", "create", "cli-demo", "--display-name", "CLI demo"));
    expect(created).toMatchObject({ name: "projects/cli-demo", displayName: "CLI demo" });
    expect(Date.parse(created.createTime!)).not.toBeNaN();
    expect(await json("projects", "get", "projects/cli-demo")).toMatchObject({
      name: "projects/cli-demo",
      displayName: "CLI demo",
    });
    await ok("projects", "create", "cli-other");

    const [header, ...rows] = rowsOf(await ok("projects", "list"));
    expect(header).toEqual(["PROJECT", "DISPLAY NAME", "CREATED"]);
    expect(rows.map((r) => r[0])).toEqual(expect.arrayContaining(["cli-demo", "cli-other"]));
    expect(rows.find((r) => r[0] === "cli-demo")?.[1]).toBe("CLI demo");
    const listed = await json("projects", "list");
    expect(listed.projects.map((p: Json) => p.name)).toEqual(
      expect.arrayContaining(["projects/cli-demo", "projects/cli-other"]),
    );
    expect(listed.nextPageToken).toBeUndefined();

    // one item per page: --limit stops after a page and prints where to resume
    const first = await ok("projects", "list", "--limit", "1");
    const token = /\n\nmore: --page-token (\S+)$/.exec(first)?.[1];
    expect(token).toBeTruthy();
    const firstJson = await json("projects", "list", "--limit", "1");
    expect(firstJson.projects).toHaveLength(1);
    expect(firstJson.nextPageToken).toBe(token);
    const rest1 = await json("projects", "list", "--page-token", token!);
    expect(rest1.projects.map((p: Json) => p.name)).not.toContain(firstJson.projects[0].name);

    expect(await ok("projects", "delete", "cli-other")).toBe("deleted projects/cli-other");
    const line = failed(await op("projects", "get", "cli-other"), 1);
    expect(line).toBe("error: NOT_FOUND: projects/cli-other not found");
    expect(failed(await op("projects", "create", "Bad_Id"), 1)).toMatch(/^error: INVALID_ARGUMENT: /);
    expect(failed(await op("projects", "list", "--token", "wrong-token-0123456789"), 1)).toMatch(
      /^error: UNAUTHENTICATED: .*\(check --token\)$/,
    );
  });

  it("manages API keys: create (secret once), list, get, rename, bind, unbind, disable, enable, delete", async () => {
    await ok("projects", "create", "cli-keys");
    await ok("projects", "create", "cli-keys-2");
    const created = await json(
      "keys",
      "create",
      "--project",
      "cli-keys",
      "--role",
      "roles/owner",
      "--display-name",
      "ops",
    );
    const { secret, apiKey } = created as { secret: string; apiKey: Json };
    expect(apiKey.bindings).toEqual([{ project: "projects/cli-keys", roles: ["roles/owner"] }]);
    const works = async () =>
      (
        await fetch(`${url()}/v1/projects/cli-keys/unsubscribers`, {
          headers: { authorization: `Bearer ${secret}` },
        })
      ).status;
    expect(await works()).toBe(200);
    const id = (apiKey.name as string).split("/")[1]!;

    const human = fieldsOf(
      await ok("keys", "create", "--project", "cli-keys", "--permission", "voice.calls.get"),
    );
    expect(human.secret).toMatch(/.{20,}/);
    expect(human["apiKey.bindings[0].permissions"]).toBe("voice.calls.get");

    const list = await ok("keys", "list");
    expect(rowsOf(list)[0]).toEqual(["KEY", "DISPLAY NAME", "DISABLED", "PREFIX", "PROJECTS", "CREATED"]);
    expect(rowsOf(list).find((r) => r[0] === id)).toEqual([
      id,
      "ops",
      "false",
      apiKey.secretPrefix,
      "projects/cli-keys",
      apiKey.createTime,
    ]);
    expect(list).not.toContain(secret);

    expect(fieldsOf(await ok("keys", "get", id))).toMatchObject({
      name: `apiKeys/${id}`,
      displayName: "ops",
      disabled: "false",
      "bindings[0].project": "projects/cli-keys",
      "bindings[0].roles": "roles/owner",
    });
    expect((await json("keys", "rename", id, "operations")).displayName).toBe("operations");

    const bound = await json("keys", "bind", id, "--project", "cli-keys-2", "--role", "roles/viewer");
    expect(bound.bindings).toEqual([
      { project: "projects/cli-keys", roles: ["roles/owner"] },
      { project: "projects/cli-keys-2", roles: ["roles/viewer"] },
    ]);
    const rebound = await json(
      "keys",
      "bind",
      id,
      "--project",
      "cli-keys",
      "--permission",
      "messaging.unsubscribers.list",
    );
    expect(rebound.bindings).toEqual([
      { project: "projects/cli-keys-2", roles: ["roles/viewer"] },
      { project: "projects/cli-keys", permissions: ["messaging.unsubscribers.list"] },
    ]);
    expect(await works()).toBe(200);
    const unbound = await json("keys", "unbind", id, "--project", "cli-keys");
    expect(unbound.bindings).toEqual([{ project: "projects/cli-keys-2", roles: ["roles/viewer"] }]);
    expect(await works()).toBe(403);
    expect(failed(await op("keys", "unbind", id, "--project", "cli-keys"), 2)).toMatch(
      /^error: the key has no binding to projects\/cli-keys/,
    );
    await ok("keys", "bind", id, "--project", "cli-keys", "--role", "roles/owner");

    expect(fieldsOf(await ok("keys", "disable", id)).disabled).toBe("true");
    expect(await works()).toBe(401);
    expect((await json("keys", "enable", `apiKeys/${id}`)).disabled).toBeUndefined();
    expect(await works()).toBe(200);

    expect(await ok("keys", "delete", id)).toBe(`deleted apiKeys/${id}`);
    expect(await works()).toBe(401);
    expect(failed(await op("keys", "get", id), 1)).toBe(`error: NOT_FOUND: apiKeys/${id} not found`);
  });

  it("gets and rotates a project's signing key", async () => {
    await ok("projects", "create", "cli-signing");
    const before = fieldsOf(await ok("signing-key", "get", "cli-signing"));
    expect(before.name).toBe("projects/cli-signing/signingKey");
    expect(Buffer.from(before.key!, "base64")).toHaveLength(64);
    const after = await json("signing-key", "rotate", "cli-signing");
    expect(Buffer.from(after.key, "base64")).toHaveLength(64);
    expect(after.key).not.toBe(before.key);
    expect((await json("signing-key", "get", "projects/cli-signing")).key).toBe(after.key);
    expect(failed(await op("signing-key", "rotate", "cli-nope"), 1)).toMatch(/^error: NOT_FOUND: /);
  });
  // The bin runs the compiled CLI (dist/, built by npm run build), else src/ through tsx.
  it("runs as the package bin: output on stdout and exit 0, one stderr line and exit 1 or 2", async () => {
    const env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      SWITCHBOARD_OPERATOR_TOKEN: TEST_OPERATOR_TOKEN,
    };
    const spawn = async (args: string[]): Promise<Result> => {
      try {
        const { stdout, stderr } = await run(process.execPath, [bin, "--url", url(), ...args], { env });
        return { code: 0, stdout, stderr };
      } catch (err) {
        const e = err as Result;
        return { code: e.code, stdout: e.stdout, stderr: e.stderr };
      }
    };
    const [good, missing, usage] = await Promise.all([
      spawn(["projects", "create", "cli-bin", "--json"]),
      spawn(["projects", "get", "cli-bin-nope"]),
      spawn(["projects", "get"]),
    ]);
    expect(good.code, good.stderr).toBe(0);
    expect(JSON.parse(good.stdout)).toMatchObject({ name: "projects/cli-bin" });
    expect(missing).toEqual({
      code: 1,
      stdout: "",
      stderr: "error: NOT_FOUND: projects/cli-bin-nope not found\n",
    });
    expect(usage).toEqual({
      code: 2,
      stdout: "",
      stderr: "error: missing argument <project> (see 'switchboard projects get --help')\n",
    });
  });
});
