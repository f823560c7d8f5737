/**
 * The SipCarrier's small parts on their own: the settings' defaults and
 * errors, and the CarrierRouter's choice of carrier. (RTP packets, RFC 4733
 * events and the session are src/rtp/'s, tested in test/rtp/.)
 */
import { describe, expect, it } from "vitest";
import type { Carrier, CarrierLeg } from "../../src/telephony/carrier.js";
import { CarrierRouter } from "../../src/telephony/carrier-router.js";
import { trunkOutcome } from "../../src/telephony/sip-carrier/carrier.js";
import { loadSipCarrierSettings } from "../../src/telephony/sip-carrier/settings.js";

describe("SipCarrier settings", () => {
  it("defaults to outbound on, ports 10000-20000 and a 30 s RTP timeout", () => {
    expect(loadSipCarrierSettings({})).toEqual({
      outbound: true,
      rtpPortMin: 10000,
      rtpPortMax: 20000,
      rtpTimeoutSeconds: 30,
    });
    expect(
      loadSipCarrierSettings({ SIP_OUTBOUND: "false", RTP_PORT_MIN: "0", RTP_TIMEOUT_SECONDS: "0" }),
    ).toEqual({
      outbound: false,
      rtpPortMin: 0,
      rtpPortMax: 0,
      rtpTimeoutSeconds: 0,
    });
  });

  it("names the setting that is wrong", () => {
    expect(() => loadSipCarrierSettings({ SIP_OUTBOUND: "maybe" })).toThrow(/SIP_OUTBOUND/);
    expect(() => loadSipCarrierSettings({ RTP_PORT_MIN: "70000" })).toThrow(/RTP_PORT_MIN/);
    expect(() => loadSipCarrierSettings({ RTP_PORT_MIN: "20000", RTP_PORT_MAX: "20000" })).toThrow(
      /RTP_PORT_MAX/,
    );
    // An even port and the next (RTP and RTCP) must fit.
    expect(() => loadSipCarrierSettings({ RTP_PORT_MIN: "20001", RTP_PORT_MAX: "20002" })).toThrow(
      /RTP_PORT_MIN\.\.RTP_PORT_MAX/,
    );
    expect(() => loadSipCarrierSettings({ RTP_TIMEOUT_SECONDS: "-1" })).toThrow(/RTP_TIMEOUT_SECONDS/);
    expect(() => loadSipCarrierSettings({ RTP_TIMEOUT_SECONDS: "ten" })).toThrow(/RTP_TIMEOUT_SECONDS/);
  });
});

describe("CarrierRouter", () => {
  function carrier(
    name: string,
    seen: string[],
    held = new Set<string>(),
  ): Carrier & { holds(id?: string): boolean } {
    const leg = { callId: name } as CarrierLeg;
    return {
      placeCall: async (r) => {
        seen.push(`${name} place ${r.to}`);
        return leg;
      },
      receiveCall: async (r) => {
        seen.push(`${name} receive ${r.callId}`);
        return leg;
      },
      holds: (id) => id !== undefined && held.has(id),
    };
  }
  const events = { ringing() {}, answered() {}, ended() {} };

  it("is the simulator alone until a SIP carrier is attached, and again once detached", async () => {
    const seen: string[] = [];
    const simulator = carrier("sim", seen);
    const sip = carrier("sip", seen, new Set(["inv-1"]));
    const router = new CarrierRouter(simulator);
    await router.placeCall(
      { callId: "a", to: "sip:bob@example.com", from: "+61255501234", timeoutSeconds: 5 },
      events,
    );
    router.attachSip(sip, { outbound: true });
    await router.placeCall(
      { callId: "b", to: "sip:bob@example.com", from: "+61255501234", timeoutSeconds: 5 },
      events,
    );
    await router.placeCall(
      { callId: "c", to: "+61491570156", from: "+61255501234", timeoutSeconds: 5 },
      events,
    );
    await router.receiveCall({ callId: "d", to: "sip:1@x", from: "", sipCallId: "inv-1" }, events);
    await router.receiveCall({ callId: "e", to: "sip:1@x", from: "", sipCallId: "inv-2" }, events);
    await router.receiveCall({ callId: "f", to: "+61491570156", from: "" }, events);
    router.detachSip(sip);
    await router.receiveCall({ callId: "g", to: "sip:1@x", from: "", sipCallId: "inv-1" }, events);
    expect(seen).toEqual([
      "sim place sip:bob@example.com",
      "sip place sip:bob@example.com",
      "sim place +61491570156",
      "sip receive d",
      "sim receive e",
      "sim receive f",
      "sim receive g",
    ]);
  });

  it("keeps sip: destinations on the simulator when SIP_OUTBOUND is off", () => {
    const seen: string[] = [];
    const simulator = carrier("sim", seen);
    const router = new CarrierRouter(simulator);
    router.attachSip(carrier("sip", seen), { outbound: false });
    expect(router.carrierFor("sip:bob@example.com")).toBe(simulator);
  });

  it("sends numbers (+E164, tel:) to the SIP carrier only while a trunk is enabled", async () => {
    const seen: string[] = [];
    const router = new CarrierRouter(carrier("sim", seen));
    let enabled = false;
    router.attachSip(carrier("sip", seen), { outbound: false, trunks: { any: async () => enabled } });
    const place = (callId: string, to: string) =>
      router.placeCall({ callId, to, from: "+61255501234", timeoutSeconds: 5 }, events);
    await place("a", "+61491570156");
    enabled = true;
    await place("b", "+61491570156");
    await place("c", "tel:+61491570156");
    await place("d", "sip:bob@example.com");
    expect(seen).toEqual([
      "sim place +61491570156",
      "sip place +61491570156",
      "sip place tel:+61491570156",
      "sim place sip:bob@example.com",
    ]);
  });
});

describe("trunkOutcome: what a trunk attempt's final answer says of the trunk", () => {
  it.each([
    [200, false, "answered"],
    [486, false, "rejected"],
    [603, false, "rejected"],
    [404, false, "rejected"],
    [487, false, "cancelled"],
    [503, true, "failed"],
    [408, true, "failed"],
  ] as const)("%i (failed over: %s) is %s", (status, failedOver, outcome) => {
    expect(trunkOutcome(status, failedOver)).toBe(outcome);
  });
});
