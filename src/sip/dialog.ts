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
import type { DialogLayer } from "./dialog-layer.js";
import { cseqOf, SipHeaders, type SipRequest, type SipResponse, serialize } from "./message.js";
import type { ServerTransaction } from "./transaction.js";
import type { Peer, TransportName } from "./transport.js";
import { parseNameAddr, type SipUri } from "./uri.js";

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

export function dialogId(callId: string, localTag: string, remoteTag: string): string {
  return `${callId}|${localTag}|${remoteTag}`;
}
