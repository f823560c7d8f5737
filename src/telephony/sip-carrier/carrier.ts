/**
 * The SipCarrier: the Carrier (../carrier.ts) of real calls over the SIP
 * edge's endpoint (src/sip/), one RTP session per call (./call-media.ts
 * over src/rtp/session.ts, all paced by the process's one Pacer).
 *
 * Incoming: the edge's INVITE handler (./inbound.ts) has authorized the
 * INVITE and negotiated its SDP; it `hold`s the INVITE under its Call-ID
 * before the call is created, and the engine's `receiveCall` (the request
 * carries `sipCallId`) takes it: 180 Ringing, the leg ringing. `answer()`
 * sends 200 with the SDP answer (retransmitted until the ACK; no ACK in
 * 64*T1 → BYE, the leg ends failed SIP_ACK_TIMEOUT, RFC 3261 §13.3.1.4);
 * `reject` 486 / 603; `hangUp()` before the answer 480, after it BYE. A
 * CANCEL (the endpoint answers 200 and 487) or a BYE from the caller ends
 * the leg `remote-hangup`. Re-INVITEs are answered with the same media
 * (our port and codec; the peer's new address, hold or resume followed).
 * In-dialog INFO: `application/dtmf-relay` and `application/dtmf` bodies are
 * keys of the call (200; 400 naming what is wrong with a body that holds no
 * key); an INFO without a body is answered 200 (a keep-alive); any other
 * body 415 with the Accept header naming the two (RFC 6086 §4.2.2 leaves
 * legacy INFO usage to the parties; 415 tells the peer to use another way,
 * e.g. RFC 4733, instead of its keys silently vanishing). OPTIONS and
 * UPDATE: 200.
 *
 * Outgoing (`placeCall` to a `sip:` URI, ./outbound.ts resolves where to):
 * INVITE with an offer (PCMU, PCMA, telephone-event; Call-ID `<call id>@<host
 * of to>`, what the Call shows as sip_call_id; a withheld caller as RFC
 * 3323's `"Anonymous" <sip:anonymous@anonymous.invalid>` with `Privacy: id`)
 * → 180/183 ringing, 2xx
 * answered (ACKed by the dialog layer), 486/600 busy, 603 rejected, no
 * final answer within timeoutSeconds → CANCEL and no-answer; other 3xx-6xx
 * (and 408 from the transaction) failed with error code `SIP_<status>`; an
 * answer without a usable SDP: BYE, failed SIP_488. 401/407 are answered
 * once: with the target's trunk DigestClient (./trunk-targets.ts), else with
 * `credentialsFor(request)` (none by default).
 *
 * Targets are tried one after the other while `failsOver` says so: a
 * registered contact on 408/480/503; a carrier trunk on 408, 5xx, a second
 * 401/407, or silence (not even 100) for TRUNK_NO_RESPONSE_SECONDS — its
 * INVITE is then abandoned, and a late 2xx to it is hung up with BYE. Other
 * answers (486, 603, 404…) are the far end's and end the call. Each
 * trunk's attempts are logged (the call's id and the trunk's) and counted
 * by outcome (`trunkOutcome`, `switchboard_sip_trunk_attempts_total`).
 */
import type { Logger } from "../../log.js";
import type { SpeechEngine } from "../../media/speech/engine.js";
import { sipTrunkAttemptsTotal } from "../../observability/metrics.js";
import type { Credentials } from "../../sip/authorize.js";
import type { DigestClient } from "../../sip/client-digest.js";
import type { Dialog } from "../../sip/dialog.js";
import { DialogLayer } from "../../sip/dialog-layer.js";
import type { SipEndpoint } from "../../sip/endpoint.js";
import { SipHeaders, type SipResponse } from "../../sip/message.js";
import {
  createAnswer,
  createOffer,
  type Negotiated,
  negotiate,
  parseAudio,
  SdpError,
} from "../../sip/sdp.js";
import type { ClientTransaction, ServerTransaction } from "../../sip/transaction.js";
import type { Peer } from "../../sip/transport.js";
import type {
  Carrier,
  CarrierCallRequest,
  CarrierEvents,
  CarrierLeg,
  IncomingCallRequest,
} from "../carrier.js";
import type { Scheduler } from "../scheduler.js";
import { CallMedia, type CallMediaOptions } from "./call-media.js";
import { type LegSignalling, SipLeg } from "./leg.js";

/** An authorized INVITE waiting for the engine's receiveCall. */
interface HeldInvite {
  tx: ServerTransaction;
  source: Peer;
  session: CallMedia;
  answerSdp: string;
  leg: SipLeg | undefined;
  cancelled: boolean;
}

/** The From of an outgoing leg whose caller is withheld (RFC 3323, section 4.1.1.3). */
export const ANONYMOUS_FROM = '"Anonymous" <sip:anonymous@anonymous.invalid>';

/** Where an outgoing call goes: the Request-URI and the next hop. */
export interface OutboundTarget {
  uri: string;
  destination: Peer;
  /** The To header's URI (default: the call's `to`). */
  to?: string;
  /** A carrier trunk (./trunk-targets.ts): its id, and the digest client answering its challenges. */
  trunk?: { id: string; digest: DigestClient | undefined };
}

/**
 * How long a trunk may stay silent (not even 100 Trying) before the call
 * gives up on it and tries the next trunk: the trunk is taken as down.
 */
export const TRUNK_NO_RESPONSE_SECONDS = 5;

/** Whether a final answer from a target lets the call try the next one. */
export function failsOver(target: OutboundTarget, status: number): boolean {
  // A trunk: it did not answer (408), failed (5xx) or refused our credentials
  // (401/407 again); 4xx/6xx are the far end's answer (486 busy, 404, 603).
  if (target.trunk !== undefined)
    return status === 408 || status === 401 || status === 407 || (status >= 500 && status < 600);
  // A registered contact that does not answer, is unavailable or overloaded.
  return status === 408 || status === 480 || status === 503;
}

export interface SipCarrierOptions {
  endpoint: SipEndpoint;
  /** Real time: RTP pacing and SIP timers (never a scaled simulator's). */
  scheduler: Scheduler;
  /** Where RTP sockets are bound (RTP_PORT_MIN, RTP_PORT_MAX) and RTP_TIMEOUT_SECONDS. */
  media: CallMediaOptions;
  /** The address written in SDP (SIP_ADVERTISED_HOST, else the bound address). */
  mediaAddress: string;
  log: Logger;
  /** Where a `sip:` destination is reached (./outbound.ts); empty when it cannot be. */
  targetsOf(to: string): Promise<OutboundTarget[]>;
  /** Ties a call to the Call-ID of its SIP dialogue (the edge's capture, for GetSipInfo). */
  attach?(callId: string, sipCallId: string): void;
  /** What `say` speaks with (src/media/speech/); absent: speech-like noise, as the simulator without one. */
  speech?: SpeechEngine | undefined;
  /** Digest credentials for an outgoing call's 401/407; none by default. */
  credentialsFor?(request: CarrierCallRequest): Credentials | undefined;
}

export const SIP_ERROR_PREFIX = "SIP_";

export class SipCarrier implements Carrier {
  readonly layer: DialogLayer;
  private readonly held = new Map<string, HeldInvite>();
  private readonly byDialog = new Map<string, { leg: SipLeg; session: CallMedia; version: number }>();
  private sessionIds = Math.floor(Math.random() * 1_000_000);

  constructor(private readonly options: SipCarrierOptions) {
    this.layer = new DialogLayer(options.endpoint, {
      request: (dialog, tx) => this.inDialog(dialog, tx),
      terminated: (dialog, why) => {
        const entry = this.byDialog.get(dialog.id);
        this.byDialog.delete(dialog.id);
        if (entry === undefined) return;
        if (why === "no-ack") {
          entry.leg.end({
            cause: "failed",
            errorCode: "SIP_ACK_TIMEOUT",
            errorMessage: "The caller never acknowledged the answer (no ACK in 64*T1)",
          });
        } else if (why === "bye-received") entry.leg.end({ cause: "remote-hangup" });
      },
    });
  }

  /** A new RTP session (its sockets bound in the RTP port range; RtpBindError when it is full). */
  async openSession(): Promise<CallMedia> {
    return CallMedia.open(this.options.media, this.options.log);
  }

  /** Our SDP for a session: an answer to `offer`, or an offer. */
  private sdp(
    session: CallMedia,
    offer: string | undefined,
    version: number,
  ): { sdp: string; negotiated?: Negotiated } {
    const local = {
      address: this.options.mediaAddress,
      port: session.port,
      sessionId: this.sessionIds,
      sessionVersion: version,
    };
    return offer === undefined ? { sdp: createOffer(local) } : createAnswer(offer, local);
  }

  /**
   * Holds an authorized INVITE for the engine (./inbound.ts): answers `offer`
   * (SdpError: no common codec) and keeps it under its Call-ID. The INVITE
   * being cancelled meanwhile is remembered.
   */
  hold(callId: string, tx: ServerTransaction, source: Peer, offer: string, session: CallMedia): void {
    const { sdp, negotiated } = this.sdp(session, offer, 1);
    session.configure(negotiated!);
    const held: HeldInvite = { tx, source, session, answerSdp: sdp, leg: undefined, cancelled: false };
    this.held.set(callId, held);
    tx.user = {
      cancelled: () => {
        held.cancelled = true;
        held.leg?.end({ cause: "remote-hangup" });
        if (held.leg === undefined) return;
        this.held.delete(callId);
      },
    };
  }

  /** Whether an INVITE with this Call-ID waits for the engine. */
  holds(sipCallId: string | undefined): boolean {
    return sipCallId !== undefined && this.held.has(sipCallId);
  }

  /** The edge gives up an INVITE the engine did not take (refused, or no engine): its RTP closes. */
  release(callId: string): HeldInvite | undefined {
    const held = this.held.get(callId);
    if (held === undefined || held.leg !== undefined) return undefined;
    this.held.delete(callId);
    held.session.close();
    return held;
  }

  async receiveCall(request: IncomingCallRequest, events: CarrierEvents): Promise<CarrierLeg> {
    const sipCallId = request.sipCallId ?? "";
    const held = this.held.get(sipCallId);
    if (held === undefined || held.leg !== undefined) {
      throw new Error(`no SIP INVITE with Call-ID ${sipCallId} waits for call ${request.callId}`);
    }
    const { tx, source, session } = held;
    const signalling: LegSignalling = {
      accept: () => {
        this.held.delete(sipCallId);
        const dialog = this.layer.accept(tx, source, { body: Buffer.from(held.answerSdp) });
        if (dialog === undefined) return false;
        this.byDialog.set(dialog.id, { leg, session, version: 1 });
        return true;
      },
      refuse: (status, reason) => {
        this.held.delete(sipCallId);
        tx.respond(tx.reply(status, reason));
      },
      cancel: () => {},
      bye: () => this.bye(leg),
    };
    const leg: SipLeg = new SipLeg(
      request.callId,
      "incoming",
      events,
      session,
      this.options.scheduler,
      signalling,
      this.options.speech,
    );
    held.leg = leg;
    this.options.attach?.(request.callId, sipCallId);
    leg.rang();
    if (held.cancelled) {
      this.held.delete(sipCallId);
      this.options.scheduler.after(0, () => leg.end({ cause: "remote-hangup" }));
    } else {
      tx.respond(tx.reply(180, "Ringing", [["Contact", this.layer.contact(source.transport)]]));
    }
    return leg;
  }

  private bye(leg: SipLeg): void {
    for (const [id, entry] of this.byDialog) {
      if (entry.leg !== leg) continue;
      this.byDialog.delete(id);
      const dialog = this.layer.get(id);
      // The edge may have closed (shutdown): a BYE that cannot be sent is dropped.
      if (dialog !== undefined && dialog.state !== "terminated") dialog.bye().catch(() => {});
    }
  }

  /** An in-dialog request other than BYE/ACK: re-INVITE answered with the same media, INFO's keys, OPTIONS/UPDATE 200. */
  private inDialog(dialog: Dialog, tx: ServerTransaction): void {
    const method = tx.request.method;
    if (method === "INFO") {
      this.info(dialog, tx);
      return;
    }
    if (method !== "INVITE") {
      if (method === "OPTIONS" || method === "UPDATE") tx.respond(tx.reply(200));
      else
        tx.respond(tx.reply(405, undefined, [["Allow", "INVITE, ACK, BYE, CANCEL, OPTIONS, INFO, UPDATE"]]));
      return;
    }
    const entry = this.byDialog.get(dialog.id);
    if (entry === undefined) {
      tx.respond(tx.reply(481));
      return;
    }
    const offer = tx.request.body.length > 0 ? tx.request.body.toString("utf8") : undefined;
    try {
      entry.version++;
      const { sdp, negotiated } = this.sdp(entry.session, offer, entry.version);
      if (negotiated !== undefined) entry.session.configure(negotiated);
      dialog.answer(tx, { body: Buffer.from(sdp) });
    } catch (err) {
      if (!(err instanceof SdpError)) throw err;
      tx.respond(tx.reply(488, `Not Acceptable Here: ${err.message}`));
    }
  }

  /** In-dialog INFO: DTMF relay bodies become the call's keys (see the header comment). */
  private info(dialog: Dialog, tx: ServerTransaction): void {
    const body = tx.request.body;
    if (body.length === 0) {
      tx.respond(tx.reply(200));
      return;
    }
    const type = (tx.request.headers.get("Content-Type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/dtmf-relay" && type !== "application/dtmf") {
      tx.respond(tx.reply(415, undefined, [["Accept", "application/dtmf-relay, application/dtmf"]]));
      return;
    }
    const entry = this.byDialog.get(dialog.id);
    if (entry === undefined) {
      tx.respond(tx.reply(481));
      return;
    }
    const result = entry.session.dtmfInfo(type, body.toString("utf8"));
    if ("error" in result) {
      // The reason phrase names what is wrong; a control character cannot reach it (the parser's messages quote with JSON).
      const reason = `Bad Request: ${type} ${result.error}`.replace(/[\r\n]/g, " ");
      tx.respond(tx.reply(400, reason.length > 120 ? `${reason.slice(0, 117)}...` : reason));
      return;
    }
    tx.respond(tx.reply(200));
  }

  async placeCall(request: CarrierCallRequest, events: CarrierEvents): Promise<CarrierLeg> {
    const session = await this.openSession();
    let transaction: ClientTransaction | undefined;
    let destination: Peer | undefined;
    let timedOut = false;
    const cancel = () => {
      if (transaction !== undefined && destination !== undefined) {
        this.options.endpoint.cancel(transaction, destination, { response: () => {}, timeout: () => {} });
      }
    };
    const signalling: LegSignalling = {
      accept: () => false,
      refuse: () => {},
      cancel,
      bye: () => this.bye(leg),
    };
    const leg: SipLeg = new SipLeg(
      request.callId,
      "outgoing",
      events,
      session,
      this.options.scheduler,
      signalling,
      this.options.speech,
    );
    const timer = this.options.scheduler.after(request.timeoutSeconds, () => {
      if (leg.state === "ended" || leg.state === "answered") return;
      timedOut = true;
      cancel();
      leg.end({
        cause: "no-answer",
        errorCode: "NO_ANSWER",
        errorMessage: `Nobody answered within ${request.timeoutSeconds} seconds`,
      });
    });
    const fail = (status: number, message: string) =>
      leg.end({ cause: "failed", errorCode: `${SIP_ERROR_PREFIX}${status}`, errorMessage: message });
    const attempt = async (target: OutboundTarget) => {
      destination = target.destination;
      transaction = undefined;
      const offer = this.sdp(session, undefined, 1).sdp;
      const credentials = target.trunk === undefined ? this.options.credentialsFor?.(request) : undefined;
      const digest = target.trunk?.digest;
      // A withheld caller: RFC 3323's anonymous From, and Privacy: id (what carriers read as CLIR).
      const withheld = request.from === "";
      const from = withheld
        ? ANONYMOUS_FROM
        : request.from.startsWith("sip:")
          ? `<${request.from}>`
          : `<sip:${request.from}@${this.options.endpoint.sentBy(destination.transport).host}>`;
      let heard = false;
      let abandoned = false;
      const sent = this.layer.invite(target.uri, destination, {
        from,
        to: `<${target.to ?? request.to}>`,
        // What the Call shows as sip_call_id (src/voice/calls/proto.ts): the call's id at the host of `to`.
        callId: sipCallIdOf(request),
        body: Buffer.from(offer),
        ...(withheld ? { headers: [["Privacy", "id"]] as Array<[string, string]> } : {}),
        ...(credentials === undefined ? {} : { credentials }),
        ...(digest === undefined ? {} : { digest }),
        progress: (r) => {
          heard = true;
          if (abandoned) return;
          if ((r.status === 180 || r.status === 183) && leg.state === "setup") leg.rang();
        },
        started: (tx) => {
          if (abandoned) return;
          transaction = tx;
          // Hung up while the INVITE was being prepared: cancel it at once.
          if (leg.state === "ended") cancel();
        },
      });
      if (target.trunk === undefined) return sent;
      // A trunk that says nothing at all within TRUNK_NO_RESPONSE_SECONDS is taken as down.
      return new Promise<Awaited<typeof sent>>((resolve) => {
        let settled = false;
        const silence = this.options.scheduler.after(TRUNK_NO_RESPONSE_SECONDS, () => {
          if (heard || settled) return;
          settled = true;
          abandoned = true;
          transaction = undefined;
          resolve({ response: { ...noResponse(target) }, dialog: undefined });
        });
        void sent.then((result) => {
          silence.cancel();
          if (!settled) {
            settled = true;
            resolve(result);
          } else if (result.dialog !== undefined) {
            // The trunk answered after we gave up on it: that call is not wanted.
            result.dialog.bye().catch(() => {});
          }
        });
      });
    };
    const run = async () => {
      this.options.attach?.(request.callId, sipCallIdOf(request));
      const targets = await this.options.targetsOf(request.to);
      if (targets.length === 0) {
        timer.cancel();
        fail(404, `${request.to} cannot be reached: no registered contact, address or enabled trunk`);
        return;
      }
      let result: Awaited<ReturnType<typeof attempt>> | undefined;
      // Serially: a target that fails (failsOver) gives way to the next one.
      for (const [i, target] of targets.entries()) {
        if (leg.state === "ended") break;
        result = await attempt(target);
        const status = result.response.status;
        const next = failsOver(target, status);
        if (target.trunk !== undefined) {
          const outcome = trunkOutcome(status, next);
          sipTrunkAttemptsTotal.inc({ trunk: target.trunk.id, outcome });
          // Which trunk carried the call (or failed it): the log line names both.
          if (outcome === "failed") {
            this.options.log.warn(
              { call: request.callId, trunk: target.trunk.id, status },
              i + 1 < targets.length
                ? "carrier trunk failed: trying the next one"
                : "carrier trunk failed: no trunk left",
            );
          } else {
            this.options.log.info(
              { call: request.callId, trunk: target.trunk.id, status, outcome },
              "outgoing call through a carrier trunk",
            );
          }
        }
        if (!next) break;
      }
      timer.cancel();
      if (result === undefined) return;
      const { response, dialog } = result;
      if (response.status >= 200 && response.status < 300 && dialog !== undefined) {
        if (leg.state === "ended") {
          dialog.bye().catch(() => {});
          return;
        }
        this.byDialog.set(dialog.id, { leg, session, version: 1 });
        try {
          const negotiated = negotiate(parseAudio(response.body.toString("utf8")));
          session.configure(negotiated);
        } catch (err) {
          if (!(err instanceof SdpError)) throw err;
          this.bye(leg);
          fail(488, `The answer's SDP cannot be used: ${err.message}`);
          return;
        }
        leg.connected();
        return;
      }
      if (leg.state === "ended" || timedOut) return;
      leg.end(outcomeOf(response));
    };
    run().catch((err: unknown) => {
      this.options.log.error({ err, call: request.callId }, "outgoing SIP call failed");
      timer.cancel();
      fail(500, "The call could not be placed over SIP");
    });
    return leg;
  }
}

/**
 * What a trunk attempt's final `status` says of the trunk
 * (`switchboard_sip_trunk_attempts_total`): it carried the call (answered),
 * passed on the far end's refusal (rejected: busy, declined, not found…) or
 * our CANCEL's 487 (cancelled), or it failed and the next trunk is tried
 * (`failsOver`).
 */
export function trunkOutcome(
  status: number,
  failedOver: boolean,
): "answered" | "rejected" | "cancelled" | "failed" {
  if (status >= 200 && status < 300) return "answered";
  if (failedOver) return "failed";
  return status === 487 ? "cancelled" : "rejected";
}

/** What a trunk that never answered is taken to have said. */
function noResponse(target: OutboundTarget): SipResponse {
  return {
    kind: "response",
    status: 408,
    reason: `Request Timeout (trunk ${target.trunk?.id ?? ""} did not respond)`,
    headers: new SipHeaders(),
    body: Buffer.alloc(0),
  };
}

/** The Call-ID of an outgoing call: the engine's call id at the host of `to` (as proto.ts derives it). */
function sipCallIdOf(request: CarrierCallRequest): string {
  const host = (request.to.split("@")[1] ?? "").split(/[;?]/)[0]!;
  return host === "" ? request.callId : `${request.callId}@${host}`;
}

/** How a final non-2xx response to our INVITE ends the leg. */
export function outcomeOf(response: SipResponse) {
  const status = response.status;
  const reason = `${status} ${response.reason}`;
  if (status === 486 || status === 600) {
    return {
      cause: "busy" as const,
      errorCode: "BUSY",
      errorMessage: `The called party is busy (${reason})`,
    };
  }
  if (status === 603) {
    return {
      cause: "rejected" as const,
      errorCode: "REJECTED",
      errorMessage: `The call was declined (${reason})`,
    };
  }
  return {
    cause: "failed" as const,
    errorCode: `${SIP_ERROR_PREFIX}${status}`,
    errorMessage: `The call failed: ${reason}`,
  };
}
