/**
 * Processes of the project run as an operator runs them (the compiled
 * server, the example handler): a free port to give them, and a child
 * process whose output is captured and whose exit can be awaited.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { ROOT } from "./build.js";

/**
 * A port nobody listens on right now, and that nobody else in this test run
 * will be given: the child binds it seconds later (an embedded database takes
 * a while to start), and a port from the kernel's ephemeral range could be
 * handed in that window to any other test's listen(0) — a server that would
 * then answer this test's requests (seen in CI). So ports come from below the
 * ephemeral range, from a block of this test worker's own (VITEST_POOL_ID), and
 * each is probed before it is handed out.
 */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < PORTS_PER_WORKER; tries++) {
    const port = blockStart() + (nextPort++ % PORTS_PER_WORKER);
    if (await bindable(port)) return port;
  }
  throw new Error("freePort: no free port in this test worker's block");
}

const PORTS_PER_WORKER = 200;
let nextPort = 0;

/** The first port of this worker's block: below the ephemeral range's start (Linux: /proc). */
function blockStart(): number {
  let ephemeralLow = 32768;
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 0) ephemeralLow = low;
  } catch {
    // not Linux: the IANA dynamic range starts at 49152, 32768 is below both
  }
  const pool = Number(process.env.VITEST_POOL_ID ?? "0") % 32;
  return Math.max(1024, ephemeralLow - 32 * PORTS_PER_WORKER - 1000) + pool * PORTS_PER_WORKER;
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

export interface Proc {
  child: ChildProcess;
  /** stdout and stderr so far, interleaved. */
  output: () => string;
  /** The exit code (null when ended by a signal). */
  exited: Promise<number | null>;
}

/** Starts `command` in the checkout with `env` added to this process's environment. */
export function launch(command: string, args: string[], env: NodeJS.ProcessEnv): Proc {
  const child = spawn(command, args, {
    cwd: ROOT,
    // SIP on a free port unless the test says otherwise: test files start servers side by side.
    env: { ...process.env, SIP_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  child.stderr?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => out, exited };
}
