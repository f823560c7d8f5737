/**
 * Child processes of the benchmark: the server under test, the ceiling
 * server and the seeding script, each a separate `node` process (the pid
 * is the node process itself, so /proc/<pid>/status is the server's RSS).
 * Every child is registered so the runner can stop all of them on exit,
 * failure or signal; the preloaded parent guard stops them if the runner
 * dies without a chance to.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (children run from here so `src/...` and `tsx` resolve). */
export const ROOT = fileURLToPath(new URL("..", import.meta.url));

const live = new Set<Child>();

/** USER_HZ of /proc/<pid>/stat: 100 on Linux. */
const CLOCK_TICKS_PER_SECOND = 100;

export class Child {
  readonly proc: ChildProcess;
  readonly pid: number;
  private readonly stderrTail: string[] = [];
  /** The last error-level (pino level >= 50) log line on stdout. */
  private lastErrorLine: string | undefined;
  private readonly lineListeners = new Set<(line: string) => void>();
  private exitCode: number | null | undefined;
  private exitSignal: NodeJS.Signals | null = null;
  readonly exited: Promise<void>;

  constructor(
    readonly label: string,
    script: string,
    env: NodeJS.ProcessEnv,
    args: string[] = [],
    /** Compiled JavaScript (run by plain node, no tsx loader) and extra node flags. */
    options: { compiled?: boolean; nodeArgs?: string[] } = {},
  ) {
    // The compiled server runs with npm start's node flags, as a user's does.
    const loader = options.compiled ? serverNodeFlags() : ["--import", "tsx"];
    this.proc = spawn(
      process.execPath,
      [...loader, ...(options.nodeArgs ?? []), "--import", "./bench/parent-guard.mjs", script, ...args],
      { cwd: ROOT, env, stdio: ["pipe", "pipe", "pipe"] },
    );
    if (this.proc.pid === undefined) throw new Error(`${label}: could not start ${script}`);
    this.pid = this.proc.pid;
    live.add(this);
    this.exited = new Promise((resolve) => {
      this.proc.once("exit", (code, signal) => {
        this.exitCode = code;
        this.exitSignal = signal;
        live.delete(this);
        resolve();
      });
      this.proc.once("error", () => {
        live.delete(this);
        resolve();
      });
    });
    this.proc.stdin?.on("error", () => {});
    let buffered = "";
    // BENCH_SERVER_LOG: every child's log lines appended to that file too (diagnosis).
    const logFile = process.env.BENCH_SERVER_LOG;
    if (logFile) this.lineListeners.add((line) => appendFileSync(logFile, `${label} ${line}\n`));
    // Always drained, so a chatty child never blocks on a full pipe.
    this.proc.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      buffered += chunk;
      let nl = buffered.indexOf("\n");
      while (nl >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.includes('"level":50') || line.includes('"level":60')) this.lastErrorLine = line;
        for (const listener of this.lineListeners) listener(line);
        nl = buffered.indexOf("\n");
      }
    });
    this.proc.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderrTail.push(chunk);
      if (this.stderrTail.length > 50) this.stderrTail.shift();
    });
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /** What the child said on stderr lately (for error messages). */
  stderr(): string {
    return this.stderrTail.join("").trim().slice(-2_000);
  }

  /**
   * The message of the child's last error log (a JSON line of pino) and
   * where it was thrown, once: the server answers INTERNAL without details.
   */
  takeLoggedError(): string | undefined {
    const line = this.lastErrorLine;
    this.lastErrorLine = undefined;
    if (line === undefined) return undefined;
    try {
      const entry = JSON.parse(line) as { msg?: string; err?: { message?: string; stack?: string } };
      const at = entry.err?.stack?.split("\n").find((l) => l.trim().startsWith("at "));
      return [entry.msg, entry.err?.message, at?.trim()].filter(Boolean).join(": ");
    } catch {
      return line.slice(0, 500);
    }
  }

  describeExit(): string {
    const how = this.exitSignal !== null ? `signal ${this.exitSignal}` : `code ${this.exitCode}`;
    const err = this.stderr();
    return `${this.label} exited (${how})${err ? `: ${err}` : ""}`;
  }

  /** Resolves with the first stdout line `parse` accepts; rejects if the child exits first or on timeout. */
  waitForLine<T>(parse: (line: string) => T | undefined, timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${this.label}: no expected output within ${timeoutMs} ms. ${this.stderr()}`));
      }, timeoutMs);
      const listener = (line: string) => {
        let value: T | undefined;
        try {
          value = parse(line);
        } catch {
          value = undefined;
        }
        if (value !== undefined) {
          done();
          resolve(value);
        }
      };
      const onExit = () => {
        done();
        reject(new Error(this.describeExit()));
      };
      const done = () => {
        clearTimeout(timer);
        this.lineListeners.delete(listener);
        this.proc.off("exit", onExit);
      };
      this.lineListeners.add(listener);
      this.proc.once("exit", onExit);
      if (!this.running) onExit();
    });
  }

  /** Resident set size of the child now (VmRSS), in bytes; undefined once it has exited. */
  rssBytes(): number | undefined {
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, "utf8");
      const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
      return m ? Number(m[1]) * 1024 : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * CPU time the child has used so far (user + system, all threads), in
   * milliseconds, from /proc/<pid>/stat (clock ticks of 10 ms).
   */
  cpuMs(): number | undefined {
    return procCpuMs(this.pid);
  }

  private gcSeq = 0;

  /**
   * The child's garbage-collection pauses so far, ms, from bench/gc-meter.mjs
   * writing to `file` (its BENCH_GC_METER_FILE) when asked on stdin: a file,
   * not a stdout line, which the server's log would interleave with.
   * Undefined when it does not answer within a second.
   */
  async gcTotals(file: string): Promise<number | undefined> {
    const seq = ++this.gcSeq;
    if (!this.running || this.proc.stdin === null) return undefined;
    this.proc.stdin.write(`gc ${seq}\n`);
    const until = performance.now() + 1_000;
    while (performance.now() < until) {
      try {
        const got = JSON.parse(readFileSync(file, "utf8")) as { seq: number; ms: number };
        if (got.seq === seq) return got.ms;
      } catch {
        // not written yet, or being written
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    return undefined;
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    this.proc.kill("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.proc.kill("SIGKILL");
        resolve();
      }, graceMs);
    });
    await Promise.race([this.exited, killed]);
    clearTimeout(timer);
    await this.exited;
  }
}

/** Stops every child still running (SIGTERM, then SIGKILL). */
export async function stopAll(): Promise<void> {
  await Promise.all([...live].map((c) => c.stop(5_000)));
}

/** Last resort on process exit: synchronous SIGKILL of whatever is left. */
export function killAllNow(): void {
  for (const c of live) {
    try {
      process.kill(c.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** Waits for the child to exit with code 0. */
export async function expectSuccess(child: Child, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${child.label}: still running after ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    await Promise.race([child.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
  if (child.proc.exitCode !== 0) throw new Error(child.describeExit());
}

/**
 * CPU time process `pid` has used so far (user + system, all threads), in
 * milliseconds, from /proc/<pid>/stat (clock ticks of 10 ms); undefined
 * once it has exited.
 */
export function procCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * (1000 / CLOCK_TICKS_PER_SECOND);
  } catch {
    return undefined;
  }
}

/** BENCH_NODE_ARGS: extra node options for the servers a bench starts (experiments: `--max-semi-space-size=32`). */
export function benchNodeArgs(): string[] {
  return process.env.BENCH_NODE_ARGS?.split(/\s+/).filter((a) => a !== "") ?? [];
}

/** The node flags of `npm start` (package.json: `exec node <flags> dist/server.js`). */
export function serverNodeFlags(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: { start: string } };
  const m = /exec node (.*?)\s*dist\/server\.js/.exec(pkg.scripts.start);
  if (m === null)
    throw new Error(`package.json's start script does not run dist/server.js: ${pkg.scripts.start}`);
  return m[1]!.split(/\s+/).filter((f) => f !== "");
}
