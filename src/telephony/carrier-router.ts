/**
 * The carrier the call engine is given: it sends each request to the
 * network that can carry it.
 * - Incoming legs go to the carrier that delivered them: an IncomingCallRequest
 *   whose `sipCallId` the attached SipCarrier holds (an INVITE at the SIP
 *   edge) to it, every other one to the simulator.
 * - Outgoing legs to a `sip:` / `sips:` destination go to the SipCarrier
 *   while one is attached (the SIP edge runs: SIP_ENABLED, `npm start`) and
 *   SIP_OUTBOUND is on; everything else (`+E164`, `tel:`: no trunk yet)
 *   stays on the simulator.
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

export class CarrierRouter implements Carrier {
  private sip: { carrier: SipCarrierLike; outbound: boolean } | undefined;

  constructor(readonly simulator: Carrier) {}

  /** The SIP edge started: its carrier takes its INVITEs and (when `outbound`) outgoing `sip:` calls. */
  attachSip(carrier: SipCarrierLike, options: { outbound: boolean }): void {
    this.sip = { carrier, outbound: options.outbound };
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

  placeCall(request: CarrierCallRequest, events: CarrierEvents): Promise<CarrierLeg> {
    return this.carrierFor(request.to).placeCall(request, events);
  }

  receiveCall(request: IncomingCallRequest, events: CarrierEvents): Promise<CarrierLeg> {
    const sip = this.sip?.carrier;
    if (sip?.holds(request.sipCallId)) return sip.receiveCall(request, events);
    return this.simulator.receiveCall(request, events);
  }
}
