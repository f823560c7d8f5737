/**
 * Every shell example of README.md and docs/*.md, run as a reader would run
 * it: the ```sh blocks of each file, in order, in one bash session per file
 * (`set -euo pipefail`; curl fails on any HTTP error status), against the
 * compiled server on a fresh embedded database, with the example webhook
 * handler of the quick start. The docs files run after the README, in the
 * state it leaves (the project `my-project`, `$KEY`, the operator token).
 *
 * What a reader's machine has and this test changes, nothing else:
 * - addresses: 127.0.0.1:8080 (the server) and 127.0.0.1:3000 (the handler)
 *   become free ports, and the CLI finds the server through SWITCHBOARD_URL;
 * - `data/` (the embedded database's directory) is a temporary directory.
 * Blocks that install, start or test the project itself are not run here:
 * CI runs them (npm ci, npm test) and test/startup runs npm start. Blocks
 * marked ```sh norun (things this machine cannot run, like docker) are
 * listed by the test.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ensureBuilt } from "../support/build.js";
import { describeEmbedded } from "../support/db.js";
import { freePort, launch, type Proc } from "../support/process.js";

const ROOT = join(import.meta.dirname, "../..");

/** The blocks a reader runs to install, start or test the project: run by CI and test/startup. */
const RUN_ELSEWHERE = new Set(["npm ci && npm start", "npm test"]);
/** The quick start's server and handler: this test starts them (with the same settings). */
const SERVER_BLOCK = "WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS=true npm start";
const HANDLER_BLOCK = "node scripts/example-handler.mjs";
/** The CLI reference: its examples are checked line by line (see its test). */
const CLI_DOC = "docs/cli.md";

/**
 * What a reader's shell has: curl (failing here on any HTTP error status, with
 * the body shown), and the project's commands as a checkout resolves them —
 * `npx switchboard` is the package's bin, `npx buf` its node_modules/.bin
 * (never the registry), and `switchboard` the bin once installed.
 */
const SHELL_FUNCTIONS = `
curl() { command curl --fail-with-body --show-error "$@"; }
switchboard() { node "${ROOT}/scripts/switchboard.js" "$@"; }
buf() { "${ROOT}/node_modules/.bin/buf" "$@"; }
npx() {
  local bin="$1"; shift
  if [ "$bin" = switchboard ]; then switchboard "$@";
  elif [ -x "${ROOT}/node_modules/.bin/$bin" ]; then "${ROOT}/node_modules/.bin/$bin" "$@";
  else echo "npx $bin: not a dependency of this checkout" >&2; return 127; fi
}
`;

interface Block {
  file: string;
  line: number;
  info: string;
  code: string;
}

/** The fenced blocks of a markdown file whose info string starts with `sh`. */
function shellBlocks(file: string): Block[] {
  const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    // Blocks may be indented (inside a list item): the opening fence's indent is removed.
    const open = /^( *)```(sh\b.*)$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i]!.trim() !== "```"; i++) body.push(lines[i]!.slice(indent));
    blocks.push({ file, line: start + 1, info: open[2]!.trim(), code: body.join("\n").trim() });
  }
  return blocks;
}

async function until(check: () => boolean | Promise<boolean>, what: string, limitMs = 60_000): Promise<void> {
  const t0 = Date.now();
  while (Date.now() - t0 < limitMs) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const docsFiles = readdirSync(join(ROOT, "docs"))
  .filter((f) => f.endsWith(".md"))
  .sort()
  .map((f) => `docs/${f}`)
  .filter((f) => shellBlocks(f).length > 0);

describeEmbedded("shell examples of README.md and docs/", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "sb-examples-"));
  // The examples run in a directory of their own: files they write stay out of the checkout.
  const workDir = join(dataDir, "work");
  mkdirSync(workDir);
  let server: Proc;
  let handler: Proc;
  let port: number;
  let handlerPort: number;
  /** Variables the README's session leaves for the docs' sessions. */
  const session: Record<string, string> = {};

  beforeAll(async () => {
    await ensureBuilt();
    port = await freePort();
    handlerPort = await freePort();
    server = launch(process.execPath, ["dist/server.js"], {
      WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
      DATA_DIR: join(dataDir, "data"),
      HOST: "127.0.0.1",
      PORT: String(port),
      LOG_LEVEL: "warn",
      DATABASE_URL: "",
      SWITCHBOARD_OPERATOR_TOKEN: "",
      RECORDING_LINK_SECRET: "",
    });
    handler = launch(process.execPath, ["scripts/example-handler.mjs"], { PORT: String(handlerPort) });
    await until(async () => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/readyz`)).ok;
      } catch {
        return false;
      }
    }, `the server to be ready:\n${server?.output()}`);
    await until(() => handler.output().includes("listening"), "the example handler");
  }, 600_000);

  afterAll(() => {
    server?.child.kill("SIGTERM");
    handler?.child.kill("SIGTERM");
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Runs the runnable blocks of `file` in one bash session; returns its output. */
  function runFile(file: string, prelude = ""): { stdout: string; env: Record<string, string> } {
    const blocks = shellBlocks(file).filter(
      (b) =>
        b.info === "sh" && !RUN_ELSEWHERE.has(b.code) && b.code !== SERVER_BLOCK && b.code !== HANDLER_BLOCK,
    );
    const script = [
      "set -euo pipefail",
      SHELL_FUNCTIONS,
      prelude,
      ...blocks.map((b) => `echo "::block ${b.file}:${b.line}"\n${b.code}`),
      // What the docs' sessions inherit (bash expansions, not template placeholders).
      ...["KEY", "SWITCHBOARD_OPERATOR_TOKEN"].map((name) => `echo "::env ${name}=$\{${name}:-}"`),
    ]
      .join("\n")
      .replaceAll("127.0.0.1:8080", `127.0.0.1:${port}`)
      .replaceAll("127.0.0.1:3000", `127.0.0.1:${handlerPort}`)
      .replaceAll("data/operator-token", join(dataDir, "data", "operator-token"));
    let stdout: string;
    try {
      stdout = execFileSync("bash", ["-c", script], {
        cwd: workDir,
        env: { ...process.env, SWITCHBOARD_URL: `http://127.0.0.1:${port}`, DATA_DIR: join(dataDir, "data") },
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
        timeout: 240_000,
      });
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; status?: number };
      const last = (e.stdout ?? "")
        .split("\n")
        .filter((l) => l.startsWith("::block "))
        .pop();
      throw new Error(
        `${file}: an example failed (exit ${e.status}) in the block at ${last?.slice(8) ?? "?"}\n` +
          `stdout:\n${(e.stdout ?? "").slice(-3000)}\nstderr:\n${(e.stderr ?? "").slice(-3000)}\n` +
          `server:\n${server.output().slice(-2000)}`,
      );
    }
    const env: Record<string, string> = {};
    for (const line of stdout.split("\n")) {
      const m = /^::env ([A-Z_]+)=(.*)$/.exec(line);
      if (m) env[m[1]!] = m[2]!;
    }
    return { stdout, env };
  }

  it("README: the quick start reaches a first call and a first incoming SMS", async () => {
    const readme = shellBlocks("README.md");
    // The blocks this test stands in for are still what the README says.
    expect(readme.map((b) => b.code)).toContain(SERVER_BLOCK);
    expect(readme.map((b) => b.code)).toContain(HANDLER_BLOCK);

    const { stdout, env } = runFile("README.md");
    Object.assign(session, env);
    expect(session.KEY).toMatch(/^sb_/);

    // The call runs to its end (the README looks after 15 s; a loaded machine
    // may take longer), and the handler sees its call control and every state update.
    await until(
      () => /POST \/state CALL_STATE_UPDATE .*"state":"COMPLETED"/.test(handler.output()),
      `the call to complete; the handler saw:\n${handler.output()}`,
      120_000,
    );
    const seen = handler.output();
    expect(seen).toMatch(/POST \/voice /);
    for (const state of ["QUEUED", "STARTING", "RINGING", "IN_PROGRESS", "COMPLETED"]) {
      expect(seen).toMatch(new RegExp(`POST /state CALL_STATE_UPDATE .*"state":"${state}"`));
    }
    // The incoming messages reached the handler; STOP made an unsubscriber.
    expect(seen).toMatch(/POST \/messages INCOMING_MESSAGE .*Hello from a phone/);
    expect(stdout).toContain('"phone": "+61491570156"');
  }, 300_000);

  it.each(docsFiles.filter((f) => f !== CLI_DOC))(
    "%s",
    (file) => {
      runFile(file, sessionPrelude());
      const norun = shellBlocks(file).filter((b) => b.info !== "sh");
      for (const b of norun) console.info(`not run here (${b.info}): ${b.file}:${b.line}`);
    },
    300_000,
  );

  /**
   * docs/cli.md shows each command on its own, with illustrative names
   * (`acme`, `c0ffee`) rather than a scenario: every example line runs
   * against the server, and must be understood by the CLI (exit 0, or 1
   * when the server answers that the illustrated resource does not exist),
   * never a usage error (2) or an unknown command. What each command does is
   * tested in test/admin/cli.test.ts and cli-data.test.ts.
   */
  it(CLI_DOC, () => {
    const lines = shellBlocks(CLI_DOC)
      .filter((b) => b.info === "sh")
      .flatMap((b) => b.code.split("\n"))
      .map((l) => l.trim())
      .filter((l) => l.startsWith("switchboard "));
    expect(lines.length).toBeGreaterThan(40);
    const outcomes = lines.map((line) => {
      const script = [SHELL_FUNCTIONS, sessionPrelude(), line].join("\n");
      try {
        execFileSync("bash", ["-c", script], {
          cwd: workDir,
          env: {
            ...process.env,
            SWITCHBOARD_URL: `http://127.0.0.1:${port}`,
            DATA_DIR: join(dataDir, "data"),
          },
          stdio: ["ignore", "pipe", "pipe"],
          timeout: 60_000,
        });
        return { line, status: 0, stderr: "" };
      } catch (err) {
        const e = err as { status?: number; stderr?: Buffer };
        return { line, status: e.status ?? -1, stderr: e.stderr?.toString() ?? "" };
      }
    });
    const misunderstood = outcomes.filter((o) => o.status !== 0 && o.status !== 1);
    expect(misunderstood).toEqual([]);
    // Help and lists name nothing illustrative: those succeed.
    const plain = outcomes.filter(
      (o) => / --help\b/.test(o.line) || /^switchboard [a-z -]+ list( --json)?$/.test(o.line),
    );
    expect(plain.length).toBeGreaterThan(5);
    expect(plain.filter((o) => o.status !== 0)).toEqual([]);
    for (const o of outcomes.filter((o) => o.status === 1)) {
      expect(o.stderr, o.line).toMatch(/^error: [A-Z_]+: /);
    }
  }, 600_000);

  function sessionPrelude(): string {
    if (!session.KEY) throw new Error("the README's examples did not run first");
    return [
      `export KEY=${session.KEY}`,
      `export SWITCHBOARD_OPERATOR_TOKEN=${session.SWITCHBOARD_OPERATOR_TOKEN}`,
    ].join("\n");
  }
});
