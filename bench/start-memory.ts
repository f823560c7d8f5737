/**
 * What `npm start` costs in memory, idle: the README's start command itself
 * (`npm start`: npm, then the server that its script execs into) is run on
 * the embedded database and, with TEST_DATABASE_URL or DATABASE_URL, on a
 * scratch PostgreSQL database; after BENCH_IDLE_SECONDS (30) of idling once
 * ready, the resident memory (VmRSS) of the server process and of npm is
 * read from /proc and printed with the targets (issue #31 item 3: the server
 * ≤ 110 MB on PostgreSQL, ≤ 200 MB on the embedded database; npm's own is
 * npm's and only printed).
 *
 *   npm run bench:start            (also run at the end of `npm run bench`)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import postgres from "postgres";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 30);
const TARGET_MB = { postgres: 110, pglite: 200 } as const;
type Backend = keyof typeof TARGET_MB;

export interface StartMemory {
  backend: Backend;
  serverMb?: number;
  npmMb?: number;
  error?: string;
}

function rssMb(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** The process under `root` (itself included) whose command line runs dist/server.js. */
function serverPid(root: number): number | undefined {
  const parents = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      parents.set(pid, Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {}
  }
  const under = (pid: number): boolean => {
    for (let p: number | undefined = pid, hops = 0; p !== undefined && p > 1 && hops < 10; hops++) {
      if (p === root) return true;
      p = parents.get(p);
    }
    return false;
  };
  for (const pid of parents.keys()) {
    if (!under(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (cmd.some((a) => a.endsWith("dist/server.js"))) return pid;
    } catch {}
  }
  return undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function untilReady(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`npm start exited (${child.exitCode})`);
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) return;
    } catch {}
    await sleep(200);
  }
  throw new Error("not ready after 180 s");
}

async function measure(backend: Backend, databaseUrl: string | undefined): Promise<StartMemory> {
  const dataDir = mkdtempSync(join(tmpdir(), "sb-start-memory-"));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: "127.0.0.1",
    SIP_PORT: "0",
    DATA_DIR: dataDir,
  };
  delete env.DATABASE_URL;
  if (databaseUrl !== undefined) {
    env.DATABASE_URL = databaseUrl;
    env.SWITCHBOARD_OPERATOR_TOKEN = randomBytes(24).toString("hex");
    env.RECORDING_LINK_SECRET = randomBytes(24).toString("hex");
  }
  const child = spawn("npm", ["start"], { cwd: ROOT, env, stdio: "ignore" });
  try {
    await untilReady(`http://127.0.0.1:${port}`, child);
    await sleep(IDLE_SECONDS * 1000);
    const server = child.pid === undefined ? undefined : serverPid(child.pid);
    if (server === undefined) throw new Error("no dist/server.js process under npm start");
    const result: StartMemory = { backend };
    const serverMb = rssMb(server);
    const npmMb = child.pid === undefined ? undefined : rssMb(child.pid);
    if (serverMb !== undefined) result.serverMb = serverMb;
    if (npmMb !== undefined) result.npmMb = npmMb;
    return result;
  } catch (err) {
    return { backend, error: err instanceof Error ? err.message : String(err) };
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once("exit", r)));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Runs `npm start` on each backend available and returns the figures and a printable report. */
export async function measureStartMemory(): Promise<{ results: StartMemory[]; text: string }> {
  const results: StartMemory[] = [await measure("pglite", undefined)];
  const adminUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  if (adminUrl) {
    const name = `sb_bench_start_${randomBytes(6).toString("hex")}`;
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${name}"`);
    try {
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      results.push(await measure("postgres", url.toString()));
    } finally {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    }
  }
  const mb = (n: number | undefined) => (n === undefined ? "-" : n.toFixed(1));
  const lines = [`npm start, idle ${IDLE_SECONDS} s after ready (VmRSS, MB):`];
  for (const r of results) {
    if (r.error !== undefined) {
      lines.push(`  ${r.backend}: FAILED: ${r.error}`);
      continue;
    }
    const target = TARGET_MB[r.backend];
    const holds = r.serverMb !== undefined && r.serverMb <= target;
    lines.push(
      `  ${r.backend}: server ${mb(r.serverMb)} (target <= ${target}: ${holds ? "holds" : "MISSED"}), npm ${mb(r.npmMb)}`,
    );
  }
  if (!adminUrl) lines.push("  postgres: skipped (set TEST_DATABASE_URL or DATABASE_URL)");
  return { results, text: lines.join("\n") };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { text } = await measureStartMemory();
  process.stdout.write(`${text}\n`);
}
