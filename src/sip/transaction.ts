/**
 * The four transaction state machines of RFC 3261 §17 (with RFC 6026's
 * Accepted state for INVITE 2xx): client INVITE (timers A, B, D, M), client
 * non-INVITE (E, F, K), server INVITE (G, H, I, L) and server non-INVITE (J).
 * Timers run on an injected Scheduler (seconds), retransmissions happen only
 * on unreliable transports, and every state path ends in Terminated: a server
 * transaction whose user never answers gets a final response after
 * `maxPending` seconds, so no transaction is ever stuck.
 */
import type { Scheduler, Timer } from "../telephony/scheduler.js";
import { createResponse, type SipRequest, type SipResponse, serialize } from "./message.js";

/** T1, T2 and T4 of RFC 3261 §17.1.1.1 in seconds. */
export interface TransactionTimers {
  t1: number;
  t2: number;
  t4: number;
  /** A server transaction still without a final response after this long answers it itself (408 / 500). */
  maxPending: number;
}

export const DEFAULT_TIMERS: TransactionTimers = { t1: 0.5, t2: 4, t4: 5, maxPending: 300 };

/** Where a transaction's messages go. */
export interface Channel {
  send(data: Buffer): void;
  /** TCP/TLS: no retransmissions, no waiting in Completed. */
  reliable: boolean;
}

export type TransactionState =
  | "calling"
  | "trying"
  | "proceeding"
  | "accepted"
  | "completed"
  | "confirmed"
  | "terminated";

abstract class Transaction {
  state: TransactionState;
  private readonly timers = new Map<string, Timer>();
  private readonly terminatedListeners: Array<() => void> = [];

  constructor(
    readonly request: SipRequest,
    protected readonly channel: Channel,
    protected readonly scheduler: Scheduler,
    protected readonly t: TransactionTimers,
    initial: TransactionState,
  ) {
    this.state = initial;
  }

  get isInvite(): boolean {
    return this.request.method === "INVITE";
  }

  /** Runs `fn` once the transaction has terminated (at once if it has). */
  onTerminated(fn: () => void): void {
    if (this.state === "terminated") fn();
    else this.terminatedListeners.push(fn);
  }

  /** The names of the timers now running (for tests and diagnostics). */
  get runningTimers(): string[] {
    return [...this.timers.keys()].sort();
  }

  protected startTimer(name: string, seconds: number, fn: () => void): void {
    this.stopTimer(name);
    this.timers.set(
      name,
      this.scheduler.after(seconds, () => {
        this.timers.delete(name);
        if (this.state !== "terminated") fn();
      }),
    );
  }

  protected stopTimer(name: string): void {
    this.timers.get(name)?.cancel();
    this.timers.delete(name);
  }

  /** Completed/Confirmed/Accepted wait `seconds` (0 on reliable transports) before terminating. */
  protected linger(name: string, seconds: number): void {
    if (seconds <= 0) this.terminate();
    else this.startTimer(name, seconds, () => this.terminate());
  }

  terminate(): void {
    if (this.state === "terminated") return;
    this.state = "terminated";
    for (const timer of this.timers.values()) timer.cancel();
    this.timers.clear();
    for (const fn of this.terminatedListeners.splice(0)) fn();
  }
}

/** What a client transaction tells its user. */
export interface ClientUser {
  /** A response to pass up: provisional, final, and (INVITE) retransmitted 2xx while Accepted. */
  response(response: SipResponse): void;
  /** Timer B or F fired: no final response. */
  timeout(): void;
}

export class ClientTransaction extends Transaction {
  private readonly data: Buffer;
  private ack: Buffer | undefined;

  constructor(
    request: SipRequest,
    channel: Channel,
    scheduler: Scheduler,
    t: TransactionTimers,
    private readonly user: ClientUser,
  ) {
    super(request, channel, scheduler, t, request.method === "INVITE" ? "calling" : "trying");
    this.data = serialize(request, true); // kept for retransmissions
    this.channel.send(this.data);
    if (this.isInvite) {
      if (!channel.reliable) this.retransmit("A", t.t1);
      this.startTimer("B", 64 * t.t1, () => this.timedOut());
    } else {
      if (!channel.reliable) this.retransmit("E", t.t1);
      this.startTimer("F", 64 * t.t1, () => this.timedOut());
    }
  }

  /** Timer A (INVITE, doubling) or E (non-INVITE, doubling up to T2; T2 once Proceeding). */
  private retransmit(name: "A" | "E", interval: number): void {
    this.startTimer(name, interval, () => {
      this.channel.send(this.data);
      const next =
        name === "A"
          ? interval * 2
          : this.state === "proceeding"
            ? this.t.t2
            : Math.min(interval * 2, this.t.t2);
      this.retransmit(name, next);
    });
  }

  private timedOut(): void {
    this.terminate();
    this.user.timeout();
  }

  /** A response whose branch and CSeq method matched this transaction. */
  receive(response: SipResponse): void {
    const status = response.status;
    if (this.isInvite) this.receiveInvite(response, status);
    else this.receiveNonInvite(response, status);
  }

  private receiveInvite(response: SipResponse, status: number): void {
    switch (this.state) {
      case "calling":
      case "proceeding":
        this.stopTimer("A");
        if (status < 200) {
          this.state = "proceeding";
          this.user.response(response);
        } else if (status < 300) {
          // RFC 6026: Accepted absorbs nothing; 2xx retransmissions go to the user (which ACKs them) until timer M.
          this.stopTimer("B");
          this.state = "accepted";
          this.startTimer("M", 64 * this.t.t1, () => this.terminate());
          this.user.response(response);
        } else {
          this.stopTimer("B");
          this.state = "completed";
          this.ack = serialize(ackFor(this.request, response), true);
          this.channel.send(this.ack);
          this.user.response(response);
          this.linger("D", this.channel.reliable ? 0 : 32);
        }
        return;
      case "accepted":
        if (status >= 200 && status < 300) this.user.response(response);
        return;
      case "completed":
        if (status >= 300 && this.ack !== undefined) this.channel.send(this.ack);
        return;
      default:
        return;
    }
  }

  private receiveNonInvite(response: SipResponse, status: number): void {
    if (this.state !== "trying" && this.state !== "proceeding") return;
    if (status < 200) {
      this.state = "proceeding";
      this.user.response(response);
      return;
    }
    this.stopTimer("E");
    this.stopTimer("F");
    this.state = "completed";
    this.user.response(response);
    this.linger("K", this.channel.reliable ? 0 : this.t.t4);
  }
}

/**
 * The ACK for a non-2xx final response (RFC 3261 §17.1.1.3): the INVITE's
 * Request-URI, top Via, From, Call-ID, CSeq number and Route; the response's To.
 */
export function ackFor(invite: SipRequest, response: SipResponse): SipRequest {
  const headers = invite.headers.clone();
  for (const name of headers.entries().map(([n]) => n)) {
    if (!["Via", "From", "Call-ID", "Route", "Max-Forwards"].includes(name)) headers.delete(name);
  }
  const [topVia] = invite.headers.getAll("Via");
  headers.set("Via", topVia ?? "");
  headers.set("To", response.headers.get("To") ?? "");
  const seq = (invite.headers.get("CSeq") ?? "").trim().split(/\s+/)[0] ?? "";
  headers.set("CSeq", `${seq} ACK`);
  return { kind: "request", method: "ACK", uri: invite.uri, headers, body: Buffer.alloc(0) };
}

/** What a server transaction tells its user besides the request itself. */
export interface ServerUser {
  /** The INVITE was cancelled while Proceeding (the transaction already answered 487). */
  cancelled?(): void;
  /** Timer H fired: the final non-2xx response was never acknowledged. */
  noAck?(): void;
}

export class ServerTransaction extends Transaction {
  private last: Buffer | undefined;
  user: ServerUser = {};
  /**
   * Set by the endpoint (src/sip/completed.ts): takes over the Completed
   * state of a non-INVITE transaction on an unreliable transport — its final
   * response, for retransmissions until timer J — so that the transaction
   * ends as soon as it has answered. Unset: the transaction waits out timer
   * J itself.
   */
  handOver?: (last: Buffer, channel: Channel) => void;

  constructor(
    request: SipRequest,
    channel: Channel,
    scheduler: Scheduler,
    t: TransactionTimers,
    toTag: string,
  ) {
    super(request, channel, scheduler, t, request.method === "INVITE" ? "proceeding" : "trying");
    this.toTag = toTag;
    if (this.isInvite) this.respond(createResponse(request, 100));
    this.startTimer("pending", t.maxPending, () => {
      if (this.isInvite) this.respond(this.reply(408, "No Final Response"));
      else this.terminate(); // the client gave up long ago (timer F); nothing is waiting for an answer.
    });
  }

  /** The tag this UAS puts in To of its responses (dialog-creating requests keep it). */
  readonly toTag: string;

  /** A response to this request with Via, From, To (+ tag), Call-ID and CSeq copied. */
  reply(status: number, reason?: string, headers: Array<[string, string]> = [], body?: Buffer): SipResponse {
    return createResponse(this.request, status, {
      toTag: this.toTag,
      headers,
      ...(reason === undefined ? {} : { reason }),
      ...(body === undefined ? {} : { body }),
    });
  }

  /** Whether a final response has been sent. */
  get answered(): boolean {
    return this.state !== "trying" && this.state !== "proceeding";
  }

  /** Sends a response (the user's); ignored once a final one was sent. */
  respond(response: SipResponse): void {
    if (this.answered) return;
    const status = response.status;
    // An INVITE's last response is kept (retransmissions, timers L and H); a non-INVITE's is
    // handed over (src/sip/completed.ts) or dropped at once.
    this.last = serialize(response, this.isInvite);
    this.channel.send(this.last);
    if (status < 200) {
      if (!this.isInvite) this.state = "proceeding";
      return;
    }
    this.stopTimer("pending");
    if (!this.isInvite) {
      this.state = "completed";
      if (!this.channel.reliable && this.handOver !== undefined) {
        this.handOver(this.last, this.channel);
        this.terminate();
      } else this.linger("J", this.channel.reliable ? 0 : 64 * this.t.t1);
    } else if (status < 300) {
      // RFC 6026 Accepted: retransmitted INVITEs are absorbed until timer L; the dialog retransmits the 2xx.
      this.state = "accepted";
      // Neither a CANCEL nor timer H can reach an accepted INVITE: its user's callbacks, and the
      // call they reach, are not kept for timer L's 32 s (at 200 calls/s, 6,400 whole calls).
      this.user = {};
      this.startTimer("L", 64 * this.t.t1, () => this.terminate());
    } else {
      this.state = "completed";
      if (!this.channel.reliable) this.retransmitFinal(this.t.t1);
      this.startTimer("H", 64 * this.t.t1, () => {
        this.terminate();
        this.user.noAck?.();
      });
    }
  }

  /**
   * A non-INVITE's final response sent as a stateless UAS sends it (RFC 3261
   * §8.2.7, whose most common use it names: challenging an unauthenticated
   * request): once, and the transaction ends at once, keeping nothing for
   * retransmissions. A retransmitted request is then a new request and is
   * answered anew (a challenge with a new nonce). For answers cheap to give
   * again and not worth 32 s of memory each; an INVITE's is always stateful.
   */
  respondStateless(response: SipResponse): void {
    if (this.isInvite || response.status < 200) {
      this.respond(response);
      return;
    }
    if (this.answered) return;
    this.channel.send(serialize(response));
    this.terminate();
  }

  /** Timer G: the non-2xx final response again, doubling up to T2. */
  private retransmitFinal(interval: number): void {
    this.startTimer("G", interval, () => {
      if (this.last !== undefined) this.channel.send(this.last);
      this.retransmitFinal(Math.min(interval * 2, this.t.t2));
    });
  }

  /** Sends the last response again (the dialog's 2xx retransmissions, RFC 3261 §13.3.1.4). */
  resendLast(): void {
    if (this.last !== undefined) this.channel.send(this.last);
  }

  /** Whether responses travel on a reliable transport (no retransmissions). */
  get reliable(): boolean {
    return this.channel.reliable;
  }

  /** A retransmission of the request, or (INVITE) the ACK for a non-2xx final response. */
  receive(request: SipRequest): void {
    if (request.method === "ACK") {
      if (this.isInvite && this.state === "completed") {
        this.state = "confirmed";
        this.stopTimer("G");
        this.stopTimer("H");
        this.linger("I", this.channel.reliable ? 0 : this.t.t4);
      }
      return;
    }
    if (this.state === "accepted" || this.state === "confirmed" || this.state === "trying") return;
    if (this.last !== undefined) this.channel.send(this.last);
  }

  /** A CANCEL matched this INVITE: 487 if it is still Proceeding. Returns whether it was. */
  cancel(): boolean {
    if (!this.isInvite || this.state !== "proceeding") return false;
    this.respond(this.reply(487));
    this.user.cancelled?.();
    return true;
  }
}
