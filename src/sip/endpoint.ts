/**
 * A SIP endpoint: the transport and the transaction layer tied together, and
 * the checks every request gets before its user sees it (RFC 3261 §8.2):
 * unparseable requests answered 400 (413, 505) with a reason naming the
 * problem when they can be answered, dropped otherwise; scanners dropped
 * silently; requests a screen (src/sip/guard.ts) refuses answered without
 * keeping state, or dropped; received/rport added to the top Via (RFC 3581) and responses
 * routed per Via (§18.2.2); Max-Forwards 0 -> 483; unsupported URI scheme ->
 * 416; unknown methods 501, known ones without a handler 405 with Allow;
 * Require -> 420; CSeq method mismatch -> 400; OPTIONS answered 200; CANCEL
 * matched to its INVITE (200, and 487 to the INVITE) or 481. The user
 * registers handlers per method and sends requests through client
 * transactions. The endpoint knows nothing of calls.
 */
import { randomHex } from "../random-pool.js";
import type { Scheduler } from "../telephony/scheduler.js";
import { CompletedTransactions } from "./completed.js";
import { SipParseError } from "./errors.js";
import { clientKey, responseKey, serverKey } from "./matching.js";
import {
  createResponse,
  cseqOf,
  parseMessage,
  readRequestHead,
  type SipHeaders,
  type SipRequest,
  type SipResponse,
  serialize,
  tagOf,
  toOf,
  topVia,
} from "./message.js";
import {
  type Channel,
  ClientTransaction,
  type ClientUser,
  DEFAULT_TIMERS,
  ServerTransaction,
  type TransactionTimers,
} from "./transaction.js";
import { type Peer, SipTransport, type TransportName, type TransportOptions } from "./transport.js";
import { formatVia, MAGIC_COOKIE, parseVia } from "./uri.js";

/** User-Agents of SIP scanners (SIPVicious and kin): their requests are dropped without an answer. */
export const SCANNER_USER_AGENTS =
  /friendly-scanner|sipvicious|sipcli|vaxsipuseragent|sip-scan|sipscan|sundayddr|iwar|pplsip|smap|nessus/i;

/** What the endpoint reports about traffic it refused (for logs and metrics). */
export interface EndpointEvent {
  type: "parse-error" | "scanner" | "refused" | "screened" | "internal-error";
  source: Peer;
  detail: string;
}

export interface EndpointOptions {
  transport: TransportOptions;
  scheduler: Scheduler;
  timers?: Partial<TransactionTimers>;
  /** The host written in Via and Contact (an advertised address behind NAT); default the bound address. */
  advertisedHost?: string;
  /** Sent as User-Agent / Server. */
  userAgent?: string;
  /** Whether a request comes from a scanner (dropped silently); default SCANNER_USER_AGENTS on User-Agent. */
  isScanner?: (request: SipRequest, source: Peer) => boolean;
  /**
   * Screens each request that would start a transaction, before any state
   * is kept for it (a guard against floods, src/sip/guard.ts): `drop` sends
   * nothing, `reply` answers statelessly (with Retry-After when given).
   */
  screen?: (request: SipRequest, source: Peer, inDialog: boolean) => RequestScreening;
  /** Observes refused traffic. */
  onEvent?: (event: EndpointEvent) => void;
}

/** What `screen` decides for a request. */
export type RequestScreening =
  | { action: "pass" }
  | { action: "drop"; reason: string }
  | { action: "reply"; status: number; reason: string; retryAfter?: number };

export type RequestHandler = (transaction: ServerTransaction, source: Peer) => void;

/** Methods RFC 3261 and its common extensions define; anything else is 501. */
const KNOWN_METHODS = new Set([
  "INVITE",
  "ACK",
  "BYE",
  "CANCEL",
  "OPTIONS",
  "REGISTER",
  "INFO",
  "PRACK",
  "UPDATE",
  "SUBSCRIBE",
  "NOTIFY",
  "REFER",
  "MESSAGE",
  "PUBLISH",
]);

const SCHEMES = new Set(["sip", "sips", "tel"]);

/** `bytes` random bytes in hex, for tags, branches and Call-IDs (src/random-pool.ts). */
export function randomToken(bytes = 8): string {
  return randomHex(bytes);
}

export class SipEndpoint {
  private readonly handlers = new Map<string, RequestHandler>();
  private readonly servers = new Map<string, ServerTransaction>();
  /** Non-INVITE server transactions that answered over UDP, until timer J. */
  private readonly completed: CompletedTransactions;
  private readonly clients = new Map<string, ClientTransaction>();
  private readonly timers: TransactionTimers;
  private ackHandler: ((ack: SipRequest, source: Peer) => void) | undefined;
  private strayHandler: ((response: SipResponse, source: Peer) => void) | undefined;
  private inDialogHandler: RequestHandler | undefined;
  transport!: SipTransport;

  private constructor(private readonly options: EndpointOptions) {
    this.timers = { ...DEFAULT_TIMERS, ...options.timers };
    this.completed = new CompletedTransactions(options.scheduler, 64 * this.timers.t1);
  }

  static async start(options: EndpointOptions): Promise<SipEndpoint> {
    const endpoint = new SipEndpoint(options);
    endpoint.transport = await SipTransport.listen(options.transport, {
      message: (data, source) => endpoint.safely(source, () => endpoint.receive(data, source)),
      streamError: (status, reason, head, source) =>
        endpoint.safely(source, () => endpoint.answerBroken(head, source, status, reason)),
    });
    return endpoint;
  }

  get scheduler(): Scheduler {
    return this.options.scheduler;
  }

  /** T1, T2, T4 (and the pending limit) in force. */
  get transactionTimers(): TransactionTimers {
    return this.timers;
  }

  /** Handles requests of `method` outside dialogs (INVITE, REGISTER, OPTIONS, MESSAGE, ...). */
  onRequest(method: string, handler: RequestHandler): void {
    this.handlers.set(method.toUpperCase(), handler);
  }

  /** Handles INVITEs outside dialogs (new calls). */
  onInvite(handler: RequestHandler): void {
    this.onRequest("INVITE", handler);
  }

  /** Handles requests whose To has a tag (in-dialog), except ACK and CANCEL. Without it they get 481. */
  onInDialogRequest(handler: RequestHandler): void {
    this.inDialogHandler = handler;
  }

  /** ACKs that no transaction absorbs (ACK for 2xx). */
  onAck(handler: (ack: SipRequest, source: Peer) => void): void {
    this.ackHandler = handler;
  }

  /** Responses that match no client transaction (2xx retransmissions after timer M, for instance). */
  onStrayResponse(handler: (response: SipResponse, source: Peer) => void): void {
    this.strayHandler = handler;
  }

  /** The host and port this endpoint puts in Via/Contact for a transport. */
  sentBy(transport: TransportName): { host: string; port: number } {
    const local = this.transport.local(transport);
    if (local === undefined) throw new Error(`SIP endpoint has no ${transport} listener`);
    const host = this.options.advertisedHost ?? local.address;
    return { host: host.includes(":") && !host.startsWith("[") ? `[${host}]` : host, port: local.port };
  }

  private event(type: EndpointEvent["type"], source: Peer, detail: string): void {
    this.options.onEvent?.({ type, source, detail });
  }

  /** Nothing a peer sends may take the process down: a failure is reported, the message dropped. */
  private safely(source: Peer, fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.event("internal-error", source, e instanceof Error ? e.message : String(e));
    }
  }

  private channel(peer: Peer): Channel {
    return { send: (data) => this.transport.send(peer, data), reliable: peer.transport !== "UDP" };
  }

  private receive(data: Buffer, source: Peer): void {
    let message: ReturnType<typeof parseMessage>;
    try {
      message = parseMessage(data, source.transport === "UDP");
    } catch (e) {
      if (!(e instanceof SipParseError)) throw e;
      this.event("parse-error", source, e.reason);
      if (e.status === 413 && source.transport === "UDP") return;
      if (e.request !== undefined) this.answerParseError(e.request, source, e.status, e.reason);
      return;
    }
    if (message.kind === "response") this.receiveResponse(message, source);
    else this.receiveRequest(message, source);
  }

  /** A stream that could not be framed: answer from its head when it is a request. */
  private answerBroken(head: Buffer, source: Peer, status: number, reason: string): void {
    this.event("parse-error", source, reason);
    const request = readRequestHead(head);
    if (request !== undefined) this.answerParseError(request, source, status, reason);
  }

  /** 400/413/505 to a request that could not be parsed, when its Via and CSeq allow an answer. */
  private answerParseError(
    request: { method: string; headers: SipHeaders },
    source: Peer,
    status: number,
    reason: string,
  ): void {
    if (request.method === "ACK") return;
    const [via] = request.headers.getAll("Via");
    if (via === undefined || request.headers.get("CSeq") === undefined) return;
    let target = source;
    try {
      target = this.responseTarget(parseVia(via), source);
    } catch {
      // An unparseable Via: answer the source.
    }
    const response = createResponse(request, status, {
      reason: reason.replace(/[\r\n]/g, " "),
      toTag: randomToken(),
    });
    this.transport.send(target, serialize(response));
  }

  /** An answer that keeps no transaction (a screened request; its retransmissions are screened again). */
  private replyStateless(
    request: SipRequest,
    source: Peer,
    status: number,
    retryAfter: number | undefined,
  ): void {
    const response = createResponse(request, status, {
      toTag: randomToken(),
      headers: retryAfter === undefined ? [] : [["Retry-After", String(retryAfter)]],
    });
    this.transport.send(this.responseTarget(topVia(request), source), serialize(response));
  }

  private isScanner(request: SipRequest, source: Peer): boolean {
    if (this.options.isScanner !== undefined) return this.options.isScanner(request, source);
    return SCANNER_USER_AGENTS.test(request.headers.get("User-Agent") ?? "");
  }

  /** RFC 3581 / RFC 3261 §18.2.1: note where the request really came from in its top Via. */
  private stampVia(request: SipRequest, source: Peer): void {
    const [top, ...rest] = request.headers.getAll("Via");
    if (top === undefined) return;
    const via = parseVia(top);
    const hasRport = via.params.has("rport");
    if (hasRport) via.params.set("rport", String(source.port));
    if (via.host !== source.address || hasRport) via.params.set("received", source.address);
    request.headers.delete("Via");
    request.headers.add("Via", formatVia(via));
    for (const v of rest) request.headers.add("Via", v);
  }

  /** Where responses to a request with this top Via go (RFC 3261 §18.2.2, RFC 3581 §4). */
  private responseTarget(via: ReturnType<typeof parseVia>, source: Peer): Peer {
    if (source.transport !== "UDP") return source;
    const rport = via.params.get("rport");
    if (typeof rport === "string" && rport !== "") return { ...source, port: Number(rport) };
    const received = via.params.get("received");
    const address = typeof received === "string" ? received : via.host.replace(/^\[|\]$/g, "");
    return { transport: "UDP", address, port: via.port ?? 5060 };
  }

  private receiveResponse(response: SipResponse, source: Peer): void {
    const tx = this.clients.get(responseKey(response));
    if (tx !== undefined) tx.receive(response);
    else this.strayHandler?.(response, source);
  }

  private receiveRequest(request: SipRequest, source: Peer): void {
    if (this.isScanner(request, source)) {
      this.event("scanner", source, request.headers.get("User-Agent") ?? "");
      return;
    }
    this.stampVia(request, source);
    const key = serverKey(request);
    const existing = this.servers.get(key);
    if (request.method === "ACK") {
      if (existing !== undefined && (existing.state === "completed" || existing.state === "confirmed")) {
        existing.receive(request);
      } else this.ackHandler?.(request, source);
      return;
    }
    if (existing !== undefined) {
      existing.receive(request);
      return;
    }
    if (this.completed.absorb(key)) return;
    if (this.options.screen !== undefined) {
      const screening = this.options.screen(request, source, tagOf(toOf(request)) !== undefined);
      if (screening.action !== "pass") {
        this.event("screened", source, screening.reason);
        if (screening.action === "reply")
          this.replyStateless(request, source, screening.status, screening.retryAfter);
        return;
      }
    }
    const tx = this.createServer(request, source, key);
    const refusal = this.check(request);
    if (refusal !== undefined) {
      this.event("refused", source, `${refusal[0]} ${refusal[1]}`);
      tx.respond(tx.reply(refusal[0], refusal[1], refusal[2] ?? []));
      return;
    }
    if (request.method === "CANCEL") {
      const invite = this.servers.get(serverKey(request, "INVITE"));
      if (invite === undefined) {
        tx.respond(tx.reply(481));
        return;
      }
      tx.respond(tx.reply(200));
      invite.cancel();
      return;
    }
    const inDialog = tagOf(toOf(request)) !== undefined;
    const handler = inDialog ? this.inDialogHandler : this.handlers.get(request.method);
    if (handler !== undefined) {
      try {
        handler(tx, source);
      } catch (e) {
        this.event("internal-error", source, e instanceof Error ? e.message : String(e));
        if (!tx.answered) tx.respond(tx.reply(500));
      }
    } else if (inDialog) tx.respond(tx.reply(481));
    else if (request.method === "OPTIONS") tx.respond(tx.reply(200, undefined, this.capabilities()));
    else tx.respond(tx.reply(405, undefined, [["Allow", this.allow()]]));
  }

  private createServer(request: SipRequest, source: Peer, key: string): ServerTransaction {
    const via = topVia(request);
    let channel = this.channel(this.responseTarget(via, source));
    if (source.transport !== "UDP") {
      // §18.2.2: responses go back on the request's connection; once it is gone, to the
      // address it came from (received) and the port of the Via's sent-by.
      const fallback: Peer = { ...source, port: via.port ?? (source.transport === "TLS" ? 5061 : 5060) };
      channel = {
        send: (data) => this.transport.send(this.transport.connected(source) ? source : fallback, data),
        reliable: true,
      };
    }
    const tx = new ServerTransaction(request, channel, this.scheduler, this.timers, randomToken());
    if (request.method !== "INVITE") tx.handOver = (last, to) => this.completed.add(key, last, to);
    this.servers.set(key, tx);
    tx.onTerminated(() => {
      if (this.servers.get(key) === tx) this.servers.delete(key);
    });
    return tx;
  }

  /** The refusal a request gets before any handler sees it, if any. */
  private check(request: SipRequest): [number, (string | undefined)?, Array<[string, string]>?] | undefined {
    if (!KNOWN_METHODS.has(request.method)) return [501];
    if (cseqOf(request).method !== request.method) return [400, "CSeq Method Does Not Match Request"];
    if (!SCHEMES.has(request.uri.scheme)) return [416];
    const maxForwards = request.headers.get("Max-Forwards");
    if (maxForwards !== undefined && Number(maxForwards) === 0 && request.method !== "OPTIONS") return [483];
    const require = request.headers.getAll("Require");
    if (require.length > 0 && request.method !== "CANCEL")
      return [420, undefined, [["Unsupported", require.join(", ")]]];
    return undefined;
  }

  /** Methods with a handler, plus those the endpoint answers itself. */
  allow(): string {
    return [...new Set(["ACK", "CANCEL", "OPTIONS", ...this.handlers.keys()])].join(", ");
  }

  private capabilities(): Array<[string, string]> {
    return [
      ["Allow", this.allow()],
      ["Accept", "application/sdp"],
      ["Accept-Language", "en"],
    ];
  }

  /**
   * Sends a request through a new client transaction to `destination`. A top
   * Via with a fresh branch (and rport) is added, Max-Forwards defaults to 70.
   */
  sendRequest(request: SipRequest, destination: Peer, user: ClientUser): ClientTransaction {
    this.addVia(request, destination.transport);
    if (!request.headers.has("Max-Forwards")) request.headers.add("Max-Forwards", "70");
    if (this.options.userAgent !== undefined && !request.headers.has("User-Agent")) {
      request.headers.add("User-Agent", this.options.userAgent);
    }
    const key = clientKey(request);
    const tx = new ClientTransaction(request, this.channel(destination), this.scheduler, this.timers, user);
    if (tx.state !== "terminated") {
      this.clients.set(key, tx);
      tx.onTerminated(() => {
        if (this.clients.get(key) === tx) this.clients.delete(key);
      });
    }
    return tx;
  }

  /** CANCELs an INVITE client transaction (RFC 3261 §9.1): same Request-URI, Call-ID, From, To, CSeq number, Via. */
  cancel(invite: ClientTransaction, destination: Peer, user: ClientUser): ClientTransaction | undefined {
    if (invite.state !== "calling" && invite.state !== "proceeding") return undefined;
    const headers = invite.request.headers.clone();
    for (const [name] of headers.entries()) {
      if (!["Via", "From", "To", "Call-ID", "Route", "Max-Forwards"].includes(name)) headers.delete(name);
    }
    headers.set("Via", invite.request.headers.getAll("Via")[0] ?? "");
    headers.set("CSeq", `${cseqOf(invite.request).seq} CANCEL`);
    const cancel: SipRequest = {
      kind: "request",
      method: "CANCEL",
      uri: invite.request.uri,
      headers,
      body: Buffer.alloc(0),
    };
    const tx = new ClientTransaction(cancel, this.channel(destination), this.scheduler, this.timers, user);
    const key = clientKey(cancel);
    this.clients.set(key, tx);
    tx.onTerminated(() => {
      if (this.clients.get(key) === tx) this.clients.delete(key);
    });
    return tx;
  }

  /** Sends a request outside any transaction (the ACK for a 2xx): a new Via unless it has one. */
  sendStateless(request: SipRequest, destination: Peer): void {
    if (!request.headers.has("Via")) this.addVia(request, destination.transport);
    this.transport.send(destination, serialize(request));
  }

  private addVia(request: SipRequest, transport: TransportName): void {
    const { host, port } = this.sentBy(transport);
    request.headers.prepend(
      "Via",
      `SIP/2.0/${transport} ${host}:${port};branch=${MAGIC_COOKIE}${randomToken()};rport`,
    );
  }

  /** Transactions still alive (for tests: nothing may be stuck). */
  get transactionCount(): number {
    return this.servers.size + this.clients.size + this.completed.size;
  }

  async close(): Promise<void> {
    for (const tx of [...this.servers.values(), ...this.clients.values()]) tx.terminate();
    this.completed.clear();
    await this.transport.close();
  }
}
