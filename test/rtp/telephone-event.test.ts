/**
 * RFC 4733 telephone-events against literal payload bytes: a press encoded
 * as start (marker), updates and three ends; decoded once however many
 * packets carry it (retransmitted ends, duplicates, reordering, a lost
 * end); and SIP INFO dtmf-relay bodies.
 */
import { describe, expect, it } from "vitest";
import {
  dtmfEvent,
  encodeDtmfPress,
  parseDtmfRelay,
  parseTelephoneEvent,
  TelephoneEventDecoder,
} from "../../src/rtp/telephone-event.js";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const payload = (s: string) => Uint8Array.from(Buffer.from(s, "hex"));

describe("encodeDtmfPress", () => {
  it("encodes a 100 ms press of 5: marker first, durations growing, three ends", () => {
    const packets = encodeDtmfPress("5");
    expect(packets.map((p) => p.marker)).toEqual([true, false, false, false, false, false, false]);
    expect(packets.map((p) => hex(p.payload))).toEqual([
      "050a00a0", // event 5, volume 10, duration 160
      "050a0140",
      "050a01e0",
      "050a0280",
      "058a0320", // E bit, duration 800
      "058a0320",
      "058a0320",
    ]);
  });

  it("maps * # A–D and takes duration and volume", () => {
    expect(hex(encodeDtmfPress("#", { durationMs: 40, volume: 20 })[0]!.payload)).toBe("0b1400a0");
    expect(encodeDtmfPress("*", { durationMs: 40 })).toHaveLength(4);
    expect(encodeDtmfPress("d", { durationMs: 20 }).map((p) => hex(p.payload))).toEqual([
      "0f8a00a0",
      "0f8a00a0",
      "0f8a00a0",
    ]);
    expect(encodeDtmfPress("d", { durationMs: 20 })[0]!.marker).toBe(true);
    expect(() => encodeDtmfPress("x")).toThrow(/not a DTMF key/);
    expect(() => encodeDtmfPress("1", { durationMs: 10 })).toThrow(/press lasts/);
    expect(dtmfEvent("12")).toBeUndefined();
  });

  it("parses a payload", () => {
    expect(parseTelephoneEvent(payload("0b9f1234"))).toEqual({
      event: 11,
      end: true,
      volume: 31,
      duration: 0x1234,
    });
    expect(parseTelephoneEvent(payload("0b9f12"))).toBeUndefined();
  });
});

describe("TelephoneEventDecoder", () => {
  it("reports a press once, at its first end, with duration and volume", () => {
    const d = new TelephoneEventDecoder();
    const reports = encodeDtmfPress("7", { durationMs: 120, volume: 12 }).flatMap((p, i) =>
      d.push(1, 4000, p.payload, i * 20),
    );
    expect(reports).toEqual([
      { digit: "7", event: 7, volume: 12, durationMs: 120, timestamp: 4000, ended: true },
    ]);
    // A retransmitted end long after: still once.
    expect(d.push(1, 4000, payload("078c03c0"), 500)).toEqual([]);
  });

  it("tells two presses of the same key apart by timestamp", () => {
    const d = new TelephoneEventDecoder();
    const packets = encodeDtmfPress("1");
    const first = packets.flatMap((p) => d.push(1, 1000, p.payload));
    const second = packets.flatMap((p) => d.push(1, 3000, p.payload));
    expect([...first, ...second].map((p) => [p.digit, p.timestamp])).toEqual([
      ["1", 1000],
      ["1", 3000],
    ]);
  });

  it("survives duplicates and reordering", () => {
    const d = new TelephoneEventDecoder();
    const p = encodeDtmfPress("9").map((x) => x.payload);
    const order = [p[0]!, p[0]!, p[2]!, p[1]!, p[4]!, p[3]!, p[5]!, p[6]!];
    expect(order.flatMap((x) => d.push(1, 0, x)).map((x) => x.digit)).toEqual(["9"]);
  });

  it("reports a press whose ends were all lost: at the next press, or on expiry", () => {
    const d = new TelephoneEventDecoder();
    const updates = encodeDtmfPress("2").filter((p) => !parseTelephoneEvent(p.payload)!.end);
    expect(updates.flatMap((p) => d.push(1, 100, p.payload))).toEqual([]);
    const next = d.push(1, 2000, encodeDtmfPress("3")[0]!.payload);
    expect(next).toEqual([
      { digit: "2", event: 2, volume: 10, durationMs: 80, timestamp: 100, ended: false },
    ]);
    expect(d.expire(100)).toEqual([]);
    expect(d.expire(300).map((x) => [x.digit, x.ended])).toEqual([["3", false]]);
    expect(d.flush()).toEqual([]);
  });

  it("ignores events that are not DTMF and short payloads", () => {
    const d = new TelephoneEventDecoder();
    expect(d.push(1, 0, payload("208a0320"))).toEqual([]); // event 32 (a tone signal)
    expect(d.push(1, 0, payload("05"))).toEqual([]);
    expect(d.flush()).toEqual([]);
  });
});

describe("parseDtmfRelay", () => {
  it.each([
    ["Signal=5\r\nDuration=160\r\n", { digit: "5", durationMs: 160 }],
    ["Signal=5\nDuration=160", { digit: "5", durationMs: 160 }],
    ["signal = # \r\nduration= 250\r\n", { digit: "#", durationMs: 250 }],
    ["Signal=10\r\n", { digit: "*" }],
    ["Signal=11\r\nDuration=100", { digit: "#", durationMs: 100 }],
    ["Signal=a\r\n", { digit: "A" }],
    ["Foo=bar\r\nSignal=0\r\n", { digit: "0" }],
  ])("reads %j", (body, expected) => {
    expect(parseDtmfRelay(body)).toEqual(expected);
  });

  it.each([
    ["", /no Signal/],
    ["Duration=160", /no Signal/],
    ["Signal=x", /not a DTMF key/],
    ["Signal=12", /not a DTMF key/],
    ["Signal=5\r\nDuration=-1", /Duration/],
    ["Signal=5\r\nDuration=abc", /Duration/],
  ])("refuses %j", (body, reason) => {
    const result = parseDtmfRelay(body);
    expect("error" in result && result.error).toMatch(reason);
  });
});
