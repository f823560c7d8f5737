/**
 * A log reader that stops reading (a stalled collector, a paused pipe) does
 * not stop the service: with stdout a pipe nobody reads, requests are still
 * answered (before, the access log's synchronous write blocked the process
 * once the pipe was full: every request hung, and so did the stop). Lines
 * past LOG_BUFFER_BYTES are dropped and counted, a warning says how many once
 * stdout is read again, and SIGTERM ends the process while stdout is still
 * stalled.
 *
 * Real parts: the compiled server (`node dist/server.js`) on the embedded
 * database, its stdout a real pipe to this process, fetch over loopback.
 */
import { type ChildProcessByStdio, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT } from "../support/build.js";
import { freePort } from "../support/process.js";

interface Server {
  child: ChildProcessByStdio<null, Readable, Readable>;
  base: string;
  exited: Promise<number | null>;
  /** The operator token the first start generated. */
  token: () => string;
}

const dirs: string[] = [];

/** The compiled server with its stdout a pipe this test does not read until it says so. */
async function startStalled(): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), "sb-log-stall-"));
  dirs.push(dir);
  const port = await freePort();
  const child = spawn(process.execPath, ["dist/server.js"], {
    cwd: ROOT,
    env: {
      ...process.env,
      HOST: "127.0.0.1",
      PORT: String(port),
      DATA_DIR: dir,
      LOG_LEVEL: "info",
      LOG_BUFFER_BYTES: "65536",
      SIP_PORT: "0",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.pause();
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode})`);
    try {
      if ((await fetch(`${base}/readyz`)).status === 200) {
        return { child, base, exited, token: () => readFileSync(join(dir, "operator-token"), "utf8").trim() };
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("not ready after 60 s");
}

/**
 * Sends `n` requests (each access-logged at info, ~300 bytes), 50 at a time,
 * each given 10 s; how many were answered.
 */
async function load(base: string, n: number): Promise<number> {
  let answered = 0;
  for (let i = 0; i < n; i += 50) {
    const batch = Array.from({ length: Math.min(50, n - i) }, () =>
      fetch(`${base}/v1/projects/log-stall/unsubscribers`, { signal: AbortSignal.timeout(10_000) }).then(
        async (res) => {
          await res.arrayBuffer();
          answered++;
        },
        () => {},
      ),
    );
    await Promise.all(batch);
    if (answered < i + batch.length) break; // one timed out: the process is blocked
  }
  return answered;
}

/** Waits up to `ms` for the process to exit; its code, or "running". */
async function exitWithin(s: Server, ms: number): Promise<number | null | "running"> {
  return Promise.race([s.exited, new Promise<"running">((r) => setTimeout(() => r("running"), ms))]);
}

beforeAll(ensureBuilt, 600_000);
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("the log's reader stalls", () => {
  it("requests are answered while stdout is not read; the dropped lines are counted and reported once it is", async () => {
    const s = await startStalled();
    try {
      // ~900 KB of access log: far past the pipe (64 KiB) and LOG_BUFFER_BYTES (64 KiB).
      expect(await load(s.base, 3000)).toBe(3000);
      // Seen while stdout is still stalled: in the metrics.
      const metrics = await (
        await fetch(`${s.base}/metrics`, { headers: { authorization: `Bearer ${s.token()}` } })
      ).text();
      const dropped = Number(/^switchboard_log_lines_dropped_total (\d+)/m.exec(metrics)?.[1]);
      expect(dropped).toBeGreaterThan(0);

      let out = "";
      s.child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
      s.child.stdout.resume();
      let warning: { level: number; dropped: number; msg: string } | undefined;
      for (let i = 0; i < 100 && warning === undefined; i++) {
        await load(s.base, 5);
        await new Promise((r) => setTimeout(r, 100));
        warning = out
          .split("\n")
          .filter((l) => l.startsWith("{"))
          .map((l) => JSON.parse(l) as { level: number; dropped: number; msg: string })
          .find((l) => l.msg.startsWith("log lines dropped"));
      }
      expect(warning?.level).toBe(40);
      expect(warning?.dropped).toBeGreaterThanOrEqual(dropped);
      // What was not dropped was written: the start-up lines, and requests before and after.
      const requests = out.split("\n").filter((l) => l.includes('"msg":"request"')).length;
      expect(requests + (warning?.dropped ?? 0)).toBeGreaterThanOrEqual(3000);
      expect(out).toContain('"msg":"switchboard listening"');

      s.child.kill("SIGTERM");
      expect(await exitWithin(s, 20_000)).toBe(0);
    } finally {
      s.child.kill("SIGKILL");
    }
  }, 120_000);

  it("SIGTERM ends the process while stdout is still not read", async () => {
    const s = await startStalled();
    try {
      expect(await load(s.base, 3000)).toBe(3000);
      s.child.kill("SIGTERM");
      // The stop gives up on what stdout has not taken, rather than waiting for it for ever.
      expect(await exitWithin(s, 20_000)).toBe(0);
    } finally {
      s.child.kill("SIGKILL");
    }
  }, 120_000);
});
