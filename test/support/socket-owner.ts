/**
 * Which of a few local processes owns the TCP socket bound to a loopback
 * port (Linux procfs): a receiver asks it with a request's peer port, while
 * the connection is still open, to learn which process sent the request.
 *
 * /proc/net/tcp{,6} map the local port to a socket inode; /proc/<pid>/fd
 * links name the inodes a process holds.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** The inodes of the sockets whose local port is `port`. */
function inodesOf(port: number): Set<string> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      if (fields.length < 10) continue;
      if (fields[1]!.endsWith(`:${hexPort}`) && fields[9] !== "0") inodes.add(fields[9]!);
    }
  }
  return inodes;
}

/** The pid among `pids` holding a socket bound locally to `port`, or undefined. */
export function socketOwner(port: number, pids: number[]): number | undefined {
  const inodes = inodesOf(port);
  if (inodes.size === 0) return undefined;
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (m && inodes.has(m[1]!)) return pid;
    }
  }
  return undefined;
}
