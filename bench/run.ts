/**
 * `npm run bench`: server CPU per request of the real server against the
 * framework's ceiling, under an external load generator. A benchmark, not a
 * test: it asserts nothing about speed (it prints issue #12's targets and
 * which hold in this run).
 *
 * Needs h2load (Debian's nghttp2-client: `apt-get install -y nghttp2-client`);
 * it stops with that hint when h2load is missing. The test suite never needs it.
 *
 * Targets, each a separate child process:
 * - ceiling:  bench/ceiling.ts, bare connect-node + bare REST handler, constant answers;
 * - floor:    the same with one prepared PostgreSQL statement per request (postgres.js,
 *             a table of its own in a scratch database): the least any server
 *             reading and writing PostgreSQL through connect-node pays;
 * - postgres: the compiled server (dist/server.js, built if stale) on a scratch
 *             database `sb_bench_<random>` created on TEST_DATABASE_URL (or
 *             DATABASE_URL) and dropped afterwards;
 * - pglite:   the compiled server on a fresh PGlite data directory (a temp dir).
 *
 * Scenarios: create / get / list (first page) of regulatory listings, driven
 * by h2load (its own process, one thread) as gRPC, Connect JSON and REST over
 * HTTP/2 cleartext, and Connect JSON and REST over HTTP/1.1 (`h2load --h1`),
 * authenticated with an API key bound to the project (the real hot path);
 * then, on each database backend, list latency (the Node gRPC client, one
 * caller, so no queueing) on projects of 1,000 and 100,000 seeded listings:
 * the first page and a deep page reached through page tokens.
 *
 * The headline is the server child's CPU time per request (user + system,
 * from /proc/<pid>/stat, read around the measured h2load run): on a shared
 * 2-core machine req/s moves with whatever else runs, CPU per request much
 * less, and ratios against the ceiling measured in the same run less still.
 * Beside it, each target's garbage-collection pauses per request (main
 * thread, perf_hooks; bench/gc-meter.mjs, preloaded into every target): on
 * an 8 MB young generation with 512 requests in flight, most of what
 * separates the server from the floor.
 * Every target starts first, and the load scenarios then run on each target
 * in turn (BENCH_ROUNDS times, the order reversed every other round), so a
 * ratio compares runs seconds apart; the ceiling and the floor run under npm
 * start's node flags, as the server does.
 * A request counts as failed when h2load saw a non-2xx status or the
 * server's /metrics counted a non-OK code for the method (gRPC errors are
 * HTTP 200).
 *
 * Knobs (env): BENCH_TARGETS ("ceiling,floor,postgres,pglite"), BENCH_REQUESTS
 * (5000 per scenario), BENCH_WARMUP (1000), BENCH_CONNECTIONS (16),
 * BENCH_STREAMS (32 per HTTP/2 connection), BENCH_ROWS ("1000,100000"),
 * BENCH_LATENCY_REQUESTS (1000), BENCH_TRANSPORTS ("grpc,connect,rest,connect-h1,rest-h1"),
 * BENCH_OPERATIONS ("create,get,list"), BENCH_H2LOAD (the binary), BENCH_CPU_PROF
 * (a directory: the server, the ceiling and the floor write V8 CPU profiles there when they stop), BENCH_NODE_ARGS
 * (extra node options for every target, space-separated), BENCH_ROUNDS (1: rounds of the
 * load scenarios, added up), BENCH_START_MEMORY (0: skip the
 * idle memory of `npm start`, bench/start-memory.ts, measured after the targets).
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import * as os from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import {
  benchNodeArgs,
  Child,
  expectSuccess,
  killAllNow,
  ROOT,
  serverNodeFlags,
  stopAll,
} from "./children.js";
import {
  assertLoopback,
  createDriver,
  type Endpoints,
  type ListingsDriver,
  type TransportName,
} from "./clients.js";
import { BENCH_OPERATOR_TOKEN, BENCH_PROJECT, LIST_PAGE_SIZE } from "./fixture.js";
import {
  type H2loadOptions,
  type H2loadRequest,
  type H2loadResult,
  h2loadVersion,
  runH2load,
} from "./h2load.js";
import { type LoadOptions, type LoadResult, runLoad } from "./load.js";
import {
  CONNECT_OF_REST,
  LOAD_TRANSPORTS,
  type LoadTransport,
  loadRequest,
  OPERATIONS,
  rpcMethodName,
} from "./requests.js";
import { measureStartMemory } from "./start-memory.js";
import { printTargets } from "./targets.js";

// ---------------------------------------------------------------------------
// configuration

function intEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}`);
  return n;
}

/** The h2load scenarios: connections x streams, requests measured, warm-up requests. */
const H2: H2loadOptions & { warmup: number } = {
  clients: intEnv("BENCH_CONNECTIONS", 16, 1),
  streams: intEnv("BENCH_STREAMS", 32, 1),
  requests: intEnv("BENCH_REQUESTS", 5000, 1),
  warmup: intEnv("BENCH_WARMUP", 1000, 0),
  timeoutMs: 300_000,
};
/** The list-size scenarios measure latency: one caller (the Node gRPC client), no queueing. */
const LATENCY_LOAD: LoadOptions = {
  concurrency: 1,
  maxRequests: intEnv("BENCH_LATENCY_REQUESTS", 1000, 1),
  maxMs: 3000,
};
const LATENCY_WARMUP: LoadOptions = { concurrency: 1, maxRequests: 50, maxMs: 1000 };
const ROW_COUNTS = (process.env.BENCH_ROWS || "1000,100000")
  .split(",")
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);
/** The deep page starts after this fraction of the rows. */
const DEEP_FRACTION = 0.9;
/** Page size of the walk to the deep page. */
const WALK_PAGE_SIZE = 100;

/** BENCH_TRANSPORTS / BENCH_OPERATIONS: a subset of the load scenarios (default all). */
function subset<T extends string>(name: string, all: readonly T[]): readonly T[] {
  const raw = process.env[name];
  if (!raw) return all;
  const picked = raw.split(",").map((s) => s.trim());
  for (const p of picked) {
    if (!(all as readonly string[]).includes(p))
      throw new Error(`${name}: unknown ${p} (one of ${all.join(", ")})`);
  }
  return all.filter((t) => picked.includes(t));
}
const BENCH_LOAD_TRANSPORTS = subset("BENCH_TRANSPORTS", LOAD_TRANSPORTS);
const BENCH_OPERATIONS = subset("BENCH_OPERATIONS", OPERATIONS);
/** BENCH_ROUNDS: how many times each load scenario runs on each target (interleaved; the figures add up). */
const ROUNDS = intEnv("BENCH_ROUNDS", 1, 1);

export type TargetName = "ceiling" | "floor" | "pglite" | "postgres";
const TARGET_NAMES: readonly TargetName[] = ["ceiling", "floor", "postgres", "pglite"];
/** Targets answering constants from bench/ceiling.ts (no server, no credentials, no metrics). */
const bare = (t: TargetName) => t === "ceiling" || t === "floor";
const TARGETS = (process.env.BENCH_TARGETS || TARGET_NAMES.join(","))
  .split(",")
  .map((s) => s.trim())
  .filter((s) => s !== "")
  .map((s) => {
    if (!(TARGET_NAMES as readonly string[]).includes(s)) {
      throw new Error(`BENCH_TARGETS: unknown target ${s} (one of ${TARGET_NAMES.join(", ")})`);
    }
    return s as TargetName;
  });

// ---------------------------------------------------------------------------
// results

export interface Row {
  scenario: string;
  transport: LoadTransport | TransportName;
  backend: TargetName;
  concurrency: number;
  /** For the list-size scenarios: rows in the project, and which page. */
  rows?: number;
  page?: "first" | "deep";
  /** Position (rows skipped) of the deep page. */
  offset?: number;
  result?: LoadResult;
  /** h2load's own summary (the operation scenarios). */
  h2load?: H2loadResult;
  /** One-minute load average of the machine when the scenario started. */
  loadAverage?: number | undefined;
  /** Server RSS after the scenario, bytes. */
  rssBytes?: number;
  /** CPU time per successful request, ms: the server child's and this load process's. */
  serverCpuMsPerRequest?: number;
  clientCpuMsPerRequest?: number;
  /** The child's garbage-collection pauses (main thread) per successful request, ms (bench/gc-meter.mjs). */
  gcMsPerRequest?: number;
  /** The server child's CPU use over the scenario (1 = one core busy). */
  serverCpuShare?: number;
  /** req/s over the ceiling's req/s for the same transport and operation. */
  vsCeiling?: number;
  /** Server CPU per request over the ceiling's. */
  cpuVsCeiling?: number;
  /** REST only: server CPU per request over Connect JSON's (same backend, HTTP version, operation). */
  cpuVsConnect?: number;
  /** For size scenarios with rows > the smallest size: p50 and req/s over the smallest size's. */
  p50VsSmallest?: number;
  rpsVsSmallest?: number;
  error?: string;
}

export interface TargetInfo {
  backend: TargetName;
  pid?: number;
  idleRssBytes?: number;
  startMs?: number;
  seed?: unknown;
  /** The walks to the deep pages: rows skipped, pages of WALK_PAGE_SIZE read, time. */
  walks?: { rows: number; skipped: number; pages: number; ms: number }[];
  error?: string;
}

const rows: Row[] = [];
const targets: TargetInfo[] = [];

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}

function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

// ---------------------------------------------------------------------------
// cleanup: children, scratch database, temp data

const cleanups: (() => Promise<void>)[] = [];
let cleaningUp: Promise<void> | undefined;

function buildServer(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["scripts/build.mjs", "--if-stale"], {
      cwd: ROOT,
      stdio: "inherit",
    });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`npm run build failed (exit code ${code})`)),
    );
  });
}

function cleanup(): Promise<void> {
  cleaningUp ??= (async () => {
    await stopAll();
    for (const fn of cleanups.splice(0).reverse()) {
      await fn().catch((err: unknown) => log(`cleanup failed: ${errorText(err)}`));
    }
  })();
  return cleaningUp;
}

process.on("exit", killAllNow);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping children and cleaning up`);
    setTimeout(() => process.exit(130), 20_000).unref();
    void cleanup().finally(() => process.exit(130));
  });
}

// ---------------------------------------------------------------------------
// targets

interface Running {
  child: Child;
  endpoints: Endpoints;
  /** The credential the load sends: an API key bound to the bench project (the operator's for the ceiling). */
  token: string;
  /** Where bench/gc-meter.mjs reports the child's garbage-collection pauses (Child.gcTotals). */
  gcFile: string;
}

/** The file a target's gc-meter writes to, and the node option that loads it. */
function gcMeter(label: string): { file: string; env: Record<string, string>; nodeArgs: string[] } {
  const file = join(scratchDir(), `gc-${label.replace(/\W+/g, "-")}.json`);
  return { file, env: { BENCH_GC_METER_FILE: file }, nodeArgs: ["--import", "./bench/gc-meter.mjs"] };
}

let scratch: string | undefined;
/** A temporary directory of this run (removed at cleanup). */
function scratchDir(): string {
  if (scratch === undefined) {
    const dir = mkdtempSync(join(os.tmpdir(), "switchboard-bench-gc-"));
    scratch = dir;
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
  }
  return scratch;
}

function serverEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of [
    "DATABASE_URL",
    "TEST_DATABASE_URL",
    "TLS_CERT_FILE",
    "TLS_KEY_FILE",
    "PORT",
    "HOST",
    "DATA_DIR",
    "CORS_ALLOWED_ORIGINS",
    "LOG_LEVEL",
    "SWITCHBOARD_OPERATOR_TOKEN",
    "NODE_OPTIONS",
  ]) {
    delete env[key];
  }
  return { ...env, NODE_ENV: "production", SIP_PORT: "0", ...extra };
}

async function waitReady(child: Child, base: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    if (!child.running) throw new Error(child.describeExit());
    try {
      const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = errorText(err);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${child.label}: not ready after ${timeoutMs} ms (${last})`);
}

/** bench/ceiling.ts: the ceiling, or with `floorUrl` the floor (one PostgreSQL statement per request). */
async function startCeiling(floorUrl?: string): Promise<Running> {
  const label = floorUrl === undefined ? "ceiling" : "floor";
  const gc = gcMeter(label);
  const env = { ...gc.env, ...(floorUrl === undefined ? {} : { FLOOR_DATABASE_URL: floorUrl }) };
  // The server's own node flags (npm start's), so that the ratios compare code, not V8 settings:
  // `--max-semi-space-size` alone moves the floor's CPU per request by 10-25% (docs/performance.md).
  const child = new Child(label, "bench/ceiling.ts", serverEnv(env), [], {
    nodeArgs: [...serverNodeFlags(), ...gc.nodeArgs, ...benchNodeArgs(), ...cpuProfArgs(label)],
  });
  const ports = await child.waitForLine((line) => {
    const parsed = JSON.parse(line) as { ceiling?: { h2: number; h1: number } };
    return parsed.ceiling;
  }, 60_000);
  return {
    child,
    endpoints: { h2: `http://127.0.0.1:${ports.h2}`, h1: `http://127.0.0.1:${ports.h1}` },
    token: BENCH_OPERATOR_TOKEN,
    gcFile: gc.file,
  };
}

/** Seeds the database `env` names (before the server owns it), then starts the server on it. */
async function startServer(backend: "pglite" | "postgres", env: Record<string, string>): Promise<Running> {
  const info = targets.find((t) => t.backend === backend)!;
  const projects = Object.fromEntries(ROW_COUNTS.map((n) => [sizeProject(n), n]));
  log(`${backend}: seeding ${ROW_COUNTS.map((n) => n.toLocaleString("en")).join(" + ")} listings`);
  const seed = new Child(`${backend} seed`, "bench/seed.ts", serverEnv(env), [JSON.stringify(projects)]);
  const seeded = seed.waitForLine((line) => JSON.parse(line) as unknown, 300_000);
  await expectSuccess(seed, 300_000);
  info.seed = await seeded;

  log(`${backend}: starting the server`);
  const started = performance.now();
  const gc = gcMeter(backend);
  const child = new Child(
    `${backend} server`,
    "dist/server.js",
    serverEnv({
      ...env,
      ...gc.env,
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      SWITCHBOARD_OPERATOR_TOKEN: BENCH_OPERATOR_TOKEN,
      // Required with DATABASE_URL (download links of recordings).
      RECORDING_LINK_SECRET: "bench-recording-link-secret-0123456789",
      // The load is one API key on one project, far above the default limits.
      RATE_LIMIT_PROJECT_PER_SECOND: "0",
      RATE_LIMIT_API_KEY_PER_SECOND: "0",
    }),
    [],
    { compiled: true, nodeArgs: [...gc.nodeArgs, ...benchNodeArgs(), ...cpuProfArgs(backend)] },
  );
  const address = await child.waitForLine((line) => {
    const parsed = JSON.parse(line) as { msg?: string; url?: string };
    return parsed.msg === "switchboard listening" ? parsed.url : undefined;
  }, 120_000);
  const base = assertLoopback(address).origin;
  await waitReady(child, base, 60_000);
  info.startMs = Math.round(performance.now() - started);

  const res = await fetch(`${base}/admin/v1/projects?projectId=${BENCH_PROJECT}`, {
    method: "POST",
    headers: { authorization: `Bearer ${BENCH_OPERATOR_TOKEN}`, "content-type": "application/json" },
    body: "{}",
    signal: AbortSignal.timeout(30_000),
  });
  if (!res.ok) throw new Error(`creating project ${BENCH_PROJECT}: HTTP ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
  return { child, endpoints: { h2: base, h1: base }, token: await createApiKey(base), gcFile: gc.file };
}

/** An API key with roles/owner on the bench project: what a real client authenticates with. */
async function createApiKey(base: string): Promise<string> {
  const res = await fetch(`${base}/admin/v1/apiKeys`, {
    method: "POST",
    headers: { authorization: `Bearer ${BENCH_OPERATOR_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      displayName: "bench",
      bindings: [{ project: `projects/${BENCH_PROJECT}`, roles: ["roles/owner"] }],
    }),
    signal: AbortSignal.timeout(30_000),
  });
  if (!res.ok) throw new Error(`creating an API key: HTTP ${res.status} ${await res.text()}`);
  const key = (await res.json()) as { secret?: unknown };
  if (typeof key.secret !== "string") throw new Error("creating an API key: no secret in the answer");
  return key.secret;
}

/** BENCH_CPU_PROF=<dir>: the server (and the ceiling) writes a V8 CPU profile there when it stops. */
function cpuProfArgs(backend: string): string[] {
  const dir = process.env.BENCH_CPU_PROF;
  if (!dir) return [];
  log(`${backend}: the server writes a CPU profile to ${dir} when it stops`);
  return ["--cpu-prof", `--cpu-prof-dir=${dir}`];
}

/** 1000 -> "1k", 100000 -> "100k", 1234 -> "1234". */
function count(n: number): string {
  return n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n);
}

function sizeProject(n: number): string {
  return `rows-${n}`;
}

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]", ""]);

/** A scratch database on the PostgreSQL server of `adminUrl`, dropped at cleanup. */
async function scratchDatabase(adminUrl: string): Promise<string> {
  const url = new URL(adminUrl);
  if (!LOOPBACK_HOSTS.has(url.hostname)) {
    throw new Error(`refusing PostgreSQL at ${url.hostname}: the benchmark only talks to 127.0.0.1`);
  }
  const name = `sb_bench_${randomBytes(5).toString("hex")}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  cleanups.push(async () => {
    const a = postgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 10 });
    try {
      await a.unsafe(`drop database if exists ${name} with (force)`);
      log(`postgres: dropped ${name}`);
    } finally {
      await a.end({ timeout: 5 });
    }
  });
  url.pathname = `/${name}`;
  return url.toString();
}

// ---------------------------------------------------------------------------
// scenarios

async function measure(
  label: string,
  row: Row,
  child: Child,
  call: (i: number) => Promise<unknown>,
  load: LoadOptions,
  warmup: LoadOptions,
): Promise<void> {
  rows.push(row);
  try {
    if (!child.running) throw new Error(child.describeExit());
    if (warmup.maxRequests > 0) await runLoad(call, warmup);
    const serverCpu0 = child.cpuMs();
    const clientCpu0 = process.cpuUsage();
    const result = await runLoad(call, load);
    const serverCpu1 = child.cpuMs();
    const clientCpu = process.cpuUsage(clientCpu0);
    row.result = result;
    if (result.ok > 0) {
      row.clientCpuMsPerRequest = (clientCpu.user + clientCpu.system) / 1000 / result.ok;
      if (serverCpu0 !== undefined && serverCpu1 !== undefined) {
        row.serverCpuMsPerRequest = (serverCpu1 - serverCpu0) / result.ok;
        row.serverCpuShare = (serverCpu1 - serverCpu0) / result.elapsedMs;
      }
    }
    const rss = child.rssBytes();
    if (rss !== undefined) row.rssBytes = rss;
    if (result.ok === 0) throw new Error(result.firstError ?? "no request succeeded");
    if (!child.running) throw new Error(child.describeExit());
    const logged = result.errors > 0 ? child.takeLoggedError() : undefined;
    const errs =
      result.errors > 0
        ? `, ${result.errors} errors (${result.firstError}${logged ? ` [server log: ${logged}]` : ""})`
        : "";
    const cpu =
      row.serverCpuMsPerRequest === undefined
        ? ""
        : `, server ${row.serverCpuMsPerRequest.toFixed(2)} ms CPU/req (${((row.serverCpuShare ?? 0) * 100).toFixed(0)}% of a core)`;
    log(
      `${label}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms${cpu}${errs}`,
    );
  } catch (err) {
    const logged = child.takeLoggedError();
    row.error = errorText(err) + (logged ? ` [server log: ${logged}]` : "");
    log(`${label}: FAILED: ${row.error}`);
  }
}

/** Non-OK answers of RegulatoryListings `method` counted by the server so far (GET /metrics). */
async function serverErrors(base: string, method: string): Promise<number | undefined> {
  try {
    const res = await fetch(`${base}/metrics`, {
      headers: { authorization: `Bearer ${BENCH_OPERATOR_TOKEN}` },
      signal: AbortSignal.timeout(10_000),
    });
    if (!res.ok) return undefined;
    let n = 0;
    for (const line of (await res.text()).split("\n")) {
      if (!line.startsWith("switchboard_requests_total{")) continue;
      if (!line.includes(`method="${method}"`) || !line.includes("RegulatoryListings")) continue;
      if (/code="(ok|OK)"/.test(line)) continue;
      n += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
    return n;
  } catch {
    return undefined;
  }
}

/** What a row's rounds add up to (operationScenarios runs a scenario BENCH_ROUNDS times). */
interface Totals {
  requests: number;
  ok: number;
  failed: number;
  elapsedMs: number;
  /** Server CPU over the rounds; undefined once a round could not read it. */
  cpuMs: number | undefined;
  /** h2load's mean request time times its requests, summed. */
  meanTimesRequests: number;
  /** GC pauses over the rounds; undefined once a round could not read them. */
  gcMs: number | undefined;
}
const totals = new WeakMap<Row, Totals>();

/**
 * One h2load scenario: a warm-up run, then the measured run with the server's
 * CPU read around it. A row measured again (the next round) adds up: its
 * figures are those of all its rounds together.
 */
async function measureH2load(
  label: string,
  row: Row,
  running: Running,
  request: H2loadRequest,
  method: string,
): Promise<void> {
  const child = running.child;
  const base = running.endpoints.h1;
  const withMetrics = !bare(row.backend);
  try {
    if (!child.running) throw new Error(child.describeExit());
    row.loadAverage = os.loadavg()[0];
    if (H2.warmup > 0) await runH2load(request, { ...H2, requests: H2.warmup });
    const errors0 = withMetrics ? await serverErrors(base, method) : 0;
    const gc0 = await child.gcTotals(running.gcFile);
    const serverCpu0 = child.cpuMs();
    const result = await runH2load(request, H2);
    const serverCpu1 = child.cpuMs();
    const gc1 = await child.gcTotals(running.gcFile);
    const errors1 = withMetrics ? await serverErrors(base, method) : 0;
    row.h2load = result;
    const rpcErrors = errors0 !== undefined && errors1 !== undefined ? errors1 - errors0 : undefined;
    const failed = result.requests - result.status2xx + (rpcErrors ?? 0);
    const ok = result.requests - failed;
    const cpuMs = serverCpu0 !== undefined && serverCpu1 !== undefined ? serverCpu1 - serverCpu0 : undefined;
    const before = totals.get(row);
    // A figure of the rounds: unknown from the first round that could not read it.
    const addUp = (sofar: number | undefined, now: number | undefined) =>
      (before !== undefined && sofar === undefined) || now === undefined ? undefined : (sofar ?? 0) + now;
    const t: Totals = {
      requests: (before?.requests ?? 0) + result.requests,
      ok: (before?.ok ?? 0) + ok,
      failed: (before?.failed ?? 0) + failed,
      elapsedMs: (before?.elapsedMs ?? 0) + result.elapsedMs,
      cpuMs: addUp(before?.cpuMs, cpuMs),
      meanTimesRequests: (before?.meanTimesRequests ?? 0) + result.meanMs * result.requests,
      gcMs: addUp(before?.gcMs, gc0 === undefined || gc1 === undefined ? undefined : gc1 - gc0),
    };
    totals.set(row, t);
    row.result = {
      ok: t.ok,
      errors: t.failed,
      firstError:
        t.failed > 0
          ? `${t.failed} failed (HTTP non-2xx or a non-OK code in the server's metrics)`
          : undefined,
      elapsedMs: t.elapsedMs,
      rps: (t.requests * 1000) / t.elapsedMs,
      p50: Number.NaN,
      p99: Number.NaN,
      mean: t.meanTimesRequests / t.requests,
    };
    if (t.ok > 0 && t.cpuMs !== undefined) {
      row.serverCpuMsPerRequest = t.cpuMs / t.ok;
      row.serverCpuShare = t.cpuMs / t.elapsedMs;
    }
    if (t.ok > 0 && t.gcMs !== undefined) row.gcMsPerRequest = t.gcMs / t.ok;
    const rss = child.rssBytes();
    if (rss !== undefined) row.rssBytes = rss;
    if (ok === 0) throw new Error(row.result.firstError ?? "no request succeeded");
    if (!child.running) throw new Error(child.describeExit());
    if (failed > 0) {
      const logged = child.takeLoggedError();
      row.error = `${row.result.firstError}${logged ? ` [server log: ${logged}]` : ""}`;
    }
    const cpu =
      cpuMs === undefined || ok === 0
        ? ""
        : `, server ${(cpuMs / ok).toFixed(3)} ms CPU/req (${((cpuMs / result.elapsedMs) * 100).toFixed(0)}% of a core)`;
    log(
      `${label}: ${result.rps.toFixed(0)} req/s, mean ${result.meanMs.toFixed(1)} ms${cpu}, load average ${row.loadAverage?.toFixed(1)}${failed > 0 ? `, ${failed} FAILED` : ""}`,
    );
  } catch (err) {
    const logged = child.takeLoggedError();
    row.error = errorText(err) + (logged ? ` [server log: ${logged}]` : "");
    log(`${label}: FAILED: ${row.error}`);
  }
}

/** A listing for the get scenarios (and full pages for the list ones); a check that the server answers. */
async function seedOperations(backend: TargetName, running: Running): Promise<string> {
  let getName = `projects/${BENCH_PROJECT}/regulatoryListings/c000000000000000`;
  if (bare(backend)) return getName;
  const driver = createDriver("grpc", running.endpoints, running.token, 1);
  try {
    getName = await driver.create(BENCH_PROJECT);
    for (let i = 1; i < LIST_PAGE_SIZE; i++) await driver.create(BENCH_PROJECT);
  } finally {
    driver.close();
  }
  return getName;
}

/**
 * The h2load scenarios, interleaved: each transport and operation runs on
 * every target in turn, BENCH_ROUNDS times (the order reversed every other
 * round), so that the ratios between targets compare runs seconds apart,
 * not minutes: this machine's speed drifts by 10-20% within minutes.
 */
async function operationScenarios(started: readonly Started[]): Promise<void> {
  for (let round = 0; round < ROUNDS; round++) {
    for (const transport of BENCH_LOAD_TRANSPORTS) {
      for (const op of BENCH_OPERATIONS) {
        const order = round % 2 === 0 ? started : [...started].reverse();
        for (const { backend, running, getName } of order) {
          const endpoint = transport.endsWith("-h1") ? running.endpoints.h1 : running.endpoints.h2;
          const request = loadRequest(transport, op, endpoint, running.token, BENCH_PROJECT, getName);
          let row = rows.find((r) => r.backend === backend && r.transport === transport && r.scenario === op);
          if (row === undefined) {
            row = {
              scenario: op,
              transport,
              backend,
              concurrency: transport.endsWith("-h1") ? H2.clients : H2.clients * H2.streams,
            };
            rows.push(row);
          }
          const label = `${backend} ${transport} ${op}${ROUNDS > 1 ? ` (round ${round + 1} of ${ROUNDS})` : ""}`;
          await measureH2load(label, row, running, request, rpcMethodName(op));
        }
      }
    }
  }
}

/** Walks pages of WALK_PAGE_SIZE until at least `skip` rows are behind; returns the token. */
async function walkTo(driver: ListingsDriver, project: string, skip: number) {
  const started = performance.now();
  let token = "";
  let seen = 0;
  let pages = 0;
  while (seen < skip) {
    const page = await driver.list(project, Math.min(WALK_PAGE_SIZE, skip - seen), token);
    seen += page.count;
    pages++;
    token = page.nextPageToken;
    if (token === "") throw new Error(`${project}: ran out of pages after ${seen} rows`);
  }
  return { token, seen, pages, ms: Math.round(performance.now() - started) };
}

async function sizeScenarios(backend: TargetName, running: Running, info: TargetInfo): Promise<void> {
  const transport: TransportName = "grpc";
  // The size projects are not the API key's: the operator reads them.
  const driver = createDriver(transport, running.endpoints, BENCH_OPERATOR_TOKEN, 1);
  info.walks = [];
  const base = { transport, backend, concurrency: LATENCY_LOAD.concurrency };
  try {
    for (const n of ROW_COUNTS) {
      const project = sizeProject(n);
      const size = count(n);
      const listPage = async (token: string) => {
        const page = await driver.list(project, LIST_PAGE_SIZE, token);
        if (page.count !== LIST_PAGE_SIZE)
          throw new Error(`list: ${page.count} items, not ${LIST_PAGE_SIZE}`);
      };
      const firstRow: Row = {
        ...base,
        scenario: `list ${size} rows, first page`,
        rows: n,
        page: "first",
        offset: 0,
      };
      await measure(
        `${backend} ${transport} ${firstRow.scenario}`,
        firstRow,
        running.child,
        () => listPage(""),
        LATENCY_LOAD,
        LATENCY_WARMUP,
      );
      const deepRow: Row = { ...base, scenario: `list ${size} rows, deep page`, rows: n, page: "deep" };
      try {
        const skip = Math.min(n - LIST_PAGE_SIZE, Math.floor(n * DEEP_FRACTION));
        const walk = await walkTo(driver, project, skip);
        info.walks.push({ rows: n, skipped: walk.seen, pages: walk.pages, ms: walk.ms });
        log(
          `${backend}: walked ${walk.pages} pages of ${WALK_PAGE_SIZE} to row ${walk.seen} in ${walk.ms} ms`,
        );
        deepRow.offset = walk.seen;
        deepRow.scenario = `list ${size} rows, page at ${count(walk.seen)}`;
        await measure(
          `${backend} ${transport} ${deepRow.scenario}`,
          deepRow,
          running.child,
          () => listPage(walk.token),
          LATENCY_LOAD,
          LATENCY_WARMUP,
        );
      } catch (err) {
        deepRow.error = errorText(err);
        rows.push(deepRow);
        log(`${backend} ${deepRow.scenario}: FAILED: ${deepRow.error}`);
      }
    }
  } finally {
    driver.close();
  }
}

/** A target started and seeded, its scenarios still to run. */
interface Started {
  backend: TargetName;
  info: TargetInfo;
  running: Running;
  getName: string;
}

/** Starts `backend` (undefined when it cannot run here, or failed: then info says why). */
async function startTarget(backend: TargetName, dataRoot: string): Promise<Started | undefined> {
  const info: TargetInfo = { backend };
  targets.push(info);
  let running: Running | undefined;
  try {
    if (backend === "ceiling") {
      running = await startCeiling();
    } else if (backend === "floor") {
      const adminUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
      if (!adminUrl) {
        log("floor: skipped (set TEST_DATABASE_URL or DATABASE_URL)");
        targets.pop();
        return undefined;
      }
      running = await startCeiling(await scratchDatabase(adminUrl));
    } else if (backend === "pglite") {
      const dataDir = join(dataRoot, "pglite");
      await mkdir(dataDir, { recursive: true });
      running = await startServer("pglite", { DATA_DIR: dataDir });
    } else {
      const adminUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
      if (!adminUrl) {
        log("postgres: skipped (set TEST_DATABASE_URL or DATABASE_URL)");
        targets.pop();
        return undefined;
      }
      const url = await scratchDatabase(adminUrl);
      running = await startServer("postgres", { DATABASE_URL: url, DATA_DIR: join(dataRoot, "postgres") });
    }
    info.pid = running.child.pid;
    const idle = running.child.rssBytes();
    if (idle !== undefined) info.idleRssBytes = idle;
    log(`${backend}: pid ${running.child.pid}, ${running.endpoints.h1}`);
    return { backend, info, running, getName: await seedOperations(backend, running) };
  } catch (err) {
    info.error = errorText(err);
    log(`${backend}: FAILED: ${info.error}`);
    await running?.child.stop();
    return undefined;
  }
}

/** Every target started, the load scenarios interleaved across them, then each one's list sizes. */
async function runTargets(dataRoot: string): Promise<void> {
  const started: Started[] = [];
  try {
    for (const backend of TARGETS) {
      const s = await startTarget(backend, dataRoot);
      if (s !== undefined) started.push(s);
    }
    await operationScenarios(started);
    for (const { backend, running, info } of started) {
      if (bare(backend) || ROW_COUNTS.length === 0) continue;
      try {
        await sizeScenarios(backend, running, info);
      } catch (err) {
        info.error = errorText(err);
        log(`${backend}: FAILED: ${info.error}`);
      }
    }
  } finally {
    for (const { running } of started) await running.child.stop();
  }
}

// ---------------------------------------------------------------------------
// report

function computeRatios(): void {
  const ceiling = (transport: string, op: string) =>
    rows.find((r) => r.backend === "ceiling" && r.transport === transport && r.scenario === op);
  const smallest = Math.min(...ROW_COUNTS);
  for (const r of rows) {
    if (!r.result || r.result.ok === 0) continue;
    if (r.page === undefined && r.backend !== "ceiling") {
      const c = ceiling(r.transport, r.scenario);
      if (c?.result && c.result.ok > 0) r.vsCeiling = r.result.rps / c.result.rps;
      if (c?.serverCpuMsPerRequest && r.serverCpuMsPerRequest !== undefined) {
        r.cpuVsCeiling = r.serverCpuMsPerRequest / c.serverCpuMsPerRequest;
      }
      const connectTransport = CONNECT_OF_REST[r.transport as LoadTransport];
      const connect = rows.find(
        (x) =>
          x.backend === r.backend &&
          x.transport === connectTransport &&
          x.scenario === r.scenario &&
          x.page === undefined,
      );
      if (connect?.serverCpuMsPerRequest && r.serverCpuMsPerRequest !== undefined) {
        r.cpuVsConnect = r.serverCpuMsPerRequest / connect.serverCpuMsPerRequest;
      }
    }
    if (r.rows !== undefined && r.rows !== smallest) {
      const base = rows.find(
        (s) => s.backend === r.backend && s.rows === smallest && s.page === r.page && s.result,
      )?.result;
      if (base && base.ok > 0) {
        r.p50VsSmallest = r.result.p50 / base.p50;
        r.rpsVsSmallest = r.result.rps / base.rps;
      }
    }
  }
}

function table(): string {
  const header = [
    "scenario",
    "transport",
    "backend",
    "conc",
    "req/s",
    "mean ms",
    "p50 ms",
    "p99 ms",
    "errors",
    "RSS MB",
    "srv CPU ms/req",
    "GC ms/req",
    "load CPU ms/req",
    "req/s vs ceiling",
    "srv CPU vs ceiling",
    "REST CPU vs Connect",
    "vs smallest size",
  ];
  const fmt = (n: number | undefined, digits: number, suffix = "") =>
    n === undefined || Number.isNaN(n) ? "" : `${n.toFixed(digits)}${suffix}`;
  const body = rows.map((r) => {
    const res = r.result;
    const ok = res !== undefined && res.ok > 0 && r.error === undefined;
    return [
      r.scenario,
      r.transport,
      r.backend,
      String(r.concurrency),
      ok ? res.rps.toFixed(0) : "FAILED",
      ok ? fmt(res.mean, 2) : "",
      ok ? fmt(res.p50, 2) : "",
      ok ? fmt(res.p99, 2) : "",
      res ? String(res.errors) : "",
      r.rssBytes === undefined ? "" : (r.rssBytes / 1048576).toFixed(0),
      fmt(r.serverCpuMsPerRequest, 3),
      fmt(r.gcMsPerRequest, 3),
      fmt(r.clientCpuMsPerRequest, 2),
      fmt(r.vsCeiling, 2, "x"),
      fmt(r.cpuVsCeiling, 2, "x"),
      fmt(r.cpuVsConnect, 2, "x"),
      r.p50VsSmallest === undefined
        ? ""
        : `p50 ${r.p50VsSmallest.toFixed(2)}x, req/s ${r.rpsVsSmallest?.toFixed(2)}x`,
    ];
  });
  const all = [header, ...body];
  const widths = header.map((_, i) => Math.max(...all.map((line) => line[i]!.length)));
  const text = new Set([0, 1, 2, 16]);
  const render = (line: string[]) =>
    line
      .map((cell, i) => (text.has(i) ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join("  ")
      .trimEnd();
  const out = [render(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(render)];
  out.push(
    "",
    `create/get/list: h2load (${H2.clients} connections x ${H2.streams} streams on HTTP/2, ${H2.clients} connections on`,
    `HTTP/1.1 (-h1), ${H2.requests} requests after ${H2.warmup} of warm-up, ${ROUNDS} round(s) each, the targets taking`,
    `turns scenario by scenario, every target under npm start's node flags); mean ms: h2load's mean request time. conc:`,
    `requests in flight. The list-size rows: the Node gRPC client, one caller (p50/p99 seen by the caller).`,
    `RSS: VmRSS of the server process after the scenario. srv CPU ms/req: user+system CPU of the server`,
    `process per request, from /proc (on postgres, not counting the database server's own CPU); GC ms/req: its main`,
    `thread's garbage-collection pauses per request (perf_hooks, bench/gc-meter.mjs); load CPU ms/req:`,
    `the Node load process's, list-size rows only. vs ceiling: req/s over, and server CPU per request over, the`,
    `ceiling's for the same transport and operation. REST CPU vs Connect: REST's server CPU per request over`,
    `Connect JSON's on the same HTTP version. vs smallest size: the same list on`,
    `${ROW_COUNTS.length > 0 ? count(Math.min(...ROW_COUNTS)) : "-"} rows (first page vs first page, deep page vs deep page), one caller.`,
  );
  const failures = rows.filter((r) => r.error !== undefined);
  const failedTargets = targets.filter((t) => t.error !== undefined);
  if (failures.length > 0 || failedTargets.length > 0) {
    out.push("", "failures:");
    for (const r of failures) out.push(`  ${r.backend} ${r.transport} ${r.scenario}: ${r.error}`);
    for (const t of failedTargets) out.push(`  ${t.backend}: ${t.error}`);
  }
  return out.join("\n");
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const dataRoot = await mkdtemp(join(os.tmpdir(), "switchboard-bench-data-"));
  cleanups.push(() => rm(dataRoot, { recursive: true, force: true }));
  const h2load = await h2loadVersion();
  if (TARGETS.some((t) => !bare(t))) {
    log("building the server (npm run build, if stale): the bench runs the compiled dist/server.js");
    await buildServer();
  }
  log(
    `${h2load}: ${H2.clients} connections x ${H2.streams} streams, ${H2.requests} requests per scenario ` +
      `(after ${H2.warmup} of warm-up), ${ROUNDS} round(s), targets interleaved; list sizes ${ROW_COUNTS.map(count).join(", ")} ` +
      `with 1 caller; node ${process.version}, ${os.cpus().length} cpus, load average ${os.loadavg()[0]?.toFixed(1)}`,
  );

  await runTargets(dataRoot);
  computeRatios();
  await cleanup();

  const text = table();
  process.stdout.write(`\n${text}\n`);
  process.stdout.write(`\n${printTargets(rows, targets)}\n`);
  // What the README's start command holds idle (bench/start-memory.ts); BENCH_START_MEMORY=0 skips it.
  const startMemory = process.env.BENCH_START_MEMORY === "0" ? undefined : await measureStartMemory();
  if (startMemory) process.stdout.write(`\n${startMemory.text}\n`);
  const resultsDir = await mkdtemp(join(os.tmpdir(), "switchboard-bench-"));
  const resultsFile = join(resultsDir, "results.json");
  const report = {
    startedAt: startedAt.toISOString(),
    durationMs: Date.now() - startedAt.getTime(),
    machine: {
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      loadAverageAtEnd: os.loadavg(),
    },
    config: {
      h2load: { version: h2load, ...H2 },
      latencyLoad: LATENCY_LOAD,
      latencyWarmup: LATENCY_WARMUP,
      walkPageSize: WALK_PAGE_SIZE,
      rowCounts: ROW_COUNTS,
      listPageSize: LIST_PAGE_SIZE,
      deepFraction: DEEP_FRACTION,
    },
    targets,
    rows,
    startMemory: startMemory?.results,
  };
  await writeFile(resultsFile, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(
    `\nload average now ${os.loadavg()[0]?.toFixed(1)} on ${os.cpus().length} cores (a shared machine: numbers are noisy)\n` +
      `results: ${resultsFile}\n`,
  );
}

main().then(
  () => process.exit(0),
  async (err: unknown) => {
    log(`failed: ${errorText(err)}`);
    await cleanup();
    process.exit(1);
  },
);
