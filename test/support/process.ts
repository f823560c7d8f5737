/**
 * Processes of the project run as an operator runs them (the compiled
 * server, the example handler): a free port to give them, and a child
 * process whose output is captured and whose exit can be awaited.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { ROOT } from "./build.js";

/** A port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const address = s.address();
      s.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
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
    env: { ...process.env, ...env },
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
