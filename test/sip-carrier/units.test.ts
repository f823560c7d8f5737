/**
 * The SipCarrier's small parts on their own: RTP headers written and read
 * (RFC 3550 §5.1, CSRC/extension/padding skipped, not-RTP refused), RFC 4733
 * events read, the settings' defaults and errors, and the CarrierRouter's
 * choice of carrier.
 */
import { describe, expect, it } from "vitest";
import type { Carrier, CarrierLeg } from "../../src/telephony/carrier.js";
import { CarrierRouter } from "../../src/telephony/carrier-router.js";
import { readRtp, readTelephoneEvent, writeRtp } from "../../src/telephony/sip-carrier/rtp-packet.js";
import { loadSipCarrierSettings } from "../../src/telephony/sip-carrier/settings.js";

describe("RTP packets", () => {
  it("writes the fixed header and reads it back", () => {
    const data = writeRtp({
      payloadType: 8,
      marker: true,
      sequence: 65535,
      timestamp: 0xfffffff0,
      ssrc: 0xdeadbeef,
      payload: Buffer.from([1, 2, 3]),
    });
    expect([...data.subarray(0, 12)]).toEqual([
      0x80, 0x88, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0, 0xde, 0xad, 0xbe, 0xef,
    ]);
    expect(readRtp(data)).toEqual({
      payloadType: 8,
      marker: true,
      sequence: 65535,
      timestamp: 0xfffffff0,
      ssrc: 0xdeadbeef,
      payload: Buffer.from([1, 2, 3]),
    });
  });

  it("skips CSRCs and a header extension and removes padding", () => {
    const data = Buffer.from([
      0xb1,
      0x00,
      0,
      1,
      0,
      0,
      0,
      2,
      0,
      0,
      0,
      3, // V=2 P X CC=1
      9,
      9,
      9,
      9, // CSRC
      0xbe,
      0xde,
      0,
      1,
      7,
      7,
      7,
      7, // extension of one word
      0x55,
      0x66,
      0,
      2, // payload, then 2 bytes of padding
    ]);
    expect(readRtp(data)?.payload).toEqual(Buffer.from([0x55, 0x66]));
  });

  it("refuses what is not RTP version 2, too short, or RTCP", () => {
    expect(readRtp(Buffer.from("hello world!"))).toBeUndefined();
    expect(readRtp(Buffer.from([0x80, 0]))).toBeUndefined();
    expect(readRtp(Buffer.from([0x80, 200, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]))).toBeUndefined();
  });

  it("reads RFC 4733 events", () => {
    expect(readTelephoneEvent(Buffer.from([11, 0x8a, 0x03, 0x20]))).toEqual({
      key: "#",
      end: true,
      duration: 800,
    });
    expect(readTelephoneEvent(Buffer.from([5, 0x0a, 0, 160]))).toEqual({
      key: "5",
      end: false,
      duration: 160,
    });
    expect(readTelephoneEvent(Buffer.from([99, 0, 0, 0]))).toBeUndefined();
    expect(readTelephoneEvent(Buffer.from([1]))).toBeUndefined();
  });
});

describe("SipCarrier settings", () => {
  it("defaults to outbound on and ports 10000-20000", () => {
    expect(loadSipCarrierSettings({})).toEqual({ outbound: true, rtpPortMin: 10000, rtpPortMax: 20000 });
    expect(loadSipCarrierSettings({ SIP_OUTBOUND: "false", RTP_PORT_MIN: "0" })).toEqual({
      outbound: false,
      rtpPortMin: 0,
      rtpPortMax: 0,
    });
  });

  it("names the setting that is wrong", () => {
    expect(() => loadSipCarrierSettings({ SIP_OUTBOUND: "maybe" })).toThrow(/SIP_OUTBOUND/);
    expect(() => loadSipCarrierSettings({ RTP_PORT_MIN: "70000" })).toThrow(/RTP_PORT_MIN/);
    expect(() => loadSipCarrierSettings({ RTP_PORT_MIN: "20000", RTP_PORT_MAX: "20000" })).toThrow(
      /RTP_PORT_MAX/,
    );
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
