/**
 * SIPp (Debian's `sip-tester`) as the interop tests and `npm run bench:sip`
 * run it: a scenario against one address, its exit code and its output, and
 * the CSV of users its `[field0]`/`[field1]` read.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const SCENARIOS = join(import.meta.dirname, "..", "scenarios");

export interface SippRun {
  /** SIPp's exit code: 0 when every call of the run succeeded. */
  code: number | null;
  output: string;
}

/**
 * Runs SIPp once with `args` (add `-m` for the number of calls; 1 when not
 * given). A run that fails has the messages SIPp sent and received at the end
 * of its output. `cwd`: where SIPp runs (and finds the files a scenario names
 * by a relative path, such as its `play_pcap_audio` captures).
 */
export function sipp(args: string[], timeout = "30s", cwd?: string): Promise<SippRun> {
  const calls = args.includes("-m") ? [] : ["-m", "1"];
  const dir = mkdtempSync(join(tmpdir(), "sb-sipp-"));
  const messages = join(dir, "messages.log");
  return new Promise((resolve) => {
    execFile(
      "sipp",
      [
        ...args,
        ...calls,
        "-timeout",
        timeout,
        "-nostdin",
        "-trace_err",
        "-trace_msg",
        "-message_file",
        messages,
      ],
      { maxBuffer: 16 * 1024 * 1024, ...(cwd === undefined ? {} : { cwd }) },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : null;
        let log = "";
        if (code !== 0) {
          try {
            log = `\n-- messages --\n${readFileSync(messages, "utf8").slice(-20_000)}`;
          } catch {
            // SIPp wrote none
          }
        }
        rmSync(dir, { recursive: true, force: true });
        resolve({ code, output: `${stdout}\n${stderr}${log}` });
      },
    );
  });
}

/**
 * Writes a SIPp injection file of users, read in order (SEQUENTIAL): field 0
 * the username, field 1 SIPp's `[authentication ...]` keyword with that
 * user's credentials (SIPp 3.6 reads the keyword from the file, not from
 * fields nested in the scenario's keyword).
 */
export function usersCsv(path: string, users: Array<{ username: string; password: string }>): string {
  const lines = users.map(
    (u) => `${u.username};[authentication username=${u.username} password=${u.password}];`,
  );
  writeFileSync(path, `SEQUENTIAL\n${lines.join("\n")}\n`);
  return path;
}
