/**
 * Helpers of the CLI tests: run main() in-process capturing its output, a
 * real listening server per database to run it against, and readers of its
 * tables and key/value lines.
 */
import { afterAll, beforeAll, expect } from "vitest";
import type { Command } from "../../src/cli/command.js";
import { groups, main } from "../../src/cli.js";
import { type App, build } from "../../src/server.js";
import { TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { type TestBackend, useTestDatabase } from "../support/db.js";

// biome-ignore lint/suspicious/noExplicitAny: proto3 JSON printed by the CLI, checked by the assertions
export type Json = Record<string, any>;

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in-process with `env` (no token from the environment unless given). */
export async function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Result> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await main(args, {
    env: { DATA_DIR: "/nonexistent", ...env },
    stdout: (t) => stdout.push(t),
    stderr: (t) => stderr.push(t),
  });
  return { code, stdout: stdout.join("\n"), stderr: stderr.join("\n") };
}

/** The commands of every group, loaded as the CLI loads them. */
export async function allCommands(): Promise<Command[]> {
  const loaded = new Set<unknown>();
  const commands: Command[] = [];
  for (const g of groups) {
    for (const c of await g.load()) {
      if (loaded.has(c)) continue;
      loaded.add(c);
      commands.push(c);
    }
  }
  return commands;
}

/** Expects a failure: `code`, nothing on stdout, exactly one line on stderr; returns it. */
export function failed(r: Result, code: number): string {
  expect(r.code, r.stdout).toBe(code);
  expect(r.stdout).toBe("");
  expect(r.stderr.split("\n")).toHaveLength(1);
  return r.stderr;
}

/** `key: value` lines as a map. */
export const fieldsOf = (text: string): Record<string, string> =>
  Object.fromEntries(
    text.split("\n").map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()]),
  );

/** A table as its header and rows of cells (split on two or more spaces). */
export const rowsOf = (text: string): string[][] => text.split("\n").map((l) => l.split(/ {2,}/));

/**
 * A server (build() listening on 127.0.0.1:0, API role: no background
 * workers) on `backend`, and the CLI as its operator.
 */
export function cliServer(backend: TestBackend) {
  const database = useTestDatabase(backend);
  let app: App;
  let url = "";

  beforeAll(async () => {
    app = await build({ config: testConfig({ ROLE: "api" }), db: database.db });
    url = `http://127.0.0.1:${(await app.listen(0, "127.0.0.1")).port}`;
  });
  afterAll(async () => {
    await app?.close();
  });

  /** The CLI as the operator (SWITCHBOARD_URL and SWITCHBOARD_OPERATOR_TOKEN set). */
  const op = (...args: string[]) =>
    cli(args, { SWITCHBOARD_URL: url, SWITCHBOARD_OPERATOR_TOKEN: TEST_OPERATOR_TOKEN });
  /** Expects success with nothing on stderr; returns stdout. */
  async function ok(...args: string[]): Promise<string> {
    const r = await op(...args);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("");
    return r.stdout;
  }
  /** Runs with --json and parses stdout. */
  const json = async (...args: string[]): Promise<Json> => JSON.parse(await ok(...args, "--json"));
  /** A REST request as the operator, expecting 200. */
  async function rest(method: string, path: string, body?: unknown): Promise<Json> {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const parsed = (await res.json()) as Json;
    expect(res.status, JSON.stringify(parsed)).toBe(200);
    return parsed;
  }
  return { database, url: () => url, op, ok, json, rest };
}
