/**
 * RFC 3261 §13.3.1.4 on the SipCarrier: an answered incoming call whose 200
 * is never ACKed. The 200 is retransmitted (UDP), then after 64*T1 the
 * carrier sends BYE and the leg ends failed SIP_ACK_TIMEOUT. The carrier
 * runs on a real endpoint with short timers (T1 = 20 ms); the caller is a
 * raw-socket phone.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import { createLogger } from "../../src/log.js";
import type { SipEndpoint } from "../../src/sip/endpoint.js";
import { callIdOf } from "../../src/sip/message.js";
import type { CallEnd } from "../../src/telephony/carrier.js";
import { RealScheduler } from "../../src/telephony/scheduler.js";
import { SipCarrier } from "../../src/telephony/sip-carrier/carrier.js";

import { startEndpoint, udpPort } from "../sip/ua.js";
import { Phone } from "./phone.js";

describe("the SipCarrier without the caller's ACK", () => {
  let endpoint: SipEndpoint;
  let carrier: SipCarrier;
  let phone: Phone;

  beforeAll(async () => {
    endpoint = await startEndpoint({ timers: { t1: 0.02, t2: 0.16, t4: 0.2, maxPending: 30 } });
    carrier = new SipCarrier({
      endpoint,
      scheduler: new RealScheduler(systemClock),
      media: { address: "127.0.0.1", portMin: 0, portMax: 0, timeoutSeconds: 0 },
      mediaAddress: "127.0.0.1",
      log: createLogger("silent"),
      targetsOf: async () => [],
    });
    phone = await Phone.open(udpPort(endpoint));
  });

  afterAll(async () => {
    phone?.close();
    await endpoint?.close();
  });

  it("retransmits the 200, then sends BYE and ends the leg failed SIP_ACK_TIMEOUT", async () => {
    const ended = new Promise<CallEnd>((resolve) => {
      endpoint.onInvite((tx, source) => {
        void (async () => {
          const offer = tx.request.body.toString("utf8");
          carrier.hold(callIdOf(tx.request), tx, source, offer, await carrier.openSession());
          const leg = await carrier.receiveCall(
            { callId: "call-1", to: "sip:1@x", from: "", sipCallId: callIdOf(tx.request) },
            { ringing() {}, answered() {}, ended: resolve },
          );
          leg.answer();
        })();
      });
    });
    const { branch } = phone.invite("sip:1001@127.0.0.1");
    await phone.sip.inbox.next((m) => m.text.includes(branch) && m.status === 200);
    // Retransmitted while no ACK comes.
    await phone.sip.inbox.next((m) => m.text.includes(branch) && m.status === 200);
    const bye = await phone.sip.inbox.next((m) => m.method === "BYE");
    phone.ok(bye);
    expect(await ended).toMatchObject({ cause: "failed", errorCode: "SIP_ACK_TIMEOUT" });
  });
});
