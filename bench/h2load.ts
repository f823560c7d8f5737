/**
 * The external load generator of `npm run bench`: h2load (Debian's
 * `nghttp2-client`), a C program in its own process, so the load does not
 * share the server's process or compete for its event loop, and a
 * CPU-bound load generator does not cap the figures (the Node clients of
 * bench/clients.ts reach about a fifth of what h2load does here).
 *
 * It is a benchmark tool, not a test dependency: nothing under test/ needs
 * it. When it is missing the bench stops with INSTALL_HINT.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import * as os from "node:os";
import { join } from "node:path";

export const INSTALL_HINT =
  "h2load not found: `npm run bench` drives the server with h2load, from Debian's nghttp2-client.\n" +
  "Install it with `sudo apt-get install -y nghttp2-client` (or `brew install nghttp2` on macOS),\n" +
  "or point BENCH_H2LOAD at the binary.";

/** The h2load binary: BENCH_H2LOAD, or `h2load` on PATH. */
export const H2LOAD = process.env.BENCH_H2LOAD || "h2load";

/** Resolves with h2load's version line; rejects with INSTALL_HINT when it cannot run. */
export function h2loadVersion(): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(H2LOAD, ["--version"], { timeout: 10_000 }, (err, stdout) => {
      if (err) reject(new Error(`${INSTALL_HINT}\n(${err.message})`));
      else resolve(stdout.trim().split("\n")[0] ?? "h2load");
    });
  });
}

/** One kind of request, repeated. */
export interface H2loadRequest {
  /** Absolute http:// URL on 127.0.0.1. */
  url: string;
  /** POST this body (h2load sends POST when given a body), or GET without one. */
  body?: Uint8Array | string;
  headers: Record<string, string>;
  /** HTTP/1.1 (`--h1`) instead of HTTP/2 cleartext with prior knowledge. */
  h1: boolean;
}

export interface H2loadOptions {
  /** Requests to send (all are awaited: the count is exact). */
  requests: number;
  /** TCP connections. */
  clients: number;
  /** Concurrent streams per connection (HTTP/2); 1 on HTTP/1.1 (no pipelining). */
  streams: number;
  /** Hard limit on the run, ms. */
  timeoutMs: number;
}

export interface H2loadResult {
  requests: number;
  /** Responses with a 2xx status (gRPC errors are 200 too: check them elsewhere). */
  succeeded: number;
  failed: number;
  errored: number;
  status2xx: number;
  status4xx: number;
  status5xx: number;
  elapsedMs: number;
  /** Requests per second as h2load reports it. */
  rps: number;
  /** Request time, ms: mean and max as h2load reports them. */
  meanMs: number;
  maxMs: number;
}

function toMs(value: string, unit: string): number {
  const n = Number(value);
  switch (unit) {
    case "us":
      return n / 1000;
    case "ms":
      return n;
    case "s":
      return n * 1000;
    default:
      return Number.NaN;
  }
}

/** Parses h2load's summary (stable since nghttp2 1.x). */
export function parseH2load(output: string): H2loadResult {
  const num = (re: RegExp) => {
    const m = re.exec(output);
    if (!m) throw new Error(`h2load: unexpected output (no ${re.source}):\n${output.slice(-1500)}`);
    return m;
  };
  const finished = num(/finished in ([\d.]+)(us|ms|s), ([\d.]+) req\/s/);
  const req = num(
    /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored/,
  );
  const codes = num(/status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/);
  const time = /time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)/.exec(output);
  return {
    requests: Number(req[1]),
    succeeded: Number(req[4]),
    failed: Number(req[5]),
    errored: Number(req[6]),
    status2xx: Number(codes[1]),
    status4xx: Number(codes[3]),
    status5xx: Number(codes[4]),
    elapsedMs: toMs(finished[1]!, finished[2]!),
    rps: Number(finished[3]),
    meanMs: time ? toMs(time[5]!, time[6]!) : Number.NaN,
    maxMs: time ? toMs(time[3]!, time[4]!) : Number.NaN,
  };
}

/** Runs h2load once; resolves with its parsed summary. */
export async function runH2load(request: H2loadRequest, options: H2loadOptions): Promise<H2loadResult> {
  const url = new URL(request.url);
  if (url.protocol !== "http:" || url.hostname !== "127.0.0.1") {
    throw new Error(`refusing to load ${request.url}: the benchmark only calls http://127.0.0.1`);
  }
  const args = [
    "-n",
    String(options.requests),
    "-c",
    String(Math.min(options.clients, options.requests)),
    "-m",
    String(request.h1 ? 1 : options.streams),
    // One thread: the machine's other core is the server's.
    "-t",
    "1",
  ];
  if (request.h1) args.push("--h1");
  for (const [k, v] of Object.entries(request.headers)) args.push("-H", `${k}: ${v}`);
  let dir: string | undefined;
  if (request.body !== undefined) {
    dir = await mkdtemp(join(os.tmpdir(), "switchboard-h2load-"));
    const file = join(dir, "body");
    await writeFile(file, request.body);
    args.push("-d", file);
  }
  args.push(request.url);
  try {
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(H2LOAD, args, { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout.setEncoding("utf8").on("data", (c: string) => {
        out += c;
      });
      child.stderr.setEncoding("utf8").on("data", (c: string) => {
        out += c;
      });
      const timer = setTimeout(() => child.kill("SIGINT"), options.timeoutMs);
      child.once("error", (err) => {
        clearTimeout(timer);
        reject((err as NodeJS.ErrnoException).code === "ENOENT" ? new Error(INSTALL_HINT) : err);
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        if (code === 0) resolve(out);
        else reject(new Error(`h2load exited with ${code}: ${out.slice(-1500)}`));
      });
    });
    return parseH2load(output);
  } finally {
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}
