/**
 * The sockets of an RTP session (./session.ts): an RTP port and its RTCP
 * port (the next one) bound as a pair from the configured range, and the
 * lookup that keeps sends to literal addresses synchronous.
 */
import dgram from "node:dgram";
import net from "node:net";

/** No port of the range could be bound. */
export class RtpBindError extends Error {
  override readonly name = "RtpBindError";
}

/**
 * An RTP socket on an even port of [min, max] and its RTCP socket on the
 * next port, tried from a random start, each pair once. min = max = 0: any
 * free even port the system gives (tests), asking again while it gives an
 * odd one or the next port is taken.
 */
export async function bindPair(
  type: "udp4" | "udp6",
  address: string,
  min: number,
  max: number,
): Promise<{ rtp: dgram.Socket; rtcp: dgram.Socket; port: number }> {
  if (min === 0 && max === 0) {
    // Any port the system gives: an even one is the RTP port and the next its RTCP; an odd
    // one is an RTCP port whose RTP port is the one below (half the ports given are odd:
    // tried as such, they cost no bind and close of their own).
    for (let attempt = 0; attempt < 64; attempt++) {
      const first = await bind(type, address, 0);
      if (first === undefined) break;
      const port = first.address().port;
      if (port % 2 === 0) {
        const rtcp = port < 65535 ? await bind(type, address, port + 1) : undefined;
        if (rtcp !== undefined) return { rtp: first, rtcp, port };
      } else {
        const rtp = port > 1 ? await bind(type, address, port - 1) : undefined;
        if (rtp !== undefined) return { rtp, rtcp: first, port: port - 1 };
      }
      await closeSocket(first);
    }
    throw new RtpBindError(`no free RTP port pair on ${address}`);
  }
  if (!Number.isInteger(min) || !Number.isInteger(max) || min < 1 || max > 65535 || min >= max) {
    throw new RangeError(
      `the RTP port range must be 0-0 (any), or min < max within 1..65535; got ${min}-${max}`,
    );
  }
  const first = min % 2 === 0 ? min : min + 1;
  const pairs = Math.floor((max - first - 1) / 2) + 1;
  if (pairs < 1)
    throw new RangeError(`the RTP port range ${min}-${max} holds no even port with the next one`);
  const start = Math.floor(Math.random() * pairs);
  for (let i = 0; i < pairs; i++) {
    const port = first + 2 * ((start + i) % pairs);
    const rtp = await bind(type, address, port);
    if (rtp === undefined) continue;
    const rtcp = await bind(type, address, port + 1);
    if (rtcp !== undefined) return { rtp, rtcp, port };
    await closeSocket(rtp);
  }
  throw new RtpBindError(`no free RTP port pair in ${min}-${max} on ${address}`);
}

/**
 * RTP goes to IP addresses only (checkRemote; a packet's source): answered
 * at once, so a packet leaves within the pacer's tick instead of after a
 * trip through dns.lookup's nextTick (a closure and a queued callback per
 * packet).
 */
const literalLookup = ((
  hostname: string,
  _options: unknown,
  callback: (err: NodeJS.ErrnoException | null, address: string, family: number) => void,
) => {
  const family = net.isIP(hostname);
  if (family !== 0) callback(null, hostname, family);
  else callback(Object.assign(new Error(`not an IP address: ${hostname}`), { code: "EINVAL" }), "", 0);
}) as unknown as NonNullable<dgram.SocketOptions["lookup"]>;

function bind(type: "udp4" | "udp6", address: string, port: number): Promise<dgram.Socket | undefined> {
  return new Promise((resolve) => {
    const socket = dgram.createSocket({ type, reuseAddr: false, lookup: literalLookup });
    const onError = () => {
      socket.close();
      resolve(undefined);
    };
    socket.once("error", onError);
    socket.bind(port, address, () => {
      socket.off("error", onError);
      resolve(socket);
    });
  });
}

export function closeSocket(socket: dgram.Socket): Promise<void> {
  return new Promise((resolve) => {
    try {
      socket.close(() => resolve());
    } catch {
      resolve();
    }
  });
}
