/**
 * The call engine on PostgreSQL with the server in its own process (issue
 * #12, item 4): the compiled dist/server.js as a child (children.ts), so
 * its CPU (/proc/<pid>/stat) is the server's alone; the bench's Connect
 * client, the call handler and the state-update receiver stay in the bench
 * process.
 *
 * Every call asks for its state updates (`options.state_update_uri`) at a
 * local receiver, which notes when each `webhook-id` arrived. The run ends
 * when every call's terminal state update has arrived, so calls/s counts a
 * call once its last update was delivered. Webhook lag is the receipt time
 * minus the event's time (webhook_events.create_time, the commit's clock),
 * read from the database after the run.
 *
 * Transactions per call: pg_stat_database's xact_commit of the scratch
 * database from after the warm-up to after the server exited (its backends
 * flush their counts when they exit), divided by the measured calls; it
 * includes the worker's idle polls and the engine's heartbeat.
 *
 * Topologies (issue #12, item 5): one server (ROLE=all); two ROLE=all
 * replicas on the one database, the calls created through each in turn;
 * ROLE=api (the calls created there, its engine driving them) with a
 * ROLE=worker replica delivering. Server CPU is summed over the processes.
 *
 * Without a `databaseUrl` the server runs on the embedded database (PGlite in
 * its worker thread) in `dataDir` (topology `all` only): nothing else can
 * open that database while the server runs, so the webhook events are read
 * after it exited (PGlite opened here on its data directory) and the
 * transaction counts are not measured. Either way the servers' event-loop
 * delay over the run is read from their /metrics (prom-client's
 * nodejs_eventloop_lag_*, a perf_hooks.monitorEventLoopDelay histogram reset
 * at every scrape): the worst of the listening servers.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import postgres from "postgres";
import { PhoneNumberInstances } from "../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import {
  PhoneNumber_PhoneNumberCapability as Capability,
  PhoneNumber_PhoneNumberType as NumberType,
} from "../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { Calls } from "../gen/enfonica/voice/v1beta1/calls_pb.js";
import { NumberingAdmin } from "../gen/switchboard/admin/v1/numbering_pb.js";
import { Projects } from "../gen/switchboard/admin/v1/projects_pb.js";
import { SimulatorAdmin } from "../gen/switchboard/admin/v1/simulator_pb.js";
import { postgresArgs } from "../src/db/postgres-url.js";
import { benchNodeArgs, Child, procCpuMs, ROOT } from "./children.js";

/** The server processes: `all` one ROLE=all; `all-x2` two of them; `api+worker` ROLE=api and ROLE=worker. */
export type EngineTopology = "all" | "all-x2" | "api+worker";

export const TOPOLOGY_ROLES: Record<EngineTopology, readonly ("all" | "api" | "worker")[]> = {
  all: ["all"],
  "all-x2": ["all", "all"],
  "api+worker": ["api", "worker"],
};

export interface ServerEngineOptions {
  /** Default `all`. */
  topology?: EngineTopology;
  /** The scratch database, migrated; undefined: the embedded database in `dataDir`. */
  databaseUrl?: string;
  dataDir: string;
  calls: number;
  concurrency: number;
  /** Calls created per second at most (paced from the run's start); 0: as fast as the callers go. */
  rate?: number;
  /**
   * Calls made before the measured run, created as it creates them (paced at
   * `rate` when set), all ended before it starts; default 4. A paced run
   * measures the steady state: its first seconds on a server that has just
   * started are the warm-up's figures (`warmUp` in the result).
   */
  warmUp?: number;
  timeScale: string;
  timeoutMs: number;
  /** Extra environment of the server (WEBHOOKS_BATCH_SIZE, ...). */
  serverEnv?: Record<string, string>;
  log: (message: string) => void;
}

export interface ServerEngineResult {
  topology: EngineTopology;
  /** The pace of the creates (calls/s; 0: unpaced). */
  rate: number;
  /** Server processes (their CPU and RSS are summed). */
  processes: number;
  calls: number;
  /** Calls whose terminal state update said COMPLETED. */
  completed: number;
  /** Terminal states other than COMPLETED, "STATE:n ...". */
  otherStates: string;
  seconds: number;
  callsPerSecond: number;
  serverCpuMsPerCall: number;
  /**
   * The PostgreSQL backends serving the servers' connections (the scratch
   * database's, this bench's own excluded): their CPU per call, from
   * /proc/<pid>/stat (PostgreSQL on this machine); NaN on the embedded
   * database, whose CPU is in the server's.
   */
  databaseCpuMsPerCall: number;
  /** The bench process's own CPU (client, handler, receiver) per call. */
  benchCpuMsPerCall: number;
  createP50Ms: number;
  createP99Ms: number;
  handlerRequests: number;
  stateUpdates: number;
  /** webhook_events rows of the measured calls not DELIVERED at the end. */
  undelivered: number;
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
  xactsPerCall: number;
  rowsWrittenPerCall: number;
  serverRssMb: number | undefined;
  /** The server's main event-loop delay over the run (its /metrics), ms. */
  loopP99Ms: number;
  loopMaxMs: number;
  /** Webhook rounds the servers' workers took over the run, by how (switchboard_webhook_events_taken_total). */
  taken: Record<string, number>;
  /** The warm-up calls' webhook lag (the server's first seconds, from idle). */
  warmUp: { calls: number; lagP50Ms: number; lagP99Ms: number; lagMaxMs: number };
  error?: string;
}

const OPERATOR_TOKEN = "bench-operator-token-0123456789abcdef";
const PROJECT_ID = "bench-calls";
const PROJECT = `projects/${PROJECT_ID}`;
const FROM = "+61255501200";
const TO_PREFIX = "+614915702";
const MARKUP = `<?xml version="1.0" encoding="UTF-8"?><Response><Say>Hello</Say><Wait Seconds="1"/></Response>`;
const TERMINAL = new Set(["COMPLETED", "BUSY", "FAILED", "NOT_ANSWERED", "CANCELED"]);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function cpuMsSince(from: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1000;
}

/** `node scripts/build.mjs --if-stale`: the child runs the compiled server. */
export function buildServer(): Promise<void> {
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

interface Receipt {
  at: number;
}

/** The call handler (markup) and the state-update receiver on one loopback server. */
function startReceivers(): Promise<{
  server: Server;
  base: string;
  handled: () => number;
  receipts: Map<string, Receipt>;
  /** call name -> its terminal state, once that update arrived. */
  terminal: Map<string, string>;
}> {
  let handled = 0;
  const receipts = new Map<string, Receipt>();
  const terminal = new Map<string, string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.url === "/call") {
        handled++;
        res.setHeader("content-type", "application/xml");
        res.end(MARKUP);
        return;
      }
      const at = Date.now();
      const id = req.headers["webhook-id"];
      if (typeof id === "string") receipts.set(id, { at });
      try {
        const call = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { name?: string; state?: string };
        if (call.name !== undefined && call.state !== undefined && TERMINAL.has(call.state)) {
          terminal.set(call.name, call.state);
        }
      } catch {
        // not a call: ignored
      }
      res.statusCode = 204;
      res.end();
    });
  });
  server.keepAliveTimeout = 30_000;
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        server,
        base: `http://127.0.0.1:${port}`,
        handled: () => handled,
        receipts,
        terminal,
      });
    });
  });
}

function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

interface Stats {
  xacts: number;
  written: number;
}

/** CPU so far of each backend of the scratch database but the asking one's, by pid. */
async function backendCpu(sql: postgres.Sql): Promise<Map<number, number>> {
  const rows = await sql.unsafe(
    "select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()",
  );
  const cpu = new Map<number, number>();
  for (const r of rows) {
    const ms = procCpuMs(Number(r.pid));
    if (ms !== undefined) cpu.set(Number(r.pid), ms);
  }
  return cpu;
}

async function readStats(sql: postgres.Sql): Promise<Stats> {
  const rows = await sql.unsafe(
    "select xact_commit + xact_rollback as xacts, tup_inserted + tup_updated + tup_deleted as written from pg_stat_database where datname = current_database()",
  );
  return { xacts: Number(rows[0]!.xacts), written: Number(rows[0]!.written) };
}

export async function benchEngineServer(o: ServerEngineOptions): Promise<ServerEngineResult> {
  const receivers = await startReceivers();
  const stats =
    o.databaseUrl === undefined
      ? undefined
      : postgres(...postgresArgs(o.databaseUrl, { max: 1, onnotice: () => {} }));
  const topology = o.topology ?? "all";
  const roles = TOPOLOGY_ROLES[topology];
  const children = roles.map(
    (role, i) =>
      new Child(
        `${o.databaseUrl === undefined ? "pglite" : "postgres"} server ${i + 1} (ROLE=${role})`,
        "dist/server.js",
        {
          ...Object.fromEntries(
            Object.entries(process.env).filter(
              ([k]) => !["NODE_OPTIONS", "TEST_DATABASE_URL", "DATABASE_URL", "BENCH_CPU_PROF"].includes(k),
            ),
          ),
          NODE_ENV: "production",
          ...(o.databaseUrl === undefined ? {} : { DATABASE_URL: o.databaseUrl }),
          DATA_DIR: o.dataDir,
          PORT: "0",
          SIP_PORT: "0",
          HOST: "127.0.0.1",
          LOG_LEVEL: "info",
          ROLE: role,
          SWITCHBOARD_OPERATOR_TOKEN: OPERATOR_TOKEN,
          RECORDING_LINK_SECRET: "bench-recording-link-secret-0123456789abcdef",
          SIMULATOR_TIME_SCALE: o.timeScale,
          WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
          RATE_LIMIT_PROJECT_PER_SECOND: "0",
          RATE_LIMIT_API_KEY_PER_SECOND: "0",
          // The project's calls in flight grow with the rate (Little's law): the default 100 would refuse
          // creates at ~250 calls/s on a loaded machine, which measures the policy, not the engine.
          CALL_CONCURRENCY_LIMIT: process.env.CALL_CONCURRENCY_LIMIT ?? "10000",
          ...o.serverEnv,
        },
        [],
        {
          compiled: true,
          // BENCH_CPU_PROF=<dir>: each server writes a V8 CPU profile there when it stops.
          // BENCH_NODE_ARGS: extra node options for each server (experiments), as `npm run bench` takes.
          nodeArgs: [
            ...(process.env.BENCH_CPU_PROF
              ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
              : []),
            ...benchNodeArgs(),
          ],
        },
      ),
  );
  const cpuMs = () => children.reduce((sum, c) => sum + (c.cpuMs() ?? Number.NaN), 0);
  const stopAll = () => Promise.all(children.map((c) => c.stop()));
  try {
    // Every child's output is watched from now on (a line said before it is watched is missed).
    const started = await Promise.all(
      children.map((child, i) => (roles[i] === "worker" ? workerStarted(child) : discover(child))),
    );
    const bases = started.filter((b): b is string => b !== undefined);
    const transports = bases.map((baseUrl) =>
      createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [bearer(OPERATOR_TOKEN)] }),
    );
    const transport = transports[0]!;
    const clients = transports.map((t) => createClient(Calls, t));
    await createClient(Projects, transport).createProject({ projectId: PROJECT_ID });
    await createClient(NumberingAdmin, transport).createNumberBlock({
      numberBlock: {
        startPhoneNumber: FROM,
        size: 10,
        numberType: NumberType.LOCAL,
        capabilities: [Capability.VOICE],
        countryCode: "AU",
      },
    });
    await createClient(PhoneNumberInstances, transport).createPhoneNumberInstance({
      parent: PROJECT,
      phoneNumberInstance: { phoneNumber: { phoneNumber: FROM } },
    });
    await createClient(SimulatorAdmin, transport).createRoute({
      route: { prefix: TO_PREFIX, ringSeconds: 2, talkSeconds: 3600 },
    });
    // Through each API replica in turn.
    const create = (i: number) =>
      clients[i % clients.length]!.createCall({
        parent: PROJECT,
        call: {
          to: `${TO_PREFIX}${String(i % 100).padStart(2, "0")}`,
          from: FROM,
          options: {
            handlerUris: [`${receivers.base}/call`],
            stateUpdateUri: `${receivers.base}/state`,
            timeoutSeconds: 600,
          },
        },
      });
    const until = async (n: number, deadline: number) => {
      while (receivers.terminal.size < n && performance.now() < deadline) await sleep(5);
    };
    /** Creates calls `first` .. `first + count - 1` (paced at o.rate, if set); their create latencies. */
    const drive = async (first: number, count: number, deadline: number): Promise<number[]> => {
      const latencies: number[] = [];
      const t0 = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(o.concurrency, count) }, async () => {
          while (next < count && performance.now() < deadline) {
            const i = next++;
            // Paced: call i is created no earlier than i / rate seconds into the run.
            const due = o.rate ? t0 + (i * 1000) / o.rate : 0;
            if (due > performance.now()) await sleep(due - performance.now());
            const s = performance.now();
            await create(first + i);
            latencies.push(performance.now() - s);
          }
        }),
      );
      return latencies;
    };
    const warmUp = o.warmUp ?? 4;
    const warmCreated = (await drive(0, warmUp, performance.now() + o.timeoutMs)).length;
    await until(warmCreated, performance.now() + o.timeoutMs);
    // Let the server's backends flush the warm-up's statistics (at most every second).
    await sleep(1_500);
    const before = stats === undefined ? undefined : await readStats(stats);
    const warmNames = new Set(receivers.terminal.keys());

    // A scrape resets the event-loop delay histogram: what the next one reads is the run's.
    const scraped0 = await Promise.all(bases.map(eventLoopDelay));
    const cpu0 = cpuMs();
    const db0 = stats === undefined ? undefined : await backendCpu(stats);
    const own0 = process.cpuUsage();
    const handled0 = receivers.handled();
    const t0 = performance.now();
    const deadline = t0 + o.timeoutMs;
    const latencies = await drive(warmCreated, o.calls, deadline);
    await until(warmCreated + latencies.length, deadline);
    const seconds = (performance.now() - t0) / 1000;
    const serverCpu = cpuMs() - cpu0;
    // Backends that ended during the run are missed (the pools keep theirs); new ones count whole.
    const db1 = stats === undefined ? undefined : await backendCpu(stats);
    const databaseCpu =
      db0 === undefined || db1 === undefined
        ? Number.NaN
        : [...db1].reduce((sum, [pid, ms]) => sum + ms - (db0.get(pid) ?? 0), 0);
    const ownCpu = cpuMsSince(own0);
    const handled = receivers.handled() - handled0;
    const rss = children.reduce((sum, c) => sum + (c.rssBytes() ?? Number.NaN), 0);
    const loops = await Promise.all(bases.map(eventLoopDelay));
    const loop = {
      p99Ms: Math.max(...loops.map((l) => l.p99Ms)),
      maxMs: Math.max(...loops.map((l) => l.maxMs)),
    };
    const taken: Record<string, number> = {};
    for (const [i, l] of loops.entries())
      for (const [how, n] of Object.entries(l.taken))
        taken[how] = (taken[how] ?? 0) + n - (scraped0[i]!.taken[how] ?? 0);
    const timedOut = receivers.terminal.size < warmCreated + latencies.length || latencies.length < o.calls;

    await stopAll();
    await sleep(500);
    const after = stats === undefined ? undefined : await readStats(stats);

    // Lag of every state update of the measured calls.
    const measured = [...receivers.terminal.keys()].filter((n) => !warmNames.has(n));
    const states = new Map<string, number>();
    for (const n of measured) {
      const s = receivers.terminal.get(n)!;
      states.set(s, (states.get(s) ?? 0) + 1);
    }
    const ids = (names: Iterable<string>) => [...names].map((n) => n.slice(n.lastIndexOf("/") + 1));
    const [events, warmEvents] = await stateUpdateEvents(stats, o.dataDir, [ids(measured), ids(warmNames)]);
    const lagsOf = (rows: Record<string, unknown>[]) => {
      const lags: number[] = [];
      for (const e of rows) {
        const r = receivers.receipts.get(String(e.id));
        if (r !== undefined) lags.push(r.at - new Date(e.create_time as string | Date).getTime());
      }
      return lags.sort((a, b) => a - b);
    };
    const lags = lagsOf(events!);
    const warmLags = lagsOf(warmEvents!);
    const undelivered = events!.filter(
      (e) => e.state !== "DELIVERED" || !receivers.receipts.has(String(e.id)),
    ).length;
    if (process.env.BENCH_CALL_LAG_FILE) {
      // Each measured state update: event time, receipt time (-1: none), ms since the epoch.
      writeFileSync(
        process.env.BENCH_CALL_LAG_FILE,
        events!
          .map((e) => {
            const r = receivers.receipts.get(String(e.id));
            return `${new Date(e.create_time as string | Date).getTime()} ${r ? r.at : -1}\n`;
          })
          .join(""),
      );
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    const n = latencies.length;
    return {
      topology,
      rate: o.rate ?? 0,
      processes: children.length,
      calls: n,
      completed: states.get("COMPLETED") ?? 0,
      otherStates:
        [...states]
          .filter(([s]) => s !== "COMPLETED")
          .map(([s, c]) => `${s}:${c}`)
          .join(" ") || "none",
      seconds,
      callsPerSecond: n / seconds,
      serverCpuMsPerCall: serverCpu / n,
      databaseCpuMsPerCall: databaseCpu / n,
      benchCpuMsPerCall: ownCpu / n,
      createP50Ms: percentile(sorted, 50),
      createP99Ms: percentile(sorted, 99),
      handlerRequests: handled,
      stateUpdates: events!.length,
      undelivered,
      lagP50Ms: percentile(lags, 50),
      lagP99Ms: percentile(lags, 99),
      lagMaxMs: lags.at(-1) ?? Number.NaN,
      xactsPerCall:
        after === undefined || before === undefined ? Number.NaN : (after.xacts - before.xacts) / n,
      rowsWrittenPerCall:
        after === undefined || before === undefined ? Number.NaN : (after.written - before.written) / n,
      serverRssMb: Number.isNaN(rss) ? undefined : rss / 1048576,
      loopP99Ms: loop.p99Ms,
      loopMaxMs: loop.maxMs,
      taken,
      warmUp: {
        calls: warmCreated,
        lagP50Ms: percentile(warmLags, 50),
        lagP99Ms: percentile(warmLags, 99),
        lagMaxMs: warmLags.at(-1) ?? Number.NaN,
      },
      ...(timedOut
        ? {
            error: `timed out after ${o.timeoutMs / 1000} s (${n} created, ${measured.length} ended)`,
          }
        : {}),
    };
  } catch (err) {
    // The server answers INTERNAL without details: add what it logged.
    const logged = children.map((c) => c.takeLoggedError()).filter(Boolean);
    if (logged.length === 0 || !(err instanceof Error)) throw err;
    throw new Error(`${err.message} (the server logged: ${logged.join("; ")})`, { cause: err });
  } finally {
    await stopAll();
    await stats?.end({ timeout: 5 });
    receivers.server.closeAllConnections();
    await new Promise((resolve) => receivers.server.close(resolve));
  }
}

/** Resolves once a ROLE=worker server logged that it started (nothing listens). */
async function workerStarted(child: Child): Promise<void> {
  await child.waitForLine((line) => {
    const parsed = JSON.parse(line) as { msg?: string };
    return parsed.msg === "switchboard worker started" ? true : undefined;
  }, 120_000);
}

/**
 * The webhook events of the calls `callIds` (id, create_time, state): from
 * the PostgreSQL scratch database, or from the embedded database's data
 * directory once the server has exited (PGlite opened here).
 */
/** The state update events of each set of calls. */
async function stateUpdateEvents(
  stats: postgres.Sql | undefined,
  dataDir: string,
  callIdSets: string[][],
): Promise<Record<string, unknown>[][]> {
  const query =
    "select e.id, e.create_time, e.state from webhook_events e where e.event_type = 'CALL_STATE_UPDATE' and e.call_id = any($1)";
  if (stats !== undefined) {
    return Promise.all(callIdSets.map(async (callIds) => [...(await stats.unsafe(query, [callIds]))]));
  }
  const { PGlite } = await import("@electric-sql/pglite");
  const { embeddedDataDir } = await import("../src/db/location.js");
  const db = await PGlite.create({ dataDir: embeddedDataDir(dataDir) });
  try {
    const sets: Record<string, unknown>[][] = [];
    for (const callIds of callIdSets)
      sets.push((await db.query<Record<string, unknown>>(query, [callIds])).rows);
    return sets;
  } finally {
    await db.close();
  }
}

/**
 * The server's event-loop delay since the previous scrape (prom-client's
 * nodejs_eventloop_lag_p99/max_seconds; a scrape resets them), ms, and the
 * webhook rounds its worker took so far, by how.
 */
async function eventLoopDelay(
  base: string,
): Promise<{ p99Ms: number; maxMs: number; taken: Record<string, number> }> {
  const res = await fetch(`${base}/metrics`, {
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  const value = (name: string) => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, "m").exec(text);
    return m === null ? Number.NaN : Number(m[1]) * 1000;
  };
  return {
    p99Ms: value("nodejs_eventloop_lag_p99_seconds"),
    maxMs: value("nodejs_eventloop_lag_max_seconds"),
    taken: Object.fromEntries(
      [...text.matchAll(/^switchboard_webhook_events_taken_total\{how="([a-z_]+)"\} ([0-9.eE+-]+)$/gm)].map(
        (m) => [m[1]!, Number(m[2])],
      ),
    ),
  };
}

/** The server's address (its "switchboard listening" log line), once /readyz answers. */
async function discover(child: Child): Promise<string> {
  const url = await child.waitForLine((line) => {
    const parsed = JSON.parse(line) as { msg?: string; url?: string };
    return parsed.msg === "switchboard listening" ? parsed.url : undefined;
  }, 120_000);
  const base = new URL(url).origin;
  for (let i = 0; i < 600; i++) {
    if (!child.running) throw new Error(child.describeExit());
    try {
      const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.ok) return base;
    } catch {
      // not yet
    }
    await sleep(100);
  }
  throw new Error("the server did not become ready");
}
