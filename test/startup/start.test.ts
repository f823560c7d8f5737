/**
 * The compiled service as an operator runs it: `npm run build` output started
 * by `npm start` (npm, then plain node: no tsx), its start-up steps in the
 * log, time to ready, and a clean stop when the signal reaches npm or node.
 * Timings are printed, never asserted (shared, noisy machines).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../support/build.js";
import { createScratchDatabase, describePostgres } from "../support/db.js";
import { freePort, launch, type Proc } from "../support/process.js";

interface Started extends Proc {
  url: string;
}

function start(command: string, args: string[], env: NodeJS.ProcessEnv, port: number): Started {
  const proc = launch(command, args, { HOST: "127.0.0.1", PORT: String(port), LOG_LEVEL: "info", ...env });
  return { ...proc, url: `http://127.0.0.1:${port}` };
}

/** Polls /readyz until it answers 200; returns the milliseconds it took. */
async function untilReady(s: Started, limitMs = 90_000): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < limitMs) {
    if (s.child.exitCode !== null) throw new Error(`the server exited (${s.child.exitCode}):\n${s.output()}`);
    try {
      const res = await fetch(`${s.url}/readyz`);
      if (res.status === 200) return performance.now() - t0;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`not ready after ${limitMs} ms:\n${s.output()}`);
}

/** The JSON log lines of the output (the operator-token hint is plain text). */
function logLines(output: string): { msg: string; [k: string]: unknown }[] {
  return output
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { msg: string });
}

/** Whether a process with this pid is still alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pids of the direct children of `pid` (procfs). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

beforeAll(ensureBuilt, 600_000);

describe("npm start (compiled, embedded database)", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "sb-start-"));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("runs dist/server.js with plain node, logs its steps, prints the token once, and stops on SIGTERM to npm", async () => {
    const port = await freePort();
    const s = start("npm", ["start", "--silent"], { DATA_DIR: dataDir }, port);
    const readyMs = await untilReady(s);
    console.info(`first start on a fresh PGlite data directory: ready in ${Math.round(readyMs)} ms`);

    // npm's only child is node running the bundle (exec: no shell, no tsx in between).
    const kids = childrenOf(s.child.pid!);
    expect(kids).toHaveLength(1);
    const cmdline = readFileSync(`/proc/${kids[0]}/cmdline`, "utf8").split("\0").filter(Boolean);
    expect(cmdline[0]).toMatch(/node$/);
    expect(cmdline).toContain("dist/server.js");
    expect(cmdline.join(" ")).not.toMatch(/tsx/);

    const out = s.output();
    const msgs = logLines(out).map((l) => l.msg);
    for (const step of [
      "switchboard starting",
      "database opened",
      "migrations applied",
      "demo inventory checked",
      "switchboard listening",
    ]) {
      expect(msgs).toContain(step);
    }
    // The data directory came from the build's template (no initdb), already seeded.
    expect(logLines(out).find((l) => l.msg === "database opened")?.created).toBe("template");
    expect(msgs.some((m) => m.startsWith("demo inventory added"))).toBe(false);
    const listening = logLines(out).find((l) => l.msg === "switchboard listening");
    expect(listening?.url).toBe(s.url);
    const token = readFileSync(join(dataDir, "operator-token"), "utf8").trim();
    // Printed once, as a hint, and never inside a log line.
    expect(out.split(token).length - 1).toBe(1);
    expect(logLines(out).some((l) => JSON.stringify(l).includes(token))).toBe(false);

    const server = kids[0]!;
    s.child.kill("SIGTERM");
    expect(await s.exited).toBe(0);
    for (let i = 0; i < 100 && alive(server); i++) await new Promise((r) => setTimeout(r, 50));
    expect(alive(server)).toBe(false);
    expect(logLines(s.output()).map((l) => l.msg)).toContain("switchboard stopped");
  });

  it("restarts on the same data directory without the token hint, and stops on SIGINT to node", async () => {
    const port = await freePort();
    const s = start(process.execPath, ["dist/server.js"], { DATA_DIR: dataDir }, port);
    const readyMs = await untilReady(s);
    console.info(`restart on the embedded database: ready in ${Math.round(readyMs)} ms`);
    const token = readFileSync(join(dataDir, "operator-token"), "utf8").trim();
    expect(s.output()).not.toContain(token);
    expect(logLines(s.output()).find((l) => l.msg === "database opened")?.created).toBeUndefined();
    // The inventory is the operator's after the first start: not checked again.
    expect(logLines(s.output()).some((l) => l.msg.startsWith("demo inventory"))).toBe(false);
    s.child.kill("SIGINT");
    expect(await s.exited).toBe(0);
  });

  it("exits 0 on a signal that arrives while it is still starting", async () => {
    const port = await freePort();
    const fresh = mkdtempSync(join(tmpdir(), "sb-start-early-"));
    try {
      const s = start(process.execPath, ["dist/server.js"], { DATA_DIR: fresh }, port);
      // Wait for the first log line, then stop it before it listens.
      for (let i = 0; i < 400 && !s.output().includes("switchboard starting"); i++) {
        await new Promise((r) => setTimeout(r, 25));
      }
      s.child.kill("SIGTERM");
      expect(await s.exited).toBe(0);
      expect(s.output()).not.toContain('"switchboard listening"');
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });
});

describePostgres("node dist/server.js on PostgreSQL", () => {
  it("starts on an empty database (migrations, no demo inventory) and stops on SIGTERM", async () => {
    const scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
    try {
      const port = await freePort();
      const s = start(
        process.execPath,
        ["dist/server.js"],
        {
          DATABASE_URL: scratch.url,
          SWITCHBOARD_OPERATOR_TOKEN: "startup-test-operator-token-0123456789",
          RECORDING_LINK_SECRET: "startup-test-recording-secret-0123456789",
          DATA_DIR: mkdtempSync(join(tmpdir(), "sb-start-pg-")),
        },
        port,
      );
      const readyMs = await untilReady(s);
      console.info(
        `start on PostgreSQL (empty database, migrations applied): ready in ${Math.round(readyMs)} ms`,
      );
      const opened = logLines(s.output()).find((l) => l.msg === "database opened");
      expect(opened?.database).toBe("postgres");
      expect(JSON.stringify(opened)).not.toContain("postgres@"); // host only, never credentials
      expect(logLines(s.output()).some((l) => l.msg === "demo inventory checked")).toBe(false);
      s.child.kill("SIGTERM");
      expect(await s.exited).toBe(0);
    } finally {
      await scratch.drop();
    }
  });
});
