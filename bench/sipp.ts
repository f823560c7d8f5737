/**
 * SIPp runs of `npm run bench:sip`: one scenario at a given rate, and the
 * counts of its final statistics screen (successful and failed calls).
 */
import { execFile } from "node:child_process";

export interface SippResult {
  /** SIPp's exit code: 0 when every call succeeded. */
  code: number | null;
  succeeded: number;
  failed: number;
  output: string;
}

/** The cumulative value of a counter of SIPp's statistics screen. */
function counter(output: string, name: string): number {
  const all = [...output.matchAll(new RegExp(`${name}\\s*\\|\\s*\\d+\\s*\\|\\s*(\\d+)`, "g"))];
  return all.length === 0 ? 0 : Number(all[all.length - 1]![1]);
}

/**
 * Runs SIPp with `args`; gives up (SIPp's own -timeout) after `timeoutSeconds`.
 * `cwd`: where SIPp writes its trace files (`-trace_rtt`: `<scenario>_<pid>_rtt.csv`).
 */
export function sippRun(args: string[], timeoutSeconds: number, cwd?: string): Promise<SippResult> {
  return new Promise((resolve) => {
    execFile(
      "sipp",
      [...args, "-timeout", `${Math.ceil(timeoutSeconds)}s`, "-nostdin", "-trace_err"],
      { maxBuffer: 64 * 1024 * 1024, ...(cwd === undefined ? {} : { cwd }) },
      (err, stdout, stderr) => {
        if (err !== null && (err as NodeJS.ErrnoException).code === "ENOENT") {
          resolve({
            code: null,
            succeeded: 0,
            failed: 0,
            output: "sipp is not installed (Debian: sip-tester)",
          });
          return;
        }
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : null;
        const output = `${stdout}\n${stderr}`;
        resolve({
          code,
          succeeded: counter(output, "Successful call"),
          failed: counter(output, "Failed call"),
          output,
        });
      },
    );
  });
}

/** Call setups as SIPp timed them (`-trace_rtt`): when each answer came, and how long after its INVITE. */
export interface SetupTimes {
  /** Answers received. */
  count: number;
  /** From the first answer to the last, s. */
  spanSeconds: number;
  /** Answers per second over that span ((count - 1) / span). */
  perSecond: number;
  /** INVITE to 200, ms: p50, p99, max. */
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
}

/**
 * Reads the `*_rtt.csv` that `-trace_rtt` left in `dir` (rows
 * `Date_ms;response_time_ms;rtd_no`: when SIPp took the answer, ms since it
 * started, and the INVITE-to-answer time); undefined when there is none.
 */
export async function setupTimes(dir: string): Promise<SetupTimes | undefined> {
  const { readdir, readFile } = await import("node:fs/promises");
  const { join } = await import("node:path");
  const file = (await readdir(dir)).find((f) => f.endsWith("_rtt.csv"));
  if (file === undefined) return undefined;
  const rows = (await readFile(join(dir, file), "utf8"))
    .split("\n")
    .slice(1)
    .map((line) => line.split(";").map(Number))
    .filter((r) => r.length >= 2 && Number.isFinite(r[0]) && Number.isFinite(r[1])) as number[][];
  if (rows.length < 2) return undefined;
  const at = rows.map((r) => r[0]!);
  const latency = rows.map((r) => r[1]!).sort((a, b) => a - b);
  const spanSeconds = (Math.max(...at) - Math.min(...at)) / 1000;
  const pick = (p: number) =>
    latency[Math.min(latency.length - 1, Math.ceil((p / 100) * latency.length) - 1)]!;
  return {
    count: rows.length,
    spanSeconds,
    perSecond: spanSeconds > 0 ? (rows.length - 1) / spanSeconds : 0,
    latencyP50Ms: pick(50),
    latencyP99Ms: pick(99),
    latencyMaxMs: latency[latency.length - 1]!,
  };
}
