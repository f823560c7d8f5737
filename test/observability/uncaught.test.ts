/**
 * An error nothing caught (src/process-errors.ts): the process says so as a
 * JSON fatal line on stdout, with the error and where it was thrown, and
 * exits 1. Real child processes, as the service runs.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { ROOT } from "../support/build.js";

async function run(body: string): Promise<{ code: number | null; lines: Array<Record<string, unknown>> }> {
  const code = [
    'import { createLogger } from "./src/log.ts";',
    'import { exitOnUncaught } from "./src/process-errors.ts";',
    'const log = createLogger("info");',
    "exitOnUncaught(log);",
    'log.info("started");',
    body,
  ].join("\n");
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
  const exitCode = await new Promise<number | null>((resolve) => child.once("close", resolve));
  return {
    code: exitCode,
    lines: out
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

describe("an error nothing caught", () => {
  it.each([
    [
      "a rejected promise nobody handles",
      "unhandled promise rejection",
      "Promise.reject(new Error('lost in a promise'));",
    ],
    [
      "an exception thrown from a callback",
      "uncaught exception",
      "setTimeout(() => { throw new Error('lost in a callback'); }, 5);",
    ],
  ])("%s: a JSON fatal line with the error, then exit 1", async (_case, what, body) => {
    const { code, lines } = await run(`${body}\nsetTimeout(() => log.info("still running"), 2000);`);
    expect(code).toBe(1);
    expect(lines.map((l) => l.msg)).toEqual(["started", `${what}; exiting`]);
    const fatal = lines[1]!;
    expect(fatal.level).toBe(60);
    const err = fatal.err as { message: string; stack: string; type: string };
    expect(err.type).toBe("Error");
    expect(err.message).toMatch(/^lost in a (promise|callback)$/);
    expect(err.stack).toContain(err.message);
  });
});
