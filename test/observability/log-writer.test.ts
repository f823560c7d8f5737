/**
 * The service logger's writer (src/log.ts): lines gathered and written to
 * stdout in batches, none lost when the process exits (with or without
 * process.exit, after a fatal line), none reordered; and the batching
 * itself, on a real file.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LineBatch } from "../../src/log.js";
import { ROOT } from "../support/build.js";

/** Runs `body` (ESM, `createLogger` and `log` in scope) in a node child; its stdout's JSON lines. */
async function childLines(body: string): Promise<Array<Record<string, unknown>>> {
  const code = `import { createLogger } from "./src/log.ts";\nconst log = createLogger("info");\n${body}`;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
  child.stderr.setEncoding("utf8").on("data", (c: string) => (err += c));
  const code_ = await new Promise<number | null>((resolve) => child.once("close", resolve));
  expect(err).toBe("");
  expect(code_).toBe(0);
  return out
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("The service logger's writer", () => {
  it("writes every line, in order, when the process ends by itself", async () => {
    const lines = await childLines("for (let i = 0; i < 5000; i++) log.info({ i }, 'line');");
    expect(lines.map((l) => l.i)).toEqual([...Array(5000).keys()]);
  });

  it("writes what is gathered at process.exit, and at once after a fatal line", async () => {
    const lines = await childLines(
      [
        "for (let i = 0; i < 3; i++) log.info({ i }, 'before');",
        "log.fatal({ i: 3 }, 'fatal');",
        // Written before the exit: were the batch not flushed by the fatal line,
        // this reader would see nothing here.
        "process.stdout.write(JSON.stringify({ i: 4, marker: true }) + '\\n');",
        "for (let i = 5; i < 8; i++) log.info({ i }, 'after');",
        "process.exit(0);",
      ].join("\n"),
    );
    expect(lines.map((l) => l.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(lines[3]!.msg).toBe("fatal");
  });

  it("writes a lone line within the flush interval, without waiting for more", async () => {
    const lines = await childLines(
      [
        "log.info('lone');",
        // Still alive 300 ms later; the line must already be out by then.
        "await new Promise((r) => setTimeout(r, 300));",
        "process.stdout.write(JSON.stringify({ msg: 'marker' }) + '\\n');",
        "process.exit(0);",
      ].join("\n"),
    );
    expect(lines.map((l) => l.msg)).toEqual(["lone", "marker"]);
  });
});

describe("LineBatch", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "sb-log-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("holds lines until 4 KiB are gathered, then writes them joined; flush writes the rest", async () => {
    const file = join(dir, "batch.log");
    const sink = pino.destination({ dest: file, sync: true });
    const batch = new LineBatch(sink);
    const line = `${JSON.stringify({ msg: "x".repeat(90) })}\n`; // 101 bytes
    for (let i = 0; i < 40; i++) batch.write(line); // 4,040 bytes: under 4 KiB
    expect((await stat(file)).size).toBe(0);
    batch.write(line); // 4,141 bytes: written
    expect((await stat(file)).size).toBe(41 * line.length);
    batch.write(line);
    expect((await stat(file)).size).toBe(41 * line.length);
    let called = false;
    batch.flush(() => {
      called = true;
    });
    expect(called).toBe(true); // pino's logger.flush(cb) waits for it
    expect(await readFile(file, "utf8")).toBe(line.repeat(42));
    sink.destroy();
  });

  it("writes a lone line 100 ms after it came, and runs no timer while there is nothing to write", async () => {
    const file = join(dir, "timer.log");
    const sink = pino.destination({ dest: file, sync: true });
    vi.useFakeTimers();
    try {
      const batch = new LineBatch(sink);
      expect(vi.getTimerCount()).toBe(0);
      batch.write("one\n");
      batch.write("two\n"); // the flush due for "one" takes it too
      expect(vi.getTimerCount()).toBe(1);
      vi.advanceTimersByTime(99);
      expect((await stat(file)).size).toBe(0);
      vi.advanceTimersByTime(1);
      expect(await readFile(file, "utf8")).toBe("one\ntwo\n");
      // Idle: no timer left to wake the process.
      expect(vi.getTimerCount()).toBe(0);
      vi.advanceTimersByTime(10_000);
      batch.write("three\n");
      expect(vi.getTimerCount()).toBe(1);
      vi.advanceTimersByTime(100);
      expect(await readFile(file, "utf8")).toBe("one\ntwo\nthree\n");
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
      sink.destroy();
    }
  });
});
