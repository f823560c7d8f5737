/**
 * `npm run bench:calls`: cost of the telephony side. A benchmark, not a
 * test: it reports figures and ratios and asserts nothing about speed.
 *
 * 1. Recording processing: `defaultProcessor` (silence check, optional
 *    TRIM_SILENCE, WAV, MP3 via lamejs) on 60 s of speech-like audio at
 *    8000 Hz, mono and stereo, with and without TRIM_SILENCE: wall and CPU
 *    ms per call and the real-time factor (seconds of audio per CPU second).
 * 2. Simulator synthesis: LegMedia.render of 60 s of a leg answered with a
 *    SPEECH remote party, a few says and a bridge (two channels): CPU ms per
 *    minute of audio.
 * 3. The call engine end to end. On PostgreSQL the compiled server runs in
 *    its own process (calls-server.ts: server CPU per call, webhook lag,
 *    transactions per call, issue #12's item-4 targets); on PGlite in this process: build() on a fresh PGlite
 *    (a temp DATA_DIR) at SIMULATOR_TIME_SCALE=0.01, a local node:http
 *    call handler answering `<Say>Hello</Say><Wait Seconds="1"/>`, and
 *    BENCH_CALLS outgoing calls created through the Connect client
 *    (HTTP/1.1) by BENCH_CALL_CONCURRENCY callers, to a simulator route
 *    that rings 2 s and talks an hour (the markup's hangup ends the call),
 *    with a 600 s no-answer timeout. Simulated timeouts are scaled wall
 *    time: at 0.001 even 600 s is 600 ms, and the event-loop stalls of this
 *    process under load (PGlite runs in the same thread) reach that, ending
 *    calls NOT_ANSWERED; hence 0.01 (6 s). calls/s from the first
 *    create to every call over, CPU ms per call (this whole process: server,
 *    engine, simulator, handler and client), and rows written per call
 *    (pg_stat_database). On PostgreSQL (when TEST_DATABASE_URL is set; a
 *    scratch database `sb_bench_<random>`, dropped afterwards) the same
 *    calls, with state updates, go to the compiled server in its own process.
 *
 * Knobs (env): BENCH_CALLS (100), BENCH_CALL_CONCURRENCY (20),
 * BENCH_RECORDING_ITERATIONS (2), BENCH_TIME_SCALE (0.01),
 * BENCH_CALL_TARGETS ("pglite,postgres"), BENCH_CALL_SECTIONS ("processing,media,engine"),
 * BENCH_CPU_PROF (a folder: the PostgreSQL run's server writes a V8 CPU profile there). The
 * server of the PostgreSQL run inherits the environment, so WEBHOOKS_BATCH_SIZE=50 and the
 * like reach it.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { PGlite } from "@electric-sql/pglite";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { PhoneNumberInstances } from "../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import {
  PhoneNumber_PhoneNumberCapability as Capability,
  PhoneNumber_PhoneNumberType as NumberType,
} from "../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { Call_State, Calls } from "../gen/enfonica/voice/v1beta1/calls_pb.js";
import { NumberingAdmin } from "../gen/switchboard/admin/v1/numbering_pb.js";
import { Projects } from "../gen/switchboard/admin/v1/projects_pb.js";
import { SimulatorAdmin } from "../gen/switchboard/admin/v1/simulator_pb.js";
import { loadConfig } from "../src/config.js";
import { type Database, type Db, openPostgres, wrapPglite } from "../src/db/client.js";
import { speechLike } from "../src/recordings/audio/signal.js";
import { defaultProcessor, type RecordedAudio } from "../src/recordings/processing.js";
import { build } from "../src/server.js";
import { LegMedia, SAMPLE_RATE } from "../src/telephony/simulator/media.js";
import { benchEngineServer, buildServer, type ServerEngineResult } from "./calls-server.js";
import { engineTargetChecks, formatChecks } from "./calls-targets.js";
import { killAllNow, stopAll } from "./children.js";

// ---------------------------------------------------------------------------
// configuration

function intEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}`);
  return n;
}

const CALLS = intEnv("BENCH_CALLS", 100, 1);
const CONCURRENCY = intEnv("BENCH_CALL_CONCURRENCY", 20, 1);
const RECORDING_ITERATIONS = intEnv("BENCH_RECORDING_ITERATIONS", 2, 1);
const TIME_SCALE = process.env.BENCH_TIME_SCALE || "0.01";
const ENGINE_TARGETS = (process.env.BENCH_CALL_TARGETS || "pglite,postgres").split(",").map((s) => s.trim());
const SECTIONS = (process.env.BENCH_CALL_SECTIONS || "processing,media,engine")
  .split(",")
  .map((s) => s.trim());
/** Give up on the calls of one backend after this long (wall). */
const ENGINE_TIMEOUT_MS = 90_000;

const OPERATOR_TOKEN = "bench-operator-token-0123456789abcdef";
const RECORDING_LINK_SECRET = "bench-recording-link-secret-0123456789abcdef";
const PROJECT_ID = "bench-calls";
const PROJECT = `projects/${PROJECT_ID}`;
/** A block of the AU numbers ACMA reserves for fiction; the first is the caller id. */
const FROM = "+61255501200";
const AUDIO_SECONDS = 60;
/** Destinations of the calls: a route of their own (0491 570 2xx, fictional AU mobiles). */
const TO_PREFIX = "+614915702";
const MARKUP = `<?xml version="1.0" encoding="UTF-8"?><Response><Say>Hello</Say><Wait Seconds="1"/></Response>`;

function log(message: string): void {
  process.stderr.write(`[bench:calls ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}

/** user + system CPU ms since `from` (process.cpuUsage). */
function cpuMsSince(from: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1000;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function fmt(n: number | undefined, digits = 1): string {
  if (n === undefined || !Number.isFinite(n)) return "—";
  return n.toFixed(digits);
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

// ---------------------------------------------------------------------------
// 1. recording processing

interface ProcessingRow {
  label: string;
  wallMs: number;
  cpuMs: number;
  /** Seconds of audio (all channels' duration, not channel-seconds) per CPU second. */
  rtf: number;
  wavBytes: number;
  mp3Bytes: number;
  outSeconds: number;
}

async function benchProcessing(): Promise<ProcessingRow[]> {
  const length = AUDIO_SECONDS * 1000;
  const left = speechLike({ seed: 1, durationMs: length, sampleRate: SAMPLE_RATE });
  const right = speechLike({ seed: 2, durationMs: length, sampleRate: SAMPLE_RATE });
  const cases: { label: string; audio: RecordedAudio }[] = [];
  for (const [name, channels] of [
    ["mono", [left]],
    ["stereo", [left, right]],
  ] as const) {
    for (const trim of [false, true]) {
      cases.push({
        label: `${name}${trim ? " + TRIM_SILENCE" : ""}`,
        audio: { channels, sampleRate: SAMPLE_RATE, postProcessing: trim ? ["TRIM_SILENCE"] : [] },
      });
    }
  }
  // One warm-up call of each case (JIT), then the measured ones.
  for (const c of cases) await defaultProcessor(c.audio);
  const out: ProcessingRow[] = [];
  for (const c of cases) {
    let wall = 0;
    let cpu = 0;
    let result: Awaited<ReturnType<typeof defaultProcessor>> | undefined;
    for (let i = 0; i < RECORDING_ITERATIONS; i++) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      result = await defaultProcessor(c.audio);
      wall += performance.now() - t0;
      cpu += cpuMsSince(c0);
    }
    if (result === undefined || result.empty) throw new Error(`${c.label}: processed as silent`);
    const cpuMs = cpu / RECORDING_ITERATIONS;
    out.push({
      label: c.label,
      wallMs: wall / RECORDING_ITERATIONS,
      cpuMs,
      rtf: AUDIO_SECONDS / (cpuMs / 1000),
      wavBytes: result.wav.length,
      mp3Bytes: result.mp3.length,
      outSeconds: result.durationMs / 1000,
    });
    log(`processing ${c.label}: ${fmt(cpuMs)} CPU ms per call`);
  }
  return out;
}

// ---------------------------------------------------------------------------
// 2. simulator synthesis

interface MediaRow {
  label: string;
  channels: number;
  cpuMsPerMinute: number;
  wallMsPerMinute: number;
}

function benchMedia(): MediaRow[] {
  const make = (): LegMedia => {
    const leg = new LegMedia("bench-call-a", "SPEECH");
    const other = new LegMedia("bench-call-b", "SPEECH");
    leg.answer(0);
    other.answer(0);
    leg.say(1_000, 4);
    leg.say(6_000, 3);
    leg.play(10_000, "tone:beep", 1);
    leg.bridge(other, 12_000);
    leg.unbridge(50_000);
    leg.say(51_000, 5);
    return leg;
  };
  const plain = (): LegMedia => {
    const leg = new LegMedia("bench-call-c", "SPEECH");
    leg.answer(0);
    return leg;
  };
  const rows: MediaRow[] = [];
  for (const [label, factory] of [
    ["remote speech only", plain],
    ["speech + says + bridge", make],
  ] as const) {
    const leg = factory();
    leg.render(0, AUDIO_SECONDS * 1000); // warm-up
    const iterations = 10;
    let channels = 0;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < iterations; i++) channels = leg.render(0, AUDIO_SECONDS * 1000).channels.length;
    const wall = performance.now() - t0;
    const cpu = cpuMsSince(c0);
    const minutes = (iterations * AUDIO_SECONDS) / 60;
    rows.push({ label, channels, cpuMsPerMinute: cpu / minutes, wallMsPerMinute: wall / minutes });
  }
  return rows;
}

// ---------------------------------------------------------------------------
// 3. the call engine end to end

interface EngineRow {
  backend: string;
  calls: number;
  completed: number;
  otherStates: string;
  seconds: number;
  callsPerSecond: number;
  cpuMsPerCall: number;
  createP50Ms: number;
  createP99Ms: number;
  /** Event-loop delay over the run (perf_hooks), ms. */
  loopP99Ms: number;
  loopMaxMs: number;
  handlerRequests: number;
  rowsWrittenPerCall: number | undefined;
  xactsPerCall: number | undefined;
  /** An error message of each state other than COMPLETED. */
  examples?: string[];
  error?: string;
}

function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

interface DbStats {
  written: number;
  xacts: number;
}

async function readStats(exec: (q: string) => Promise<Record<string, unknown>[]>): Promise<DbStats> {
  const rows = await exec(
    "select tup_inserted + tup_updated + tup_deleted as written, xact_commit + xact_rollback as xacts from pg_stat_database where datname = current_database()",
  );
  return { written: Number(rows[0]!.written), xacts: Number(rows[0]!.xacts) };
}

function rowsOf(result: unknown): Record<string, unknown>[] {
  if (Array.isArray(result)) return result as Record<string, unknown>[];
  return (result as { rows: Record<string, unknown>[] }).rows;
}

/** Stats of `db`'s database after flushing this connection's pending counts. */
async function statsVia(db: Db): Promise<DbStats> {
  await db.execute(sql.raw("select pg_stat_force_next_flush()"));
  return readStats(async (q) => rowsOf(await db.execute(sql.raw(q))));
}

function startHandler(): Promise<{ server: Server; url: string; count: () => number }> {
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    req.resume();
    req.on("end", () => {
      res.setHeader("content-type", "application/xml");
      res.end(MARKUP);
    });
  });
  server.keepAliveTimeout = 30_000;
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}/call`, count: () => requests });
    });
  });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * Runs the calls on `database` (migrated by build()). `finalStats` reads the
 * database's counters once the app and `database` are closed (PostgreSQL:
 * the server's backends flush their counts when they exit).
 */
async function benchEngine(
  backend: string,
  database: Database,
  dataDir: string,
  finalStats?: () => Promise<DbStats>,
): Promise<EngineRow> {
  const handler = await startHandler();
  const app = await build({
    db: database.db,
    config: loadConfig({
      LOG_LEVEL: "silent",
      SWITCHBOARD_OPERATOR_TOKEN: OPERATOR_TOKEN,
      RECORDING_LINK_SECRET,
      DATA_DIR: dataDir,
      SIMULATOR_TIME_SCALE: TIME_SCALE,
      WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
    }),
  });
  let closed = false;
  try {
    const address = await app.listen(0, "127.0.0.1");
    const transport = createConnectTransport({
      baseUrl: `http://127.0.0.1:${address.port}`,
      httpVersion: "1.1",
      interceptors: [bearer(OPERATOR_TOKEN)],
    });
    const calls: Client<typeof Calls> = createClient(Calls, transport);
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
          options: { handlerUris: [handler.url], timeoutSeconds: 600 },
        },
      });
    // Warm-up: a few calls, run to the end, not counted.
    await Promise.all([0, 1, 2, 3].map(create));
    while (app.engine.activeCount > 0) await sleep(5);

    const before = await statsVia(database.db);
    const handled0 = handler.count();
    const latencies: number[] = [];
    let next = 0;
    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const deadline = t0 + ENGINE_TIMEOUT_MS;
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, CALLS) }, async () => {
        while (next < CALLS && performance.now() < deadline) {
          const i = next++;
          const s = performance.now();
          await create(i);
          latencies.push(performance.now() - s);
        }
      }),
    );
    while (app.engine.activeCount > 0 && performance.now() < deadline) await sleep(2);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = cpuMsSince(c0);
    loop.disable();
    const handled = handler.count() - handled0;
    let after: DbStats | undefined = finalStats === undefined ? await statsVia(database.db) : undefined;

    // Verify through the API: states of every call of the project (warm-up included).
    const states = new Map<string, number>();
    /** One error message of each non-COMPLETED state. */
    const examples = new Map<string, string>();
    let pageToken = "";
    do {
      const page = await calls.listCalls({ parent: PROJECT, pageSize: 100, pageToken });
      for (const c of page.calls) {
        const s = `${Call_State[c.state] ?? String(c.state)}${c.errorCode === "" ? "" : `(${c.errorCode})`}`;
        states.set(s, (states.get(s) ?? 0) + 1);
        if (c.errorMessage !== "" && !examples.has(s)) examples.set(s, c.errorMessage);
      }
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    let completed = 0;
    pageToken = "";
    do {
      const page = await calls.listCalls({
        parent: PROJECT,
        filter: "state = COMPLETED",
        pageSize: 100,
        pageToken,
      });
      completed += page.calls.length;
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    completed -= 4; // the warm-up calls
    const other = [...states].filter(([s]) => s !== "COMPLETED").map(([s, n]) => `${s}:${n}`);

    await app.close();
    closed = true;
    if (finalStats !== undefined) {
      await database.close();
      after = await finalStats();
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    const error =
      app.engine.activeCount > 0 || latencies.length < CALLS
        ? `timed out after ${ENGINE_TIMEOUT_MS / 1000} s (${latencies.length} created)`
        : undefined;
    return {
      backend,
      calls: latencies.length,
      completed,
      otherStates: other.length === 0 ? "none" : other.join(" "),
      seconds,
      callsPerSecond: latencies.length / seconds,
      cpuMsPerCall: cpu / latencies.length,
      createP50Ms: percentile(sorted, 50),
      createP99Ms: percentile(sorted, 99),
      loopP99Ms: loop.percentile(99) / 1e6,
      loopMaxMs: loop.max / 1e6,
      handlerRequests: handled,
      rowsWrittenPerCall:
        after === undefined ? undefined : (after.written - before.written) / latencies.length,
      xactsPerCall: after === undefined ? undefined : (after.xacts - before.xacts) / latencies.length,
      examples: [...examples].map(([state, message]) => `${state}: ${message}`),
      ...(error === undefined ? {} : { error }),
    };
  } finally {
    if (!closed) await app.close().catch(() => {});
    await new Promise((resolve) => handler.server.close(resolve));
  }
}

function failedRow(backend: string, err: unknown): EngineRow {
  return {
    backend,
    calls: 0,
    completed: 0,
    otherStates: "",
    seconds: Number.NaN,
    callsPerSecond: Number.NaN,
    cpuMsPerCall: Number.NaN,
    createP50Ms: Number.NaN,
    createP99Ms: Number.NaN,
    loopP99Ms: Number.NaN,
    loopMaxMs: Number.NaN,
    handlerRequests: 0,
    rowsWrittenPerCall: undefined,
    xactsPerCall: undefined,
    error: errorText(err),
  };
}

async function onPglite(): Promise<EngineRow> {
  const dir = await mkdtemp(join(os.tmpdir(), "sb-bench-calls-"));
  try {
    const client = await PGlite.create({ dataDir: join(dir, "pgdata") });
    const database = wrapPglite(client);
    try {
      return await benchEngine("pglite", database, dir);
    } finally {
      await database.close().catch(() => {});
    }
  } catch (err) {
    return failedRow("pglite", err);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]", ""]);

async function onPostgres(adminUrl: string): Promise<ServerEngineResult | Error> {
  const url = new URL(adminUrl);
  if (!LOOPBACK_HOSTS.has(url.hostname)) {
    return new Error(`refusing PostgreSQL at ${url.hostname}: only 127.0.0.1`);
  }
  const name = `sb_bench_${randomBytes(5).toString("hex")}`;
  const admin = () => postgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  const dir = await mkdtemp(join(os.tmpdir(), "sb-bench-calls-"));
  let created = false;
  try {
    const a = admin();
    try {
      await a.unsafe(`create database ${name}`);
      created = true;
    } finally {
      await a.end({ timeout: 5 });
    }
    url.pathname = `/${name}`;
    const database = openPostgres(url.toString());
    try {
      await database.migrate();
    } finally {
      await database.close();
    }
    return await benchEngineServer({
      databaseUrl: url.toString(),
      dataDir: dir,
      calls: CALLS,
      concurrency: CONCURRENCY,
      timeScale: TIME_SCALE,
      timeoutMs: ENGINE_TIMEOUT_MS,
      log,
    });
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  } finally {
    await stopAll();
    if (created) {
      const a = admin();
      try {
        await a.unsafe(`drop database if exists ${name} with (force)`);
        log(`postgres: dropped ${name}`);
      } catch (err) {
        log(`postgres: could not drop ${name}: ${errorText(err)}`);
      } finally {
        await a.end({ timeout: 5 });
      }
    }
    await rm(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// main

async function main(): Promise<void> {
  const started = performance.now();
  log(`recording processing: ${AUDIO_SECONDS} s at ${SAMPLE_RATE} Hz, ${RECORDING_ITERATIONS} iterations`);
  const processing = SECTIONS.includes("processing") ? await benchProcessing() : [];
  log("simulator synthesis");
  const media = SECTIONS.includes("media") ? benchMedia() : [];
  const engine: EngineRow[] = [];
  if (SECTIONS.includes("engine") && ENGINE_TARGETS.includes("pglite")) {
    log(`engine on pglite: ${CALLS} calls, concurrency ${CONCURRENCY}, time scale ${TIME_SCALE}`);
    engine.push(await onPglite());
  }
  let onPg: ServerEngineResult | Error | undefined;
  if (SECTIONS.includes("engine") && ENGINE_TARGETS.includes("postgres")) {
    const adminUrl = process.env.TEST_DATABASE_URL;
    if (adminUrl) {
      log("building the server (npm run build, if stale): postgres runs the compiled dist/server.js");
      await buildServer();
      log(`engine on postgres (server in its own process): ${CALLS} calls, concurrency ${CONCURRENCY}`);
      onPg = await onPostgres(adminUrl);
    } else {
      log("engine on postgres: skipped (set TEST_DATABASE_URL)");
    }
  }

  const out: string[] = [];
  out.push(
    `Switchboard telephony benchmark — node ${process.version}, ${os.cpus().length} CPU(s) (${os.cpus()[0]?.model ?? "?"})`,
    "",
    `1. Recording processing (defaultProcessor), ${AUDIO_SECONDS} s speech-like audio at ${SAMPLE_RATE} Hz, mean of ${RECORDING_ITERATIONS}`,
  );
  const mono = processing.find((p) => p.label === "mono");
  out.push(
    table(
      ["case", "wall ms", "CPU ms", "RTF (audio s/CPU s)", "CPU vs mono", "out s", "WAV KiB", "MP3 KiB"],
      processing.map((p) => [
        p.label,
        fmt(p.wallMs),
        fmt(p.cpuMs),
        fmt(p.rtf, 0),
        mono ? fmt(p.cpuMs / mono.cpuMs, 2) : "—",
        fmt(p.outSeconds),
        fmt(p.wavBytes / 1024, 0),
        fmt(p.mp3Bytes / 1024, 0),
      ]),
    ),
    "",
    `2. Simulator synthesis (LegMedia.render of ${AUDIO_SECONDS} s)`,
  );
  const mp3Mono = mono?.cpuMs;
  out.push(
    table(
      ["leg", "channels", "CPU ms/min audio", "wall ms/min audio", "vs mono processing"],
      media.map((m) => [
        m.label,
        String(m.channels),
        fmt(m.cpuMsPerMinute, 2),
        fmt(m.wallMsPerMinute, 2),
        mp3Mono ? fmt(m.cpuMsPerMinute / mp3Mono, 3) : "—",
      ]),
    ),
    "",
    `3. Call engine end to end (in process, Connect over HTTP/1.1, SIMULATOR_TIME_SCALE=${TIME_SCALE}, concurrency ${CONCURRENCY})`,
  );
  out.push(
    table(
      [
        "backend",
        "calls",
        "COMPLETED",
        "other states",
        "s",
        "calls/s",
        "CPU ms/call",
        "create p50 ms",
        "create p99 ms",
        "loop lag p99/max ms",
        "handler req",
        "rows written/call",
        "xacts/call",
      ],
      engine.map((e) => [
        e.backend,
        String(e.calls),
        String(e.completed),
        e.otherStates,
        fmt(e.seconds, 2),
        fmt(e.callsPerSecond),
        fmt(e.cpuMsPerCall, 2),
        fmt(e.createP50Ms),
        fmt(e.createP99Ms),
        `${fmt(e.loopP99Ms, 0)}/${fmt(e.loopMaxMs, 0)}`,
        String(e.handlerRequests),
        fmt(e.rowsWrittenPerCall),
        fmt(e.xactsPerCall),
      ]),
    ),
  );
  for (const e of engine) {
    if (e.error) out.push(`  ${e.backend}: ${e.error}`);
    for (const x of e.examples ?? []) out.push(`  ${e.backend}: e.g. ${x}`);
  }
  const pg = onPg instanceof Error ? undefined : onPg;
  out.push(
    "",
    `3b. Call engine on PostgreSQL, the compiled server in its own process (Connect over HTTP/1.1, SIMULATOR_TIME_SCALE=${TIME_SCALE}, concurrency ${CONCURRENCY}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")})`,
  );
  if (onPg instanceof Error) out.push(`  postgres: ${errorText(onPg)}`);
  else if (pg !== undefined) {
    out.push(
      table(
        [
          "backend",
          "calls",
          "COMPLETED",
          "other",
          "s",
          "calls/s",
          "server CPU ms/call",
          "bench CPU ms/call",
          "create p50/p99 ms",
          "webhook lag p50/p99/max ms",
          "updates",
          "undelivered",
          "xacts/call",
          "rows/call",
          "server RSS MB",
        ],
        [
          [
            "postgres",
            String(pg.calls),
            String(pg.completed),
            pg.otherStates,
            fmt(pg.seconds, 2),
            fmt(pg.callsPerSecond),
            fmt(pg.serverCpuMsPerCall, 2),
            fmt(pg.benchCpuMsPerCall, 2),
            `${fmt(pg.createP50Ms)}/${fmt(pg.createP99Ms)}`,
            `${fmt(pg.lagP50Ms, 0)}/${fmt(pg.lagP99Ms, 0)}/${fmt(pg.lagMaxMs, 0)}`,
            String(pg.stateUpdates),
            String(pg.undelivered),
            fmt(pg.xactsPerCall),
            fmt(pg.rowsWrittenPerCall),
            fmt(pg.serverRssMb, 0),
          ],
        ],
      ),
    );
    if (pg.error) out.push(`  postgres: ${pg.error}`);
  }
  out.push(
    "",
    "Issue #12 item 4 (call engine on PostgreSQL) targets, this run:",
    ...formatChecks(engineTargetChecks(pg)),
  );
  out.push(
    "",
    "server CPU ms/call (3b): the server process's user+system CPU (/proc/<pid>/stat, 10 ms ticks) from the",
    "  first create to the last call's terminal state update received, per call; webhook lag: receipt minus",
    "  webhook_events.create_time; xacts/call: pg_stat_database commits+rollbacks from after the warm-up to",
    "  after the server exited (idle polls and heartbeat included).",
    "CPU ms/call (3): user+system CPU of this whole process (server, engine, simulator, call handler and client)",
    "  over the run, divided by the calls; on postgres the database server's CPU is not counted.",
    "rows written/call, xacts/call: pg_stat_database (tup_inserted+updated+deleted, commits+rollbacks) over",
    "  the run; they include the engine's heartbeat and this benchmark's own few statistics queries.",
    "A CPU-bound single process tops out near 1000 / (CPU ms/call) calls/s; wall times move with whatever",
    "  else runs on the machine, CPU times much less.",
    `Total ${fmt((performance.now() - started) / 1000)} s.`,
  );
  process.stdout.write(`${out.join("\n")}\n`);
}

process.on("exit", killAllNow);

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
