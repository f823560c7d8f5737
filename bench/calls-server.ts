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
 */
import { spawn } from "node:child_process";
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
import { Child, ROOT } from "./children.js";

export interface ServerEngineOptions {
  /** The scratch database, migrated. */
  databaseUrl: string;
  dataDir: string;
  calls: number;
  concurrency: number;
  timeScale: string;
  timeoutMs: number;
  /** Extra environment of the server (WEBHOOKS_BATCH_SIZE, ...). */
  serverEnv?: Record<string, string>;
  log: (message: string) => void;
}

export interface ServerEngineResult {
  calls: number;
  /** Calls whose terminal state update said COMPLETED. */
  completed: number;
  /** Terminal states other than COMPLETED, "STATE:n ...". */
  otherStates: string;
  seconds: number;
  callsPerSecond: number;
  serverCpuMsPerCall: number;
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
  error?: string;
}

const OPERATOR_TOKEN = "bench-operator-token-0123456789abcdef";
const PROJECT_ID = "bench-calls";
const PROJECT = `projects/${PROJECT_ID}`;
const FROM = "+61255501200";
const TO_PREFIX = "+614915702";
const MARKUP = `<?xml version="1.0" encoding="UTF-8"?><Response><Say>Hello</Say><Wait Seconds="1"/></Response>`;
const TERMINAL = new Set(["COMPLETED", "BUSY", "FAILED", "NOT_ANSWERED", "CANCELED"]);
const WARM_UP = 4;

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

async function readStats(sql: postgres.Sql): Promise<Stats> {
  const rows = await sql.unsafe(
    "select xact_commit + xact_rollback as xacts, tup_inserted + tup_updated + tup_deleted as written from pg_stat_database where datname = current_database()",
  );
  return { xacts: Number(rows[0]!.xacts), written: Number(rows[0]!.written) };
}

export async function benchEngineServer(o: ServerEngineOptions): Promise<ServerEngineResult> {
  const receivers = await startReceivers();
  const stats = postgres(o.databaseUrl, { max: 1, onnotice: () => {} });
  const child = new Child(
    "postgres server",
    "dist/server.js",
    {
      ...Object.fromEntries(
        Object.entries(process.env).filter(
          ([k]) => !["NODE_OPTIONS", "TEST_DATABASE_URL", "BENCH_CPU_PROF"].includes(k),
        ),
      ),
      NODE_ENV: "production",
      DATABASE_URL: o.databaseUrl,
      DATA_DIR: o.dataDir,
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      SWITCHBOARD_OPERATOR_TOKEN: OPERATOR_TOKEN,
      RECORDING_LINK_SECRET: "bench-recording-link-secret-0123456789abcdef",
      SIMULATOR_TIME_SCALE: o.timeScale,
      WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
      RATE_LIMIT_PROJECT_PER_SECOND: "0",
      RATE_LIMIT_API_KEY_PER_SECOND: "0",
      ...o.serverEnv,
    },
    [],
    {
      compiled: true,
      // BENCH_CPU_PROF=<dir>: the server writes a V8 CPU profile there when it stops.
      nodeArgs: process.env.BENCH_CPU_PROF
        ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
        : [],
    },
  );
  try {
    const base = await discover(child);
    const transport = createConnectTransport({
      baseUrl: base,
      httpVersion: "1.1",
      interceptors: [bearer(OPERATOR_TOKEN)],
    });
    const calls = createClient(Calls, transport);
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
    const create = (i: number) =>
      calls.createCall({
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
    await Promise.all(Array.from({ length: WARM_UP }, (_, i) => create(i)));
    await until(WARM_UP, performance.now() + o.timeoutMs);
    // Let the server's backends flush the warm-up's statistics (at most every second).
    await sleep(1_500);
    const before = await readStats(stats);
    const warmNames = new Set(receivers.terminal.keys());

    const latencies: number[] = [];
    let next = 0;
    const cpu0 = child.cpuMs() ?? 0;
    const own0 = process.cpuUsage();
    const handled0 = receivers.handled();
    const t0 = performance.now();
    const deadline = t0 + o.timeoutMs;
    await Promise.all(
      Array.from({ length: Math.min(o.concurrency, o.calls) }, async () => {
        while (next < o.calls && performance.now() < deadline) {
          const i = next++;
          const s = performance.now();
          await create(i);
          latencies.push(performance.now() - s);
        }
      }),
    );
    await until(WARM_UP + latencies.length, deadline);
    const seconds = (performance.now() - t0) / 1000;
    const serverCpu = (child.cpuMs() ?? Number.NaN) - cpu0;
    const ownCpu = cpuMsSince(own0);
    const handled = receivers.handled() - handled0;
    const rss = child.rssBytes();
    const timedOut = receivers.terminal.size < WARM_UP + latencies.length || latencies.length < o.calls;

    await child.stop();
    await sleep(500);
    const after = await readStats(stats);

    // Lag of every state update of the measured calls.
    const measured = [...receivers.terminal.keys()].filter((n) => !warmNames.has(n));
    const states = new Map<string, number>();
    for (const n of measured) {
      const s = receivers.terminal.get(n)!;
      states.set(s, (states.get(s) ?? 0) + 1);
    }
    const events = await stats.unsafe(
      "select e.id, e.create_time, e.state from webhook_events e where e.event_type = 'CALL_STATE_UPDATE' and e.call_id = any($1)",
      [measured.map((n) => n.slice(n.lastIndexOf("/") + 1))],
    );
    const lags: number[] = [];
    let undelivered = 0;
    for (const e of events) {
      const r = receivers.receipts.get(String(e.id));
      if (e.state !== "DELIVERED" || r === undefined) undelivered++;
      if (r !== undefined) lags.push(r.at - new Date(e.create_time as string | Date).getTime());
    }
    lags.sort((a, b) => a - b);
    const sorted = [...latencies].sort((a, b) => a - b);
    const n = latencies.length;
    return {
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
      benchCpuMsPerCall: ownCpu / n,
      createP50Ms: percentile(sorted, 50),
      createP99Ms: percentile(sorted, 99),
      handlerRequests: handled,
      stateUpdates: events.length,
      undelivered,
      lagP50Ms: percentile(lags, 50),
      lagP99Ms: percentile(lags, 99),
      lagMaxMs: lags.at(-1) ?? Number.NaN,
      xactsPerCall: (after.xacts - before.xacts) / n,
      rowsWrittenPerCall: (after.written - before.written) / n,
      serverRssMb: rss === undefined ? undefined : rss / 1048576,
      ...(timedOut
        ? {
            error: `timed out after ${o.timeoutMs / 1000} s (${n} created, ${measured.length} ended)`,
          }
        : {}),
    };
  } finally {
    await child.stop();
    await stats.end({ timeout: 5 });
    receivers.server.closeAllConnections();
    await new Promise((resolve) => receivers.server.close(resolve));
  }
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
