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
 * 3. The call engine end to end, the compiled server (dist/server.js, built
 *    if stale) in its own process (calls-server.ts): on the embedded
 *    database (pglite: an empty DATA_DIR, filled from the build's template,
 *    PGlite in the server's worker thread) and on PostgreSQL (when
 *    TEST_DATABASE_URL is set; a scratch database `sb_bench_<random>`,
 *    dropped afterwards). BENCH_CALLS outgoing calls created through the
 *    Connect client (HTTP/1.1) by BENCH_CALL_CONCURRENCY callers, to a
 *    simulator route that rings 2 s and talks an hour; the call handler
 *    answers `<Say>Hello</Say><Wait Seconds="1"/>`. Server CPU per call,
 *    webhook lag, the server main thread's event-loop delay (its /metrics),
 *    transactions per call (PostgreSQL only), and issue #12's item-3
 *    (embedded) and item-4 (engine on PostgreSQL) targets.
 *
 * Knobs (env): BENCH_CALLS (100), BENCH_CALL_CONCURRENCY (20), BENCH_CALL_RATE (calls
 * created per second at most, paced; 0, the default: as fast as the callers go),
 * BENCH_CALL_WARMUP (calls made and ended before the measured run; paced: 3 s at the rate,
 * otherwise 4), BENCH_CALL_LAG_FILE (a file: each measured state update's event and receipt
 * times, ms, one line each),
 * BENCH_RECORDING_ITERATIONS (2), BENCH_TIME_SCALE (0.01),
 * BENCH_CALL_TARGETS ("pglite,postgres"; also postgres-2: two ROLE=all replicas on one
 * database, and postgres-api-worker: ROLE=api + ROLE=worker), BENCH_CALL_SECTIONS ("processing,media,engine"),
 * BENCH_CPU_PROF (a folder: the servers write a V8 CPU profile there), BENCH_NODE_ARGS (extra
 * node options for each server, e.g. `--max-semi-space-size=32` or `--require ./probe.cjs`),
 * BENCH_SERVER_LOG (a file: the servers' log lines are appended to it, each after its server's
 * label). The servers inherit
 * the environment, so WEBHOOKS_BATCH_SIZE=50 and the like reach them.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import * as os from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { openPostgres } from "../src/db/client.js";
import { postgresArgs } from "../src/db/postgres-url.js";
import { speechLike } from "../src/recordings/audio/signal.js";
import { defaultProcessor, type RecordedAudio } from "../src/recordings/processing.js";
import { LegMedia, SAMPLE_RATE } from "../src/telephony/simulator/media.js";
import {
  benchEngineServer,
  buildServer,
  type EngineTopology,
  type ServerEngineResult,
  TOPOLOGY_ROLES,
} from "./calls-server.js";
import { type EngineCheck, engineTargetChecks, formatChecks } from "./calls-targets.js";
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
const RATE = intEnv("BENCH_CALL_RATE", 0, 0);
/** Paced: 3 s at the rate, the server's start-up transient (JIT, pools) out of the measured run. */
const WARM_UP = intEnv("BENCH_CALL_WARMUP", RATE > 0 ? RATE * 3 : 4, 1);
/** 90 s, or the paced run's length and 60 s more. */
const ENGINE_TIMEOUT_MS = Math.max(90_000, RATE > 0 ? (CALLS / RATE) * 1000 + 60_000 : 0);

const _OPERATOR_TOKEN = "bench-operator-token-0123456789abcdef";
const _RECORDING_LINK_SECRET = "bench-recording-link-secret-0123456789abcdef";
const PROJECT_ID = "bench-calls";
const _PROJECT = `projects/${PROJECT_ID}`;
/** A block of the AU numbers ACMA reserves for fiction; the first is the caller id. */
const _FROM = "+61255501200";
const AUDIO_SECONDS = 60;
/** Destinations of the calls: a route of their own (0491 570 2xx, fictional AU mobiles). */
const _TO_PREFIX = "+614915702";
const _MARKUP = `<?xml version="1.0" encoding="UTF-8"?><Response><Say>Hello</Say><Wait Seconds="1"/></Response>`;

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

const _sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
// 3. the call engine end to end, the compiled server in its own process

/**
 * The embedded database (the default): the compiled server on an empty
 * DATA_DIR, which its first start fills from the build's template, PGlite
 * in the server's worker thread.
 */
async function onPglite(): Promise<ServerEngineResult | Error> {
  const dir = await mkdtemp(join(os.tmpdir(), "sb-bench-calls-"));
  try {
    return await benchEngineServer({
      dataDir: dir,
      calls: CALLS,
      concurrency: CONCURRENCY,
      timeScale: TIME_SCALE,
      rate: RATE,
      warmUp: WARM_UP,
      timeoutMs: ENGINE_TIMEOUT_MS,
      log,
    });
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  } finally {
    await stopAll();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Issue #12 item 3 (the embedded default) under the call bench: printed, never asserted. */
function embeddedTargetChecks(
  pglite: ServerEngineResult | undefined,
  pg: ServerEngineResult | undefined,
): EngineCheck[] {
  if (pglite === undefined || pglite.calls === 0) {
    return [{ target: "call engine on the embedded database", measured: "not measured", holds: undefined }];
  }
  const checks: EngineCheck[] = [
    {
      target: "embedded: no event-loop stall > 100 ms (server main thread, whole run)",
      measured: `max ${fmt(pglite.loopMaxMs, 0)} ms, p99 ${fmt(pglite.loopP99Ms, 0)} ms${
        pg === undefined ? "" : ` (postgres: max ${fmt(pg.loopMaxMs, 0)}, p99 ${fmt(pg.loopP99Ms, 0)})`
      }`,
      holds: Number.isFinite(pglite.loopMaxMs) ? pglite.loopMaxMs <= 100 : undefined,
    },
  ];
  if (pg === undefined || pg.calls === 0) {
    checks.push({
      target: "embedded: server CPU per call <= 2x postgres",
      measured: "postgres not measured",
      holds: undefined,
    });
  } else {
    // Like for like: PGlite's CPU is in the server process (its worker thread); PostgreSQL's is in
    // its backends, so they are added to the PostgreSQL server's.
    const withDb = pg.serverCpuMsPerCall + pg.databaseCpuMsPerCall;
    const ratio = pglite.serverCpuMsPerCall / withDb;
    checks.push({
      target: "embedded: server CPU per call <= 2x postgres (its backends' CPU included)",
      measured: `${fmt(ratio, 2)}x (${fmt(pglite.serverCpuMsPerCall, 2)} / ${fmt(withDb, 2)} ms = ${fmt(pg.serverCpuMsPerCall, 2)} server + ${fmt(pg.databaseCpuMsPerCall, 2)} backends); server alone ${fmt(pglite.serverCpuMsPerCall / pg.serverCpuMsPerCall, 2)}x`,
      holds: Number.isFinite(ratio) ? ratio <= 2 : undefined,
    });
  }
  return checks;
}

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]", ""]);

async function onPostgres(adminUrl: string, topology: EngineTopology): Promise<ServerEngineResult | Error> {
  const url = new URL(adminUrl);
  if (!LOOPBACK_HOSTS.has(url.hostname)) {
    return new Error(`refusing PostgreSQL at ${url.hostname}: only 127.0.0.1`);
  }
  const name = `sb_bench_${randomBytes(5).toString("hex")}`;
  const admin = () =>
    postgres(...postgresArgs(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 10 }));
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
      topology,
      databaseUrl: url.toString(),
      dataDir: dir,
      calls: CALLS,
      concurrency: CONCURRENCY,
      timeScale: TIME_SCALE,
      rate: RATE,
      warmUp: WARM_UP,
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
  const wantEngine = SECTIONS.includes("engine");
  if (wantEngine) {
    log("building the server (npm run build, if stale): the engine runs the compiled dist/server.js");
    await buildServer();
  }
  let onEmbedded: ServerEngineResult | Error | undefined;
  if (wantEngine && ENGINE_TARGETS.includes("pglite")) {
    log(`engine on pglite (server in its own process): ${CALLS} calls, concurrency ${CONCURRENCY}`);
    onEmbedded = await onPglite();
  }
  // postgres: one server (ROLE=all); postgres-2: two ROLE=all replicas; postgres-api-worker: ROLE=api + ROLE=worker.
  const pgTargets = (
    [
      ["postgres", "all"],
      ["postgres-2", "all-x2"],
      ["postgres-api-worker", "api+worker"],
    ] as const
  ).filter(([target]) => ENGINE_TARGETS.includes(target));
  const onPgs: { target: string; result: ServerEngineResult | Error }[] = [];
  if (wantEngine && pgTargets.length > 0) {
    const adminUrl = process.env.TEST_DATABASE_URL;
    if (adminUrl) {
      for (const [target, topology] of pgTargets) {
        log(
          `engine on ${target} (servers in their own processes): ${CALLS} calls, concurrency ${CONCURRENCY}`,
        );
        onPgs.push({ target, result: await onPostgres(adminUrl, topology) });
      }
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
  );
  // The one-server run when there is one (item 3 compares with it), else the only one.
  const onPg = (onPgs.find((p) => p.target === "postgres") ?? (onPgs.length === 1 ? onPgs[0] : undefined))
    ?.result;
  const pg = onPg instanceof Error ? undefined : onPg;
  const embedded = onEmbedded instanceof Error ? undefined : onEmbedded;
  const engineRows: (readonly [string, ServerEngineResult | Error | undefined])[] = [
    ["pglite", onEmbedded],
    ...onPgs.map(({ target, result }) => [target, result] as const),
  ];
  out.push(
    "",
    `3. Call engine, the compiled server in its own process (Connect over HTTP/1.1, SIMULATOR_TIME_SCALE=${TIME_SCALE}, concurrency ${CONCURRENCY}${RATE > 0 ? `, paced at ${RATE} calls/s` : ""}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")})`,
    table(
      [
        "backend",
        "processes",
        "calls",
        "COMPLETED",
        "other",
        "s",
        "calls/s",
        "server CPU ms/call",
        "database CPU ms/call",
        "bench CPU ms/call",
        "create p50/p99 ms",
        "webhook lag p50/p99/max ms",
        "loop delay p99/max ms",
        "updates",
        "undelivered",
        "xacts/call",
        "rows/call",
        "server RSS MB",
      ],
      engineRows.flatMap(([backend, r]) =>
        r === undefined || r instanceof Error
          ? []
          : [
              [
                backend,
                `${r.processes} (${TOPOLOGY_ROLES[r.topology].join("+")})`,
                String(r.calls),
                String(r.completed),
                r.otherStates,
                fmt(r.seconds, 2),
                fmt(r.callsPerSecond),
                fmt(r.serverCpuMsPerCall, 2),
                fmt(r.databaseCpuMsPerCall, 2),
                fmt(r.benchCpuMsPerCall, 2),
                `${fmt(r.createP50Ms)}/${fmt(r.createP99Ms)}`,
                `${fmt(r.lagP50Ms, 0)}/${fmt(r.lagP99Ms, 0)}/${fmt(r.lagMaxMs, 0)}`,
                `${fmt(r.loopP99Ms, 0)}/${fmt(r.loopMaxMs, 0)}`,
                String(r.stateUpdates),
                String(r.undelivered),
                fmt(r.xactsPerCall),
                fmt(r.rowsWrittenPerCall),
                fmt(r.serverRssMb, 0),
              ],
            ],
      ),
    ),
  );
  for (const [backend, r] of engineRows) {
    if (r instanceof Error) out.push(`  ${backend}: ${errorText(r)}`);
    else if (r?.error) out.push(`  ${backend}: ${r.error}`);
  }
  for (const [backend, r] of engineRows) {
    if (r === undefined || r instanceof Error) continue;
    const w = r.warmUp;
    out.push(
      `  ${backend} warm-up (not in the figures above): ${w.calls} calls${RATE > 0 ? ` paced at ${RATE}/s` : ""} on the just-started server, webhook lag p50/p99/max ${fmt(w.lagP50Ms, 0)}/${fmt(w.lagP99Ms, 0)}/${fmt(w.lagMaxMs, 0)} ms`,
    );
    const total = Object.values(r.taken).reduce((a, b) => a + b, 0);
    if (total > 0)
      out.push(
        `  ${backend} webhook rounds taken by the workers: ${Object.entries(r.taken)
          .map(([how, n]) => `${how} ${n} (${fmt((100 * n) / total, 0)}%)`)
          .join(", ")}`,
      );
  }
  out.push(
    "",
    "Issue #12 item 4 (call engine on PostgreSQL) targets, this run:",
    ...(onPgs.length <= 1
      ? formatChecks(engineTargetChecks(pg))
      : onPgs.flatMap(({ target, result }) => [
          `  ${target}:`,
          ...formatChecks(engineTargetChecks(result instanceof Error ? undefined : result)).map(
            (l) => `  ${l}`,
          ),
        ])),
    "",
    "Issue #12 item 3 (the embedded default) under the call bench, this run:",
    ...formatChecks(embeddedTargetChecks(embedded, pg)),
  );
  out.push(
    "",
    "server CPU ms/call (3): the server processes' user+system CPU (/proc/<pid>/stat, 10 ms ticks, summed; all",
    "  threads: on pglite the database's worker thread too; on postgres the database's is in database CPU:",
    "  its backends serving the servers' connections, from /proc) from the first create to the last call's terminal state update received, per call; webhook",
    "  lag: receipt minus webhook_events.create_time; xacts/call, rows/call: pg_stat_database from after the",
    "  warm-up to after the server exited (idle polls and heartbeat included; not measured on pglite, whose",
    "  database nothing else can open while the server runs).",
    "loop delay (3): the server main thread's event-loop delay over the run, from its /metrics",
    "  (nodejs_eventloop_lag_p99/max_seconds: perf_hooks.monitorEventLoopDelay, 10 ms resolution).",
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
