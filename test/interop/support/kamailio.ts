/**
 * Kamailio (Debian's `kamailio`) run by a test as a child process with the
 * repository's config (deploy/kamailio/kamailio.cfg), copied with its
 * dispatcher list into a temporary directory: listening on 127.0.0.1 on a
 * port the test picks, probing the replicas every second. `destinations`
 * reads the dispatcher's view of the replicas through kamcmd.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../../support/build.js";

export const KAMAILIO_CONFIG = join(ROOT, "deploy", "kamailio", "kamailio.cfg");

export interface Destination {
  uri: string;
  /** The dispatcher's flags: `AP` active and probed, `IP` inactive (not answering probes). */
  flags: string;
}

export interface Kamailio {
  port: number;
  child: ChildProcess;
  output(): string;
  /** The replicas as the dispatcher sees them now. */
  destinations(): Promise<Destination[]>;
  stop(): Promise<void>;
}

export async function startKamailio(options: {
  port: number;
  /** The replicas' SIP URIs (dispatcher set 1). */
  replicas: string[];
  probeIntervalSeconds?: number;
}): Promise<Kamailio> {
  const dir = mkdtempSync(join(tmpdir(), "sb-kamailio-"));
  const config = join(dir, "kamailio.cfg");
  copyFileSync(KAMAILIO_CONFIG, config);
  const list = join(dir, "dispatcher.list");
  writeFileSync(list, `${options.replicas.map((uri) => `1 ${uri} 0 0`).join("\n")}\n`);
  const ctl = join(dir, "ctl.sock");
  const child = spawn(
    "kamailio",
    [
      "-f",
      config,
      "-DD", // stay in the foreground, still forking the SIP workers
      "-E", // log to stderr
      "-Y",
      dir, // runtime directory
      "-P",
      join(dir, "kamailio.pid"),
      "-l",
      `udp:127.0.0.1:${options.port}`,
      "-l",
      `tcp:127.0.0.1:${options.port}`,
      "-A",
      `DISPATCHER_LIST="${list}"`,
      "-A",
      `CTL_SOCKET="unix:${ctl}"`,
      "-A",
      `PROBE_INTERVAL=${options.probeIntervalSeconds ?? 1}`,
      // One unanswered probe marks a replica inactive; a busy machine gets 5 s to answer one.
      "-A",
      "PROBE_THRESHOLD=1",
      "-A",
      "FR_TIMER=5000",
      "-m",
      "64",
      "-M",
      "8",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  child.stdout?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  child.stderr?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));

  const kamcmd = (...args: string[]) =>
    new Promise<string>((resolve, reject) => {
      execFile("kamcmd", ["-s", `unix:${ctl}`, ...args], (err, stdout, stderr) => {
        if (err) reject(new Error(`kamcmd ${args.join(" ")}: ${stderr || err.message}`));
        else resolve(stdout);
      });
    });

  const destinations = async (): Promise<Destination[]> => {
    const text = await kamcmd("dispatcher.list");
    return [...text.matchAll(/URI: (\S+)\s+FLAGS: (\S+)/g)].map((m) => ({ uri: m[1]!, flags: m[2]! }));
  };

  // Ready when the control socket answers with the list loaded.
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`kamailio exited (${child.exitCode}):\n${out}`);
    try {
      if ((await destinations()).length === options.replicas.length) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGTERM");
      throw new Error(`kamailio did not start:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }

  return {
    port: options.port,
    child,
    output: () => out,
    destinations,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
