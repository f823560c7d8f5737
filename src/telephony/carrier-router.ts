/**
 * The carrier the call engine is given: it sends each request to the
 * network that can carry it.
 * - Incoming legs go to the carrier that delivered them: an IncomingCallRequest
 *   whose `sipCallId` the attached SipCarrier holds (an INVITE at the SIP
 *   edge) to it, every other one to the simulator.
 * - Outgoing legs to a `sip:` / `sips:` destination go to the SipCarrier
 *   while one is attached (the SIP edge runs: SIP_ENABLED, `npm start`) and
 *   SIP_OUTBOUND is on.
 * - Outgoing legs to a number (`+E164`, `tel:`) go to the SipCarrier while
 *   one is attached and a carrier trunk is enabled (`trunks.any()`, read
 *   from the database with a short cache: src/voice/sip-trunks/routing.ts);
 *   it sends them out through the trunks. With no trunk enabled they stay
 *   on the simulator.
 * Legs keep their carrier: bridging legs of different carriers throws, as
 * CarrierLeg.bridge says. With nothing attached — every test that builds an
 * engine, unless it starts the edge — this is the simulator alone.
 */
import type {
  Carrier,
  CarrierCallRequest,
  CarrierEvents,
  CarrierLeg,
  IncomingCallRequest,
} from "./carrier.js";

/** What the router needs of a SIP carrier. */
export interface SipCarrierLike extends Carrier {
  holds(sipCallId: string | undefined): boolean;
}

/** Whether a carrier trunk is enabled (TrunkRouting). */
export interface TrunksLike {
  any(): Promise<boolean>;
}

/** A number, as opposed to a SIP URI: `+E164` or `tel:`. */
export function isNumberDestination(to: string): boolean {
  return /^(\+|tel:)/i.test(to);
}

export class CarrierRouter implements Carrier {
  private sip: { carrier: SipCarrierLike; outbound: boolean; trunks?: TrunksLike | undefined } | undefined;

  constructor(readonly simulator: Carrier) {}

  /**
   * The SIP edge started: its carrier takes its INVITEs, (when `outbound`)
   * outgoing `sip:` calls and (while `trunks` has one enabled) calls to numbers.
   */
  attachSip(carrier: SipCarrierLike, options: { outbound: boolean; trunks?: TrunksLike }): void {
    this.sip = { carrier, outbound: options.outbound, trunks: options.trunks };
  }

  /** The SIP edge stopped. */
  detachSip(carrier: SipCarrierLike): void {
    if (this.sip?.carrier === carrier) this.sip = undefined;
  }

  /** The carrier an outgoing call to `to` goes out on. */
  carrierFor(to: string): Carrier {
    if (this.sip?.outbound && /^sips?:/i.test(to)) return this.sip.carrier;
    return this.simulator;
  }

  /** The carrier an outgoing call to `to` goes out on, trunks considered. */
  async carrierOf(to: string): Promise<Carrier> {
    const sip = this.sip;
    if (sip?.trunks !== undefined && isNumberDestination(to) && (await sip.trunks.any())) return sip.carrier;
    return this.carrierFor(to);
  }

  async placeCall(request: CarrierCallRequest, events: CarrierEvents): Promise<CarrierLeg> {
    return (await this.carrierOf(request.to)).placeCall(request, events);
  }

  receiveCall(request: IncomingCallRequest, events: CarrierEvents): Promise<CarrierLeg> {
    const sip = this.sip?.carrier;
    if (sip?.holds(request.sipCallId)) return sip.receiveCall(request, events);
    return this.simulator.receiveCall(request, events);
  }
}
