/**
 * `npm run bench:sip`: the SIP edge under SIPp (Debian's `sip-tester`), the
 * compiled server (dist/server.js, built if stale) in its own process on
 * PostgreSQL (TEST_DATABASE_URL, an admin URL on 127.0.0.1; a scratch
 * database `sb_bench_<random>`, dropped afterwards). A benchmark, not a
 * test: it prints figures and issue 27's targets with whether each holds.
 *
 * 1. Registrations: BENCH_SIP_USERS SIP users (2000) of one domain, created
 *    through the API, each registered once (not measured), then refreshing
 *    every BENCH_SIP_REFRESH_SECONDS (60) for BENCH_SIP_REGISTER_SECONDS
 *    (60): SIPp's REGISTER scenario with digest (a CSV of the users,
 *    test/interop/scenarios/register-users.xml), every REGISTER challenged
 *    once as a phone's is. The server's CPU over that window (/proc), in %
 *    of one core, beside the same server's idle CPU measured just before
 *    (BENCH_SIP_IDLE_SECONDS, 10: its timers and pollers). Target: <= 5%,
 *    idle included.
 * 2. Call setups: a PROGRAMMABLE domain whose handler answers
 *    `<Say>` (the document's end hangs up), SIPp calling it (bench/sip/call.xml) at
 *    BENCH_SIP_CALL_RATE (200/s) for BENCH_SIP_CALL_SECONDS (60). Targets:
 *    >= 200 setups/s for 60 s, 0 failed, <= 3 ms server CPU per call.
 *    One INVITE (with an SDP offer) is sent first: unless it is answered
 *    200 the section prints "not measured" with the answer.
 * 3. Media (issue 28): BENCH_SIP_MEDIA_CALLS (400) concurrent calls, set up
 *    at BENCH_SIP_MEDIA_RATE (50/s), into a PROGRAMMABLE domain whose
 *    handler answers `<Play>` of a WAV it serves (long enough for the run)
 *    (its end hangs up); the callers, a child process of raw sockets
 *    (bench/sip-media-peers.ts), send G.711 every 20 ms, so RTP flows both
 *    ways; measured for BENCH_SIP_MEDIA_SECONDS (60) once all are up
 *    (bench/sip-media.ts). Targets: >= 400 calls, <= 2 ms server CPU per
 *    call-second, outgoing spacing p99 within 20 ± 3 ms (at the callers),
 *    0 packets lost on loopback, <= 250 KB server memory per call.
 *
 * BENCH_SIP_SECTIONS: a comma-separated subset of register,calls,media
 * (default all three). BENCH_CPU_PROF=<dir>: the server writes a V8 CPU
 * profile there when it stops. `npm run bench:sip -- --quick`: a smoke run
 * (200 users for 10 s, 50 setups/s for 5 s, 40 media calls for 10 s; any
 * BENCH_SIP_* variable still wins); figures from a smaller or shorter run
 * than the target's are marked indicative.
 */
import { randomBytes } from "node:crypto";
import dgram from "node:dgram";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import * as os from "node:os";
import { join } from "node:path";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import postgres from "postgres";
import {
  SipDomains,
  SipDomain_TerminationMode as TerminationMode,
} from "../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { Projects } from "../gen/switchboard/admin/v1/projects_pb.js";
import { SipUsers } from "../gen/switchboard/voice/v1/sip_users_pb.js";
import { openPostgres } from "../src/db/client.js";
import { buildServer } from "./calls-server.js";
import { formatChecks } from "./calls-targets.js";
import { benchNodeArgs, Child, killAllNow, ROOT, stopAll } from "./children.js";
import { playWav, runMedia } from "./sip-media.js";
import { type CallResult, mediaTargetChecks, type RegisterResult, sipTargetChecks } from "./sip-targets.js";
import { setupTimes, sippRun } from "./sipp.js";

function intEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}`);
  return n;
}

const QUICK = process.argv.includes("--quick");
const USERS = intEnv("BENCH_SIP_USERS", QUICK ? 200 : 2000, 1);
const REFRESH_SECONDS = intEnv("BENCH_SIP_REFRESH_SECONDS", 60, 1);
const REGISTER_SECONDS = intEnv("BENCH_SIP_REGISTER_SECONDS", QUICK ? 10 : 60, 1);
const CALL_RATE = intEnv("BENCH_SIP_CALL_RATE", QUICK ? 50 : 200, 1);
const CALL_SECONDS = intEnv("BENCH_SIP_CALL_SECONDS", QUICK ? 5 : 60, 1);
const IDLE_SECONDS = intEnv("BENCH_SIP_IDLE_SECONDS", QUICK ? 3 : 10, 1);
const MEDIA_CALLS = intEnv("BENCH_SIP_MEDIA_CALLS", QUICK ? 40 : 400, 1);
const MEDIA_SECONDS = intEnv("BENCH_SIP_MEDIA_SECONDS", QUICK ? 10 : 60, 1);
const MEDIA_RATE = intEnv("BENCH_SIP_MEDIA_RATE", 50, 1);
const SECTIONS = new Set(
  (process.env.BENCH_SIP_SECTIONS || "register,calls,media").split(",").map((x) => x.trim()),
);
for (const section of SECTIONS) {
  if (!["register", "calls", "media"].includes(section)) {
    throw new Error(
      `BENCH_SIP_SECTIONS: unknown section ${JSON.stringify(section)} (register, calls, media)`,
    );
  }
}
const OPERATOR_TOKEN = "bench-sip-operator-token-0123456789abcdef";
const PROJECT_ID = "bench-sip";
const PASSWORD = "bench-sip-s3cret";
const BASE_DOMAIN = "sip.switchboard.local";
const REGISTER_SCENARIO = join(ROOT, "test", "interop", "scenarios", "register-users.xml");
const CALL_SCENARIO = join(ROOT, "bench", "sip", "call.xml");

const log = (line: string) => process.stdout.write(`${line}\n`);

function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("Authorization", `Bearer ${token}`);
    return next(req);
  };
}

/** The server's CPU over `run` (ms) and the run's wall time (ms). */
async function measured<T>(
  server: Child,
  run: () => Promise<T>,
): Promise<{ value: T; cpuMs: number; wallMs: number }> {
  const cpu0 = server.cpuMs() ?? Number.NaN;
  const t0 = performance.now();
  const value = await run();
  const wallMs = performance.now() - t0;
  const cpuMs = (server.cpuMs() ?? Number.NaN) - cpu0;
  return { value, cpuMs, wallMs };
}

/** The final status an INVITE to `fqdn` gets (one literal INVITE on a UDP socket). */
async function probeInvite(port: number, fqdn: string): Promise<number | undefined> {
  const socket = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", () => resolve()));
  const local = socket.address().port;
  const branch = `z9hG4bK${randomBytes(6).toString("hex")}`;
  // An offer (an INVITE without one is answered 488: no codec in common).
  const sdp = [
    "v=0",
    `o=- 1 1 IN IP4 127.0.0.1`,
    "s=-",
    "c=IN IP4 127.0.0.1",
    "t=0 0",
    `m=audio ${local} RTP/AVP 0 8 101`,
    "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:8 PCMA/8000",
    "a=rtpmap:101 telephone-event/8000",
    "",
  ].join("\r\n");
  const lines = [
    `INVITE sip:bench@${fqdn} SIP/2.0`,
    `Via: SIP/2.0/UDP 127.0.0.1:${local};rport;branch=${branch}`,
    "Max-Forwards: 70",
    `From: <sip:probe@127.0.0.1:${local}>;tag=${branch}`,
    `To: <sip:bench@${fqdn}>`,
    `Call-ID: ${branch}@bench`,
    "CSeq: 1 INVITE",
    `Contact: <sip:probe@127.0.0.1:${local}>`,
    "Content-Type: application/sdp",
    `Content-Length: ${Buffer.byteLength(sdp)}`,
    "",
    sdp,
  ];
  try {
    return await new Promise<number | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), 10_000);
      socket.on("message", (data) => {
        const m = /^SIP\/2\.0 (\d{3}) /.exec(data.toString());
        const status = m === null ? 0 : Number(m[1]);
        if (status >= 200) {
          clearTimeout(timer);
          resolve(status);
        }
      });
      socket.send(lines.join("\r\n"), port, "127.0.0.1");
    });
  } finally {
    socket.close();
  }
}

/**
 * The call handlers: `/voice` answers `<Say>` then hang up (call setups);
 * `/media` `<Play>`s `/media.wav` (served here, cacheable) then hangs up.
 */
function startHandler(wav: Buffer): Promise<{ server: Server; url: string; base: string }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      if (req.url?.startsWith("/media.wav")) {
        res.writeHead(200, { "Content-Type": "audio/wav", "Cache-Control": "max-age=3600" });
        res.end(wav);
        return;
      }
      res.writeHead(200, { "Content-Type": "application/xml" });
      res.end(
        req.url?.startsWith("/media")
          ? `<?xml version="1.0" encoding="UTF-8"?><Response><Play>${base}/media.wav</Play></Response>`
          : '<?xml version="1.0" encoding="UTF-8"?><Response><Say>Hello</Say></Response>',
      );
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const address = server.address() as { port: number };
      const base = `http://127.0.0.1:${address.port}`;
      resolve({ server, url: `${base}/voice`, base });
    }),
  );
}

async function bench(databaseUrl: string, dir: string): Promise<void> {
  const server = new Child(
    "switchboard",
    "dist/server.js",
    {
      ...process.env,
      PORT: "0",
      SIP_PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      DATABASE_URL: databaseUrl,
      DATA_DIR: dir,
      SWITCHBOARD_OPERATOR_TOKEN: OPERATOR_TOKEN,
      RECORDING_LINK_SECRET: "bench-sip-recording-link-secret-0123456789",
      // SIPp 3.6 answers only the first challenge, and only MD5.
      SIP_DIGEST_ALGORITHMS: "MD5",
      WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true",
      RATE_LIMIT_PROJECT_PER_SECOND: "0",
      RATE_LIMIT_API_KEY_PER_SECOND: "0",
      CALL_CONCURRENCY_LIMIT: process.env.CALL_CONCURRENCY_LIMIT ?? "10000",
      // Ephemeral RTP ports: the machine may be shared with other services using 10000-20000.
      RTP_PORT_MIN: process.env.RTP_PORT_MIN ?? "0",
    },
    [],
    {
      compiled: true,
      // BENCH_CPU_PROF=<dir>: the server writes a V8 CPU profile there when it stops.
      nodeArgs: [
        ...(process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
        // BENCH_NODE_ARGS: more flags for the server's node (space-separated), e.g. a diagnostics --import.
        ...benchNodeArgs(),
      ],
    },
  );
  const listening = <T>(msg: string, pick: (entry: Record<string, unknown>) => T | undefined) =>
    server.waitForLine<T>((line) => {
      const entry = JSON.parse(line) as Record<string, unknown>;
      return entry.msg === msg ? pick(entry) : undefined;
    }, 120_000);
  const [base, sipPort] = await Promise.all([
    listening("switchboard listening", (e) => e.url as string),
    listening("SIP listening", (e) => (e.transport === "UDP" ? (e.port as number) : undefined)),
  ]);
  log(`server: ${base}, SIP on udp 127.0.0.1:${sipPort}`);
  const transport = createConnectTransport({
    baseUrl: base,
    httpVersion: "1.1",
    interceptors: [bearer(OPERATOR_TOKEN)],
  });
  await createClient(Projects, transport).createProject({ projectId: PROJECT_ID });
  const domains = createClient(SipDomains, transport);
  const users = createClient(SipUsers, transport);
  const registerDomain = await domains.createSipDomain({
    parent: `projects/${PROJECT_ID}`,
    sipDomainId: "bench-register",
    sipDomain: { allowRegister: true },
  });
  // Long enough for the calls' ramp, the settling and the window.
  const handler = await startHandler(playWav(MEDIA_SECONDS + Math.ceil(MEDIA_CALLS / MEDIA_RATE) + 20));
  try {
    // 1. Registrations.
    let register: RegisterResult | undefined;
    if (SECTIONS.has("register")) {
      log(`creating ${USERS} SIP users ...`);
      const names = Array.from({ length: USERS }, (_, i) => `u${i}`);
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < names.length) {
            const username = names[next++]!;
            await users.createSipUser({
              parent: registerDomain.name,
              sipUserId: username,
              sipUser: { username, password: PASSWORD },
            });
          }
        }),
      );
      const csv = join(dir, "users.csv");
      await writeFile(
        csv,
        `SEQUENTIAL\n${names.map((u) => `${u};[authentication username=${u} password=${PASSWORD}];`).join("\n")}\n`,
      );
      const fqdn = `bench-register.${BASE_DOMAIN}`;
      const registerArgs = (calls: number, perSecond: { calls: number; periodMs: number }) => [
        `127.0.0.1:${sipPort}`,
        "-sf",
        REGISTER_SCENARIO,
        "-inf",
        csv,
        "-key",
        "expires",
        String(Math.max(60, REFRESH_SECONDS * 2)),
        "-s",
        fqdn,
        "-t",
        "u1",
        "-m",
        String(calls),
        "-r",
        String(perSecond.calls),
        "-rp",
        String(perSecond.periodMs),
      ];
      log(`registering each user once (not measured) ...`);
      const first = await sippRun(registerArgs(USERS, { calls: 200, periodMs: 1000 }), USERS / 200 + 120);
      if (first.failed > 0 || first.code !== 0) {
        throw new Error(
          `the first registrations failed (${first.failed} of ${USERS}):\n${first.output.slice(-4000)}`,
        );
      }
      log(`measuring the idle server for ${IDLE_SECONDS} s ...`);
      const idle = await measured(server, () => new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000)));
      const refreshes = Math.max(1, Math.round((USERS * REGISTER_SECONDS) / REFRESH_SECONDS));
      log(
        `measuring: ${USERS} users refreshing every ${REFRESH_SECONDS} s for ${REGISTER_SECONDS} s (${refreshes} REGISTERs) ...`,
      );
      const run = await measured(server, () =>
        sippRun(
          registerArgs(refreshes, { calls: USERS, periodMs: REFRESH_SECONDS * 1000 }),
          REGISTER_SECONDS + 120,
        ),
      );
      register = {
        users: USERS,
        refreshSeconds: REFRESH_SECONDS,
        seconds: run.wallMs / 1000,
        registers: run.value.succeeded + run.value.failed,
        failed: run.value.failed,
        cpuPercent: (run.cpuMs / run.wallMs) * 100,
        idleCpuPercent: (idle.cpuMs / idle.wallMs) * 100,
        cpuMsPerRegister:
          (run.cpuMs - (idle.cpuMs / idle.wallMs) * run.wallMs) /
          Math.max(1, run.value.succeeded + run.value.failed),
      };
    }

    // 2. Call setups.
    const callDomain = await domains.createSipDomain({
      parent: `projects/${PROJECT_ID}`,
      sipDomainId: "bench-calls",
      sipDomain: {
        callTerminationMode: TerminationMode.PROGRAMMABLE,
        callTerminationHandlerUris: [handler.url],
        cidrBlocks: [{ cidrBlock: "127.0.0.0/8" }],
      },
    });
    const callFqdn = `${callDomain.sipDomainId}.${BASE_DOMAIN}`;
    const probe = await probeInvite(sipPort, callFqdn);
    let calls: CallResult;
    if (!SECTIONS.has("calls")) {
      calls = { measured: false, why: "skipped (BENCH_SIP_SECTIONS)" };
    } else if (probe === 501) {
      calls = { measured: false, why: "INVITE answers 501 (calls over SIP are not built yet)" };
    } else if (probe !== 200) {
      calls = { measured: false, why: `the probe INVITE was answered ${probe ?? "nothing in 10 s"}` };
    } else {
      const attempted = CALL_RATE * CALL_SECONDS;
      log(`measuring: ${attempted} calls at ${CALL_RATE}/s ...`);
      // SIPp's trace of each answer's time (-trace_rtt) goes to a directory of its own.
      const traces = await mkdtemp(join(dir, "calls-"));
      const callRun = await measured(server, () =>
        sippRun(
          [
            `127.0.0.1:${sipPort}`,
            "-sf",
            CALL_SCENARIO,
            "-s",
            callFqdn,
            "-t",
            "u1",
            "-m",
            String(attempted),
            "-r",
            String(CALL_RATE),
            "-rp",
            "1000",
            "-mi",
            "127.0.0.1",
            "-trace_rtt",
            "-rtt_freq",
            "200",
          ],
          CALL_SECONDS + 180,
          traces,
        ),
      );
      calls = {
        measured: true,
        setups: await setupTimes(traces),
        seconds: callRun.wallMs / 1000,
        attempted,
        succeeded: callRun.value.succeeded,
        failed: attempted - callRun.value.succeeded,
        serverCpuMsPerCall: callRun.cpuMs / Math.max(1, callRun.value.succeeded),
      };
    }

    // 3. Media.
    let media: Parameters<typeof mediaTargetChecks>[0] = {
      measured: false,
      why: "skipped (BENCH_SIP_SECTIONS)",
    };
    if (SECTIONS.has("media")) {
      const mediaDomain = await domains.createSipDomain({
        parent: `projects/${PROJECT_ID}`,
        sipDomainId: "bench-media",
        sipDomain: {
          callTerminationMode: TerminationMode.PROGRAMMABLE,
          callTerminationHandlerUris: [`${handler.base}/media`],
          cidrBlocks: [{ cidrBlock: "127.0.0.0/8" }],
        },
      });
      const mediaFqdn = `${mediaDomain.sipDomainId}.${BASE_DOMAIN}`;
      media = await runMedia(
        server,
        { sipPort, fqdn: mediaFqdn, calls: MEDIA_CALLS, seconds: MEDIA_SECONDS, perSecond: MEDIA_RATE, dir },
        log,
      );
      if (media.failedSetups > 0) {
        // Why the engine ended them (the calls' rows): the SIP answer alone does not say.
        const db = postgres(databaseUrl, { max: 1, onnotice: () => {} });
        try {
          const rows = await db<{ state: string; error_code: string; error_message: string; n: number }[]>`
            select state, error_code, error_message, count(*)::int as n from calls
            where project_id = ${PROJECT_ID} group by 1, 2, 3 order by n desc limit 5`;
          for (const r of rows) log(`media: calls ${r.state} ${r.error_code} ${r.error_message}: ${r.n}`);
        } finally {
          await db.end({ timeout: 5 });
        }
      }
    }

    log("");
    log("SIP edge targets (issue 27):");
    for (const line of formatChecks(sipTargetChecks(register, calls))) log(line);
    log("");
    log(
      `SIP media targets (issue 28; ${os.cpus().length} cores, load average ${os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(" ")}):`,
    );
    for (const line of formatChecks(mediaTargetChecks(media))) log(line);
  } finally {
    handler.server.close();
    await server.stop();
  }
}

async function main(): Promise<void> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) {
    log("bench:sip needs PostgreSQL: set TEST_DATABASE_URL (an admin URL on 127.0.0.1)");
    process.exitCode = 2;
    return;
  }
  const url = new URL(adminUrl);
  if (!["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)) {
    throw new Error(`refusing PostgreSQL at ${url.hostname}: only 127.0.0.1`);
  }
  await buildServer();
  const name = `sb_bench_${randomBytes(5).toString("hex")}`;
  const admin = () => postgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  const dir = await mkdtemp(join(os.tmpdir(), "sb-bench-sip-"));
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
    await bench(url.toString(), dir);
  } finally {
    await stopAll();
    if (created) {
      const a = admin();
      try {
        await a.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await a.end({ timeout: 5 });
      }
    }
    await rm(dir, { recursive: true, force: true });
  }
}

process.on("exit", killAllNow);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void stopAll().finally(() => process.exit(130));
  });
}
main().catch((err: unknown) => {
  process.stderr.write(`bench:sip failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
