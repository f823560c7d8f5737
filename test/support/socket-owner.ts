/**
 * Which of a few local processes owns the TCP socket bound to a loopback
 * port (Linux procfs): a receiver asks it with a request's peer port, while
 * the connection is still open, to learn which process sent the request.
 *
 * /proc/net/tcp{,6} map the local port to a socket inode; /proc/<pid>/fd
 * links name the inodes a process holds.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

const hex = (port: number) => port.toString(16).toUpperCase().padStart(4, "0");

/**
 * The inodes of the sockets whose local port is `port` (and, given
 * `peerPort`, whose remote port is that: the kernel lets two connections to
 * different peers share a local port, in different processes too).
 */
function inodesOf(port: number, peerPort?: number): Set<string> {
  const hexPort = hex(port);
  const hexPeer = peerPort === undefined ? undefined : hex(peerPort);
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
      if (!fields[1]!.endsWith(`:${hexPort}`) || fields[9] === "0") continue;
      if (hexPeer !== undefined && !fields[2]!.endsWith(`:${hexPeer}`)) continue;
      inodes.add(fields[9]!);
    }
  }
  return inodes;
}

/**
 * The pid among `pids` holding a socket bound locally to `port` (connected
 * to `peerPort`, when given: the receiver's own port), or undefined.
 */
export function socketOwner(port: number, pids: number[], peerPort?: number): number | undefined {
  const inodes = inodesOf(port, peerPort);
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
