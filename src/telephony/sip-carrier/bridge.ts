/**
 * Two answered SIP legs' audio relayed both ways (CarrierLeg.bridge): each
 * 20 ms frame one leg's peer sends, as its jitter buffer plays it out
 * (decoded to PCM), is queued to the other leg's peer, which encodes it with
 * its own codec — so a PCMU leg and a PCMA leg hear each other, transcoded.
 * Both legs' sessions run on the one process pacer, so a frame received at
 * one tick goes out at the next: the bridge adds one frame (20 ms) to the
 * jitter buffers' own delay. A leg that cannot send what it is given (held)
 * keeps at most MAX_QUEUED samples of relay; older ones are dropped, so the
 * delay never grows. Keys pressed on one leg are sent to the other (RFC 4733
 * when that peer offered telephone-event, an in-band tone otherwise), once
 * each. `stop` ends both directions; the legs' own media is untouched.
 */
import type { SipLeg } from "./leg.js";

/** The most relay a leg keeps queued: 100 ms (five frames). */
export const MAX_QUEUED = 800;

export class MediaBridge {
  private readonly stops: Array<() => void> = [];
  /** Each direction's queue owner on the receiving leg. */
  private readonly toA = {};
  private readonly toB = {};

  constructor(
    readonly a: SipLeg,
    readonly b: SipLeg,
  ) {
    this.stops.push(
      a.onRemoteFrame((frame) => this.pass(b, this.toB, frame)),
      b.onRemoteFrame((frame) => this.pass(a, this.toA, frame)),
      a.onRemoteKey((key) => b.relayKey(key)),
      b.onRemoteKey((key) => a.relayKey(key)),
    );
  }

  private pass(to: SipLeg, owner: object, frame: Int16Array): void {
    if (to.relayQueued(owner) + frame.length > MAX_QUEUED) to.relayClear(owner);
    to.relay(frame, owner);
  }

  /** Stops relaying both ways (idempotent); what is queued plays out. */
  stop(): void {
    for (const s of this.stops.splice(0)) s();
  }
}
