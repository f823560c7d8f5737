/**
 * SIP dialogs (RFC 3261 §12–15) on a SipEndpoint: the UAS side of an INVITE
 * (accept with a 2xx retransmitted on timer-G intervals until its ACK, BYE
 * after 64*T1 without one, §13.3.1.4) and the UAC side (INVITE, ACK for the
 * 2xx, re-ACK of retransmitted 2xx), then in-dialog requests both ways: BYE,
 * re-INVITE (hold and resume keep the dialog), OPTIONS, and whatever the
 * user handles. Call-ID, tags, CSeq order, route set (loose routing) and the
 * remote target are kept as §12 says. Dialogs know nothing of calls.
 */
import type { Timer } from "../telephony/scheduler.js";
import { authorize, type Credentials } from "./authorize.js";
import { type RequestHandler, randomToken, type SipEndpoint } from "./endpoint.js";
import {
  callIdOf,
  cseqOf,
  fromOf,
  SipHeaders,
  type SipRequest,
  type SipResponse,
  serialize,
  tagOf,
  toOf,
} from "./message.js";
import type { ServerTransaction } from "./transaction.js";
import type { Peer, TransportName } from "./transport.js";
import { parseNameAddr, parseUri, type SipUri } from "./uri.js";

export type DialogState = "confirmed" | "terminated";

export interface DialogUser {
  /** An in-dialog request other than BYE/ACK/OPTIONS (re-INVITE, INFO, UPDATE, ...): answer it on the transaction. */
  request?(dialog: Dialog, transaction: ServerTransaction): void;
  /** The dialog ended (BYE either way, or no ACK for our 2xx). */
  terminated?(dialog: Dialog, why: "bye-received" | "bye-sent" | "no-ack"): void;
}

function isIp(host: string): boolean {
  return /^\d+\.\d+\.\d+\.\d+$/.test(host) || host.startsWith("[");
}

export class Dialog {
  state: DialogState = "confirmed";
  /** The peer's CSeq (in-dialog requests must rise), undefined until it sends one. */
  remoteSeq: number | undefined;
  localSeq: number;
  remoteTarget: SipUri;
  private ack: { seq: number; data: Buffer; to: Peer } | undefined;
  private awaitingAck: { seq: number; timers: Timer[] } | undefined;
  /** Our re-INVITE still waiting for its final response (glare: the peer's gets 491). */
  private outgoingInvite = false;
  /** The peer's re-INVITE still being answered (another one gets 500, RFC 3261 §14.2). */
  private incomingInvite: ServerTransaction | undefined;

  constructor(
    private readonly layer: DialogLayer,
    readonly role: "UAC" | "UAS",
    readonly callId: string,
    readonly localTag: string,
    readonly remoteTag: string,
    /** Our From (UAC) or To (UAS) value, tag included. */
    readonly local: string,
    readonly remote: string,
    remoteTarget: SipUri,
    /** Route set in the order requests carry it. */
    readonly routeSet: string[],
    localSeq: number,
    /** Where the dialog's first request came from or went to. */
    readonly peer: Peer,
  ) {
    this.remoteTarget = remoteTarget;
    this.localSeq = localSeq;
  }

  get id(): string {
    return dialogId(this.callId, this.localTag, this.remoteTag);
  }

  /** Where in-dialog requests go: the first route or the remote target when it is an IP address, else the peer. */
  nextHop(): Peer {
    const first = this.routeSet[0];
    const uri = first === undefined ? this.remoteTarget : parseNameAddr(first, "Route").uri;
    if (!isIp(uri.host)) return this.peer;
    const t = uri.params.get("transport")?.toUpperCase();
    const transport: TransportName =
      uri.scheme === "sips" || t === "TLS"
        ? "TLS"
        : t === "TCP"
          ? "TCP"
          : t === "UDP"
            ? "UDP"
            : this.peer.transport;
    const port = uri.port ?? (transport === "TLS" ? 5061 : 5060);
    return { transport, address: uri.host.replace(/^\[|\]$/g, ""), port };
  }

  /** An in-dialog request (RFC 3261 §12.2.1.1); ACK reuses `seq`, the rest take the next CSeq. */
  createRequest(
    method: string,
    options: { headers?: Array<[string, string]>; body?: Buffer; seq?: number } = {},
  ): SipRequest {
    const seq = options.seq ?? ++this.localSeq;
    const headers = new SipHeaders([
      ["From", this.local],
      ["To", this.remote],
      ["Call-ID", this.callId],
      ["CSeq", `${seq} ${method}`],
      ["Max-Forwards", "70"],
    ]);
    for (const route of this.routeSet) headers.add("Route", route);
    if (method === "INVITE" || method === "UPDATE")
      headers.add("Contact", this.layer.contact(this.nextHop().transport));
    for (const [n, v] of options.headers ?? []) headers.add(n, v);
    return {
      kind: "request",
      method,
      uri: this.remoteTarget,
      headers,
      body: options.body ?? Buffer.alloc(0),
    };
  }

  /** Sends an in-dialog request; resolves with its final response (408 when it timed out). ACKs a 2xx to INVITE. */
  request(
    method: string,
    options: { headers?: Array<[string, string]>; body?: Buffer } = {},
  ): Promise<SipResponse> {
    const request = this.createRequest(method, options);
    const done = this.layer.send(request, this.nextHop(), this);
    if (method !== "INVITE") return done;
    this.outgoingInvite = true;
    return done.finally(() => {
      this.outgoingInvite = false;
    });
  }

  bye(): Promise<SipResponse> {
    const done = this.request("BYE");
    this.end("bye-sent");
    return done;
  }

  /** A re-INVITE with a new offer (hold, resume): the dialog stays whatever the answer. */
  reinvite(sdp: string): Promise<SipResponse> {
    return this.request("INVITE", {
      headers: [["Content-Type", "application/sdp"]],
      body: Buffer.from(sdp),
    });
  }

  /** Answers an INVITE (initial or re-INVITE) 2xx and retransmits it until the ACK (§13.3.1.4). */
  answer(tx: ServerTransaction, options: { headers?: Array<[string, string]>; body?: Buffer } = {}): void {
    if (tx.answered) return; // Cancelled (487) or answered meanwhile: nothing to retransmit.
    const headers: Array<[string, string]> = [["Contact", this.layer.contact(this.peer.transport)]];
    for (const rr of tx.request.headers.getAll("Record-Route")) headers.push(["Record-Route", rr]);
    if (options.body !== undefined) headers.push(["Content-Type", "application/sdp"]);
    const reply = tx.reply(200, undefined, [...headers, ...(options.headers ?? [])], options.body);
    tx.respond(reply);
    const t = this.layer.endpoint.transactionTimers;
    const seq = cseqOf(tx.request).seq;
    const timers: Timer[] = [];
    const scheduler = this.layer.endpoint.scheduler;
    const retransmit = (interval: number) => {
      timers.push(
        scheduler.after(interval, () => {
          if (this.awaitingAck?.seq !== seq) return;
          tx.resendLast();
          retransmit(Math.min(interval * 2, t.t2));
        }),
      );
    };
    if (!tx.reliable) retransmit(t.t1);
    timers.push(
      scheduler.after(64 * t.t1, () => {
        if (this.awaitingAck?.seq !== seq) return;
        this.awaitingAck = undefined;
        if (this.state === "terminated") return;
        void this.request("BYE");
        this.end("no-ack");
      }),
    );
    this.awaitingAck = { seq, timers };
  }

  /** Whether our 2xx still waits for its ACK. */
  get waitingForAck(): boolean {
    return this.awaitingAck !== undefined;
  }

  /** The ACK for our 2xx arrived. */
  acked(ack: SipRequest): void {
    if (this.awaitingAck === undefined || cseqOf(ack).seq !== this.awaitingAck.seq) return;
    for (const timer of this.awaitingAck.timers) timer.cancel();
    this.awaitingAck = undefined;
  }

  /** UAC: ACK a 2xx to our INVITE, and the same ACK again for its retransmissions. */
  acknowledge(response: SipResponse): void {
    const seq = cseqOf(response).seq;
    if (this.ack === undefined || this.ack.seq !== seq) {
      const ack = this.createRequest("ACK", { seq });
      const to = this.nextHop();
      ack.headers.prepend("Via", this.layer.via(to.transport));
      this.ack = { seq, data: serialize(ack), to };
    }
    this.layer.endpoint.transport.send(this.ack.to, this.ack.data);
  }

  /** An in-dialog request from the peer. */
  receive(tx: ServerTransaction): void {
    const request = tx.request;
    const seq = cseqOf(request).seq;
    if (this.remoteSeq !== undefined && seq <= this.remoteSeq) {
      tx.respond(tx.reply(500, "CSeq Out Of Order"));
      return;
    }
    this.remoteSeq = seq;
    if (request.method === "INVITE") {
      if (this.outgoingInvite) {
        tx.respond(tx.reply(491));
        return;
      }
      if (this.incomingInvite !== undefined && !this.incomingInvite.answered) {
        tx.respond(
          tx.reply(500, "Previous INVITE Still Pending", [
            ["Retry-After", String(1 + Math.floor(Math.random() * 10))],
          ]),
        );
        return;
      }
      this.incomingInvite = tx;
    }
    const contact = request.headers.get("Contact");
    if (
      (request.method === "INVITE" || request.method === "UPDATE") &&
      contact !== undefined &&
      contact !== "*"
    ) {
      this.remoteTarget = parseNameAddr(contact, "Contact").uri;
    }
    if (request.method === "BYE") {
      tx.respond(tx.reply(200));
      this.end("bye-received");
    } else if (request.method === "OPTIONS" && this.layer.user.request === undefined) {
      tx.respond(tx.reply(200, undefined, [["Allow", this.layer.endpoint.allow()]]));
    } else if (this.layer.user.request !== undefined) {
      this.layer.user.request(this, tx);
    } else {
      tx.respond(
        tx.reply(request.method === "INVITE" ? 488 : 405, undefined, [
          ["Allow", this.layer.endpoint.allow()],
        ]),
      );
    }
  }

  private end(why: "bye-received" | "bye-sent" | "no-ack"): void {
    if (this.state === "terminated") return;
    this.state = "terminated";
    for (const timer of this.awaitingAck?.timers ?? []) timer.cancel();
    this.awaitingAck = undefined;
    this.layer.forget(this);
    this.layer.user.terminated?.(this, why);
  }
}

function dialogId(callId: string, localTag: string, remoteTag: string): string {
  return `${callId}|${localTag}|${remoteTag}`;
}

/** The dialogs of an endpoint: creates them from INVITEs and routes in-dialog requests and ACKs to them. */
export class DialogLayer {
  private readonly dialogs = new Map<string, Dialog>();

  constructor(
    readonly endpoint: SipEndpoint,
    readonly user: DialogUser = {},
    /** The user part of our Contact. */
    private readonly contactUser = "switchboard",
  ) {
    const inDialog: RequestHandler = (tx) => {
      const r = tx.request;
      const dialog = this.dialogs.get(dialogId(callIdOf(r), tagOf(toOf(r)) ?? "", tagOf(fromOf(r)) ?? ""));
      if (dialog === undefined) tx.respond(tx.reply(481));
      else dialog.receive(tx);
    };
    endpoint.onInDialogRequest(inDialog);
    endpoint.onAck((ack) => {
      this.dialogs.get(dialogId(callIdOf(ack), tagOf(toOf(ack)) ?? "", tagOf(fromOf(ack)) ?? ""))?.acked(ack);
    });
    endpoint.onStrayResponse((response) => {
      if (response.status < 200 || response.status >= 300 || cseqOf(response).method !== "INVITE") return;
      this.dialogs
        .get(dialogId(callIdOf(response), tagOf(fromOf(response)) ?? "", tagOf(toOf(response)) ?? ""))
        ?.acknowledge(response);
    });
  }

  get size(): number {
    return this.dialogs.size;
  }

  get(id: string): Dialog | undefined {
    return this.dialogs.get(id);
  }

  contact(transport: TransportName): string {
    const { host, port } = this.endpoint.sentBy(transport);
    const param = transport === "UDP" ? "" : `;transport=${transport.toLowerCase()}`;
    return `<sip:${this.contactUser}@${host}:${port}${param}>`;
  }

  via(transport: TransportName): string {
    const { host, port } = this.endpoint.sentBy(transport);
    return `SIP/2.0/${transport} ${host}:${port};branch=z9hG4bK${randomToken()};rport`;
  }

  forget(dialog: Dialog): void {
    if (this.dialogs.get(dialog.id) === dialog) this.dialogs.delete(dialog.id);
  }

  /**
   * UAS: the dialog an INVITE creates (its To tag is the transaction's),
   * answered 2xx with `body`; undefined when the INVITE was already answered
   * (a CANCEL got there first: it has its 487).
   */
  accept(
    tx: ServerTransaction,
    source: Peer,
    options: { headers?: Array<[string, string]>; body?: Buffer } = {},
  ): Dialog | undefined {
    if (tx.answered) return undefined;
    const r = tx.request;
    const from = fromOf(r);
    const contact = r.headers.get("Contact");
    const target =
      contact === undefined || contact === "*" ? from.uri : parseNameAddr(contact, "Contact").uri;
    const dialog = new Dialog(
      this,
      "UAS",
      callIdOf(r),
      tx.toTag,
      tagOf(from) ?? "",
      `${r.headers.get("To")};tag=${tx.toTag}`,
      r.headers.get("From") ?? "",
      target,
      r.headers.getAll("Record-Route"),
      Math.floor(Math.random() * 10_000),
      source,
    );
    dialog.remoteSeq = cseqOf(r).seq;
    this.dialogs.set(dialog.id, dialog);
    dialog.answer(tx, options);
    return dialog;
  }

  /**
   * UAC: sends an INVITE to `uri` via `destination`. Resolves with the final
   * response and, on 2xx, the confirmed (and ACKed) dialog.
   */
  async invite(
    uri: string,
    destination: Peer,
    options: {
      from: string;
      to?: string;
      headers?: Array<[string, string]>;
      body?: Buffer;
      /** Answer one 401/407 challenge with these (outbound trunks). */
      credentials?: Credentials;
    },
  ): Promise<{ response: SipResponse; dialog: Dialog | undefined }> {
    const headers = new SipHeaders([
      ["From", `${options.from};tag=${randomToken()}`],
      ["To", options.to ?? `<${uri}>`],
      ["Call-ID", `${randomToken(12)}@${this.endpoint.sentBy(destination.transport).host}`],
      ["CSeq", "1 INVITE"],
      ["Contact", this.contact(destination.transport)],
    ]);
    if (options.body !== undefined) headers.add("Content-Type", "application/sdp");
    for (const [n, v] of options.headers ?? []) headers.add(n, v);
    const request: SipRequest = {
      kind: "request",
      method: "INVITE",
      uri: parseUri(uri),
      headers,
      body: options.body ?? Buffer.alloc(0),
    };
    let response = await this.send(request, destination, undefined);
    const retry =
      options.credentials === undefined ? undefined : authorize(request, response, options.credentials);
    if (retry !== undefined) response = await this.send(retry, destination, undefined);
    return {
      response,
      dialog: this.dialogs.get(
        dialogId(callIdOf(response), tagOf(fromOf(response)) ?? "", tagOf(toOf(response)) ?? ""),
      ),
    };
  }

  /** Sends a request through a client transaction; a 2xx to INVITE creates (initial) or updates the dialog and is ACKed. */
  send(request: SipRequest, destination: Peer, dialog: Dialog | undefined): Promise<SipResponse> {
    return new Promise((resolve) => {
      let settled = false;
      this.endpoint.sendRequest(request, destination, {
        response: (response) => {
          if (response.status >= 200 && response.status < 300 && request.method === "INVITE") {
            (dialog ?? this.uacDialog(request, response, destination)).acknowledge(response);
          }
          if (response.status >= 200 && !settled) {
            settled = true;
            resolve(response);
          }
        },
        timeout: () => {
          if (settled) return;
          settled = true;
          resolve({
            kind: "response",
            status: 408,
            reason: "Request Timeout",
            headers: request.headers.clone(),
            body: Buffer.alloc(0),
          });
        },
      });
    });
  }

  private uacDialog(invite: SipRequest, response: SipResponse, destination: Peer): Dialog {
    const from = fromOf(response);
    const to = toOf(response);
    const id = dialogId(callIdOf(response), tagOf(from) ?? "", tagOf(to) ?? "");
    const existing = this.dialogs.get(id);
    if (existing !== undefined) return existing;
    const contact = response.headers.get("Contact");
    const target =
      contact === undefined || contact === "*" ? invite.uri : parseNameAddr(contact, "Contact").uri;
    const dialog = new Dialog(
      this,
      "UAC",
      callIdOf(response),
      tagOf(from) ?? "",
      tagOf(to) ?? "",
      invite.headers.get("From") ?? "",
      response.headers.get("To") ?? "",
      target,
      response.headers.getAll("Record-Route").reverse(),
      cseqOf(invite).seq,
      destination,
    );
    this.dialogs.set(id, dialog);
    return dialog;
  }
}
