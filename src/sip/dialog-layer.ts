/**
 * The dialogs of an endpoint (RFC 3261 §12): creates them from INVITEs —
 * accept() on the UAS side, invite() on the UAC side (answering one digest
 * challenge when given credentials) — and routes in-dialog requests, ACKs
 * and retransmitted 2xx responses to them (481 for an unknown dialog).
 */
import { authorize, type Credentials } from "./authorize.js";
import type { DigestClient } from "./client-digest.js";
import { Dialog, type DialogUser, dialogId } from "./dialog.js";
import { type RequestHandler, randomToken, type SipEndpoint } from "./endpoint.js";
import {
  callIdOf,
  cseqOf,
  fromOf,
  SipHeaders,
  type SipRequest,
  type SipResponse,
  tagOf,
  toOf,
} from "./message.js";
import type { ClientTransaction, ServerTransaction } from "./transaction.js";
import type { Peer, TransportName } from "./transport.js";
import { formatUri, parseNameAddr, parseUri } from "./uri.js";

/** What a UAC may follow of its INVITE: provisional responses, and the transaction (to CANCEL it). */
export interface InviteHooks {
  /** A 1xx response (180 Ringing, 183 Session Progress). */
  progress?(response: SipResponse): void;
  /** The client transaction just sent (again after a digest challenge). */
  started?(transaction: ClientTransaction): void;
}

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
      /** Answer one 401/407 challenge with these. */
      credentials?: Credentials;
      /** Answer one 401/407 challenge with this client (outbound trunks: every realm challenged, nonce counts kept). */
      digest?: DigestClient;
      /** The Call-ID; a random one at our host by default. */
      callId?: string;
    } & InviteHooks,
  ): Promise<{ response: SipResponse; dialog: Dialog | undefined }> {
    const headers = new SipHeaders([
      ["From", `${options.from};tag=${randomToken()}`],
      ["To", options.to ?? `<${uri}>`],
      ["Call-ID", options.callId ?? `${randomToken(12)}@${this.endpoint.sentBy(destination.transport).host}`],
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
    let response = await this.send(request, destination, undefined, options);
    const retry =
      options.digest !== undefined
        ? answerWith(options.digest, request, response)
        : options.credentials === undefined
          ? undefined
          : authorize(request, response, options.credentials);
    if (retry !== undefined) response = await this.send(retry, destination, undefined, options);
    return {
      response,
      dialog: this.dialogs.get(
        dialogId(callIdOf(response), tagOf(fromOf(response)) ?? "", tagOf(toOf(response)) ?? ""),
      ),
    };
  }

  /** Sends a request through a client transaction; a 2xx to INVITE creates (initial) or updates the dialog and is ACKed. */
  send(
    request: SipRequest,
    destination: Peer,
    dialog: Dialog | undefined,
    hooks: InviteHooks = {},
  ): Promise<SipResponse> {
    return new Promise((resolve) => {
      let settled = false;
      const tx = this.endpoint.sendRequest(request, destination, {
        response: (response) => {
          if (response.status < 200) hooks.progress?.(response);
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
      hooks.started?.(tx);
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

/** `request` again (new CSeq, its own Via dropped) with `digest`'s answer to `response`, or undefined. */
function answerWith(
  digest: DigestClient,
  request: SipRequest,
  response: SipResponse,
): SipRequest | undefined {
  const answers = digest.answer(response, { method: request.method, uri: formatUri(request.uri) });
  if (answers.length === 0) return undefined;
  const headers = request.headers.clone();
  const [, ...rest] = headers.getAll("Via");
  headers.delete("Via");
  for (const via of rest) headers.add("Via", via);
  const { seq, method } = cseqOf(request);
  headers.set("CSeq", `${seq + 1} ${method}`);
  headers.delete("Authorization");
  headers.delete("Proxy-Authorization");
  for (const [name, value] of answers) headers.add(name, value);
  return { ...request, headers };
}
