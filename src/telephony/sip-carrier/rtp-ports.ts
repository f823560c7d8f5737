/**
 * RTP sockets: one UDP socket per call, bound on the SIP edge's address to
 * an even port of RTP_PORT_MIN..RTP_PORT_MAX (RFC 3550 §11), taken round
 * robin so a port just released is not reused at once; RTP_PORT_MIN=0 binds
 * any free port. No free port in the range is an error the caller answers
 * (503 to an INVITE, a failed outgoing call).
 */
import dgram from "node:dgram";

export class NoRtpPortError extends Error {
  override readonly name = "NoRtpPortError";
}

function bind(socket: dgram.Socket, port: number, address: string): Promise<boolean> {
  return new Promise((resolve) => {
    const failed = () => resolve(false);
    socket.once("error", failed);
    socket.bind(port, address, () => {
      socket.off("error", failed);
      resolve(true);
    });
  });
}

export class RtpPorts {
  private next: number;

  constructor(
    private readonly address: string,
    private readonly min: number,
    private readonly max: number,
  ) {
    this.next = min + (min % 2);
  }

  /** A bound socket (its errors are swallowed: a lost datagram is not a call's end). */
  async open(): Promise<dgram.Socket> {
    const family = this.address.includes(":") ? "udp6" : "udp4";
    if (this.min === 0) {
      const socket = dgram.createSocket(family);
      if (!(await bind(socket, 0, this.address))) throw new NoRtpPortError("cannot bind an RTP socket");
      socket.on("error", () => {});
      return socket;
    }
    const first = this.min + (this.min % 2);
    const count = Math.max(1, Math.floor((this.max - first) / 2) + 1);
    for (let i = 0; i < count; i++) {
      const port = this.next;
      this.next = port + 2 > this.max ? first : port + 2;
      const socket = dgram.createSocket(family);
      if (await bind(socket, port, this.address)) {
        socket.on("error", () => {});
        return socket;
      }
      socket.close();
    }
    throw new NoRtpPortError(`no free RTP port in ${this.min}-${this.max} (RTP_PORT_MIN, RTP_PORT_MAX)`);
  }
}
