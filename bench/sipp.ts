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

/** Runs SIPp with `args`; gives up (SIPp's own -timeout) after `timeoutSeconds`. */
export function sippRun(args: string[], timeoutSeconds: number): Promise<SippResult> {
  return new Promise((resolve) => {
    execFile(
      "sipp",
      [...args, "-timeout", `${Math.ceil(timeoutSeconds)}s`, "-nostdin", "-trace_err"],
      { maxBuffer: 64 * 1024 * 1024 },
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
