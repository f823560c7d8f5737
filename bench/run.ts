/**
 * `npm run bench`: throughput and latency of the real server against the
 * framework's ceiling. A benchmark, not a test: it asserts nothing about
 * speed.
 *
 * Targets, each a separate child process driven by this (load) process:
 * - ceiling:  bench/ceiling.ts, bare connect-node + bare REST handler, constant answers;
 * - pglite:   src/server.ts on a fresh PGlite data directory (a temp dir);
 * - postgres: src/server.ts on a scratch database `sb_bench_<random>` created
 *             on TEST_DATABASE_URL (or DATABASE_URL) and dropped afterwards.
 *
 * Scenarios: create / get / list (first page) of regulatory listings over
 * gRPC (HTTP/2), Connect JSON (HTTP/1.1) and REST (fetch, keep-alive), with
 * BENCH_CONCURRENCY callers, each bounded by a request count and a time
 * limit; then, on each database backend, list latency (one caller, so no
 * queueing) on projects of 1,000 and 100,000 seeded listings: the first page
 * and a deep page reached through page tokens.
 *
 * Besides req/s and latency it records the CPU time per request of the
 * server child (/proc/<pid>/stat) and of this load process: on a shared
 * 2-core machine req/s moves with whatever else runs, CPU per request much
 * less.
 *
 * Knobs (env): BENCH_CONCURRENCY (16), BENCH_REQUESTS (3000), BENCH_SECONDS
 * (5), BENCH_WARMUP (200 requests, at most 1 s), BENCH_ROWS ("1000,100000"),
 * BENCH_TARGETS ("ceiling,pglite,postgres").
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import * as os from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { Child, expectSuccess, killAllNow, stopAll } from "./children.js";
import {
  assertLoopback,
  createDriver,
  type Endpoints,
  type ListingsDriver,
  TRANSPORTS,
  type TransportName,
} from "./clients.js";
import { BENCH_OPERATOR_TOKEN, BENCH_PROJECT, LIST_PAGE_SIZE } from "./fixture.js";
import { type LoadOptions, type LoadResult, runLoad } from "./load.js";

// ---------------------------------------------------------------------------
// configuration

function intEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}`);
  return n;
}

const CONCURRENCY = intEnv("BENCH_CONCURRENCY", 16, 1);
const LOAD: LoadOptions = {
  concurrency: CONCURRENCY,
  maxRequests: intEnv("BENCH_REQUESTS", 3000, 1),
  maxMs: intEnv("BENCH_SECONDS", 5, 1) * 1000,
};
const WARMUP: LoadOptions = {
  concurrency: CONCURRENCY,
  maxRequests: intEnv("BENCH_WARMUP", 200, 0),
  maxMs: 1000,
};
/** The list-size scenarios measure latency: one caller, shorter. */
const LATENCY_LOAD: LoadOptions = { concurrency: 1, maxRequests: LOAD.maxRequests, maxMs: 3000 };
const LATENCY_WARMUP: LoadOptions = {
  concurrency: 1,
  maxRequests: Math.min(WARMUP.maxRequests, 50),
  maxMs: 1000,
};
const ROW_COUNTS = (process.env.BENCH_ROWS || "1000,100000")
  .split(",")
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);
/** The deep page starts after this fraction of the rows. */
const DEEP_FRACTION = 0.9;
/** Page size of the walk to the deep page. */
const WALK_PAGE_SIZE = 100;

type TargetName = "ceiling" | "pglite" | "postgres";
const TARGET_NAMES: readonly TargetName[] = ["ceiling", "pglite", "postgres"];
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

type Operation = "create" | "get" | "list";
const OPERATIONS: readonly Operation[] = ["create", "get", "list"];

// ---------------------------------------------------------------------------
// results

interface Row {
  scenario: string;
  transport: TransportName;
  backend: TargetName;
  concurrency: number;
  /** For the list-size scenarios: rows in the project, and which page. */
  rows?: number;
  page?: "first" | "deep";
  /** Position (rows skipped) of the deep page. */
  offset?: number;
  result?: LoadResult;
  /** Server RSS after the scenario, bytes. */
  rssBytes?: number;
  /** CPU time per successful request, ms: the server child's and this load process's. */
  serverCpuMsPerRequest?: number;
  clientCpuMsPerRequest?: number;
  /** The server child's CPU use over the scenario (1 = one core busy). */
  serverCpuShare?: number;
  /** req/s over the ceiling's req/s for the same transport and operation. */
  vsCeiling?: number;
  /** Server CPU per request over the ceiling's. */
  cpuVsCeiling?: number;
  /** For size scenarios with rows > the smallest size: p50 and req/s over the smallest size's. */
  p50VsSmallest?: number;
  rpsVsSmallest?: number;
  error?: string;
}

interface TargetInfo {
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
  return { ...env, NODE_ENV: "production", ...extra };
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

async function startCeiling(): Promise<Running> {
  const child = new Child("ceiling", "bench/ceiling.ts", serverEnv({}));
  const ports = await child.waitForLine((line) => {
    const parsed = JSON.parse(line) as { ceiling?: { h2: number; h1: number } };
    return parsed.ceiling;
  }, 60_000);
  return {
    child,
    endpoints: { h2: `http://127.0.0.1:${ports.h2}`, h1: `http://127.0.0.1:${ports.h1}` },
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
  const child = new Child(
    `${backend} server`,
    "src/server.ts",
    serverEnv({
      ...env,
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      SWITCHBOARD_OPERATOR_TOKEN: BENCH_OPERATOR_TOKEN,
      // Required with DATABASE_URL (download links of recordings).
      RECORDING_LINK_SECRET: "bench-recording-link-secret-0123456789",
    }),
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
  return { child, endpoints: { h2: base, h1: base } };
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
  load = LOAD,
  warmup = WARMUP,
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

async function operationScenarios(backend: TargetName, running: Running): Promise<void> {
  const names: string[] = [];
  for (const transport of TRANSPORTS) {
    let driver: ListingsDriver | undefined;
    try {
      driver = createDriver(transport, running.endpoints, BENCH_OPERATOR_TOKEN, CONCURRENCY);
      const d = driver;
      // A few listings to get, whatever happens to the create scenarios.
      if (names.length === 0) {
        for (let i = 0; i < CONCURRENCY; i++) names.push(await d.create(BENCH_PROJECT));
      }
      const calls: Record<Operation, (i: number) => Promise<unknown>> = {
        create: async () => names.push(await d.create(BENCH_PROJECT)),
        get: (i) => d.get(names[i % names.length]!),
        list: async () => {
          const page = await d.list(BENCH_PROJECT, LIST_PAGE_SIZE, "");
          if (page.count !== LIST_PAGE_SIZE)
            throw new Error(`list: ${page.count} items, not ${LIST_PAGE_SIZE}`);
        },
      };
      for (const op of OPERATIONS) {
        const row: Row = { scenario: op, transport, backend, concurrency: LOAD.concurrency };
        await measure(`${backend} ${transport} ${op}`, row, running.child, calls[op]);
      }
    } catch (err) {
      // The transport could not even set up: every scenario of it fails.
      const logged = running.child.takeLoggedError();
      const error = errorText(err) + (logged ? ` [server log: ${logged}]` : "");
      for (const op of OPERATIONS) {
        if (!rows.some((r) => r.backend === backend && r.transport === transport && r.scenario === op)) {
          rows.push({
            scenario: op,
            transport,
            backend,
            concurrency: LOAD.concurrency,
            error,
          });
        }
      }
      log(`${backend} ${transport}: FAILED: ${error}`);
    } finally {
      driver?.close();
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
  const driver = createDriver(transport, running.endpoints, BENCH_OPERATOR_TOKEN, CONCURRENCY);
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

async function runTarget(backend: TargetName, dataRoot: string): Promise<void> {
  const info: TargetInfo = { backend };
  targets.push(info);
  let running: Running | undefined;
  try {
    if (backend === "ceiling") {
      running = await startCeiling();
    } else if (backend === "pglite") {
      const dataDir = join(dataRoot, "pglite");
      await mkdir(dataDir, { recursive: true });
      running = await startServer("pglite", { DATA_DIR: dataDir });
    } else {
      const adminUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
      if (!adminUrl) {
        log("postgres: skipped (set TEST_DATABASE_URL or DATABASE_URL)");
        targets.pop();
        return;
      }
      const url = await scratchDatabase(adminUrl);
      running = await startServer("postgres", { DATABASE_URL: url, DATA_DIR: join(dataRoot, "postgres") });
    }
    info.pid = running.child.pid;
    const idle = running.child.rssBytes();
    if (idle !== undefined) info.idleRssBytes = idle;
    log(`${backend}: pid ${running.child.pid}, ${running.endpoints.h1}`);
    await operationScenarios(backend, running);
    if (backend !== "ceiling" && ROW_COUNTS.length > 0) await sizeScenarios(backend, running, info);
  } catch (err) {
    info.error = errorText(err);
    log(`${backend}: FAILED: ${info.error}`);
  } finally {
    await running?.child.stop();
  }
}

// ---------------------------------------------------------------------------
// report

function computeRatios(): void {
  const ceiling = (transport: TransportName, op: string) =>
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
    "p50 ms",
    "p99 ms",
    "errors",
    "RSS MB",
    "srv CPU ms/req",
    "load CPU ms/req",
    "req/s vs ceiling",
    "srv CPU vs ceiling",
    "vs smallest size",
  ];
  const fmt = (n: number | undefined, digits: number, suffix = "") =>
    n === undefined ? "" : `${n.toFixed(digits)}${suffix}`;
  const body = rows.map((r) => {
    const res = r.result;
    const ok = res !== undefined && res.ok > 0 && r.error === undefined;
    return [
      r.scenario,
      r.transport,
      r.backend,
      String(r.concurrency),
      ok ? res.rps.toFixed(0) : "FAILED",
      ok ? fmt(res.p50, 2) : "",
      ok ? fmt(res.p99, 2) : "",
      res ? String(res.errors) : "",
      r.rssBytes === undefined ? "" : (r.rssBytes / 1048576).toFixed(0),
      fmt(r.serverCpuMsPerRequest, 2),
      fmt(r.clientCpuMsPerRequest, 2),
      fmt(r.vsCeiling, 2, "x"),
      fmt(r.cpuVsCeiling, 1, "x"),
      r.p50VsSmallest === undefined
        ? ""
        : `p50 ${r.p50VsSmallest.toFixed(2)}x, req/s ${r.rpsVsSmallest?.toFixed(2)}x`,
    ];
  });
  const all = [header, ...body];
  const widths = header.map((_, i) => Math.max(...all.map((line) => line[i]!.length)));
  const text = new Set([0, 1, 2, 13]);
  const render = (line: string[]) =>
    line
      .map((cell, i) => (text.has(i) ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join("  ")
      .trimEnd();
  const out = [render(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(render)];
  out.push(
    "",
    `conc: concurrent callers. Latency is seen by the caller. RSS: VmRSS of the server process after the scenario.`,
    `srv CPU ms/req: user+system CPU of the server process per request (on postgres, not counting the database`,
    `server's own CPU); load CPU ms/req: the same for this load process. vs ceiling: req/s over, and server CPU`,
    `per request over, the ceiling's for the same transport and operation. vs smallest size: the same list on`,
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
  log(
    `concurrency ${LOAD.concurrency}, at most ${LOAD.maxRequests} requests or ${LOAD.maxMs / 1000} s per scenario ` +
      `(after a warm-up of ${WARMUP.maxRequests} requests); list sizes ${ROW_COUNTS.map(count).join(", ")} ` +
      `with 1 caller; node ${process.version}, ${os.cpus().length} cpus, load average ${os.loadavg()[0]?.toFixed(1)}`,
  );

  for (const backend of TARGETS) await runTarget(backend, dataRoot);
  computeRatios();
  await cleanup();

  const text = table();
  process.stdout.write(`\n${text}\n`);
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
      load: LOAD,
      warmup: WARMUP,
      latencyLoad: LATENCY_LOAD,
      latencyWarmup: LATENCY_WARMUP,
      walkPageSize: WALK_PAGE_SIZE,
      rowCounts: ROW_COUNTS,
      listPageSize: LIST_PAGE_SIZE,
      deepFraction: DEEP_FRACTION,
    },
    targets,
    rows,
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
