/**
 * RTP packets against literal bytes (RFC 3550 §5.1): the fixed header, CSRC
 * list, extension and padding read and written bit for bit; every kind of
 * malformed datagram refused with a reason, never a throw.
 */
import { describe, expect, it } from "vitest";
import { parseRtp, type RtpPacket, RtpParseError, serializeRtp, writeRtp } from "../../src/rtp/packet.js";

const hex = (s: string) => Uint8Array.from(Buffer.from(s.replace(/\s+/g, ""), "hex"));

describe("parseRtp", () => {
  it("reads a plain PCMU packet", () => {
    const p = parseRtp(hex("80 00 1234 000003e8 deadbeef  ff ff 7f 00"));
    expect(p).not.toBeInstanceOf(RtpParseError);
    const packet = p as RtpPacket;
    expect(packet).toMatchObject({
      padding: 0,
      marker: false,
      payloadType: 0,
      sequence: 0x1234,
      timestamp: 1000,
      ssrc: 0xdeadbeef,
      csrc: [],
      extension: undefined,
    });
    expect([...packet.payload]).toEqual([0xff, 0xff, 0x7f, 0x00]);
  });

  it("reads marker, payload type 101, CSRCs, an extension and padding", () => {
    // V=2 P=1 X=1 CC=2; M=1 PT=101; seq 65535; ts 2^32-1; SSRC 1; CSRC 2, 3;
    // extension profile 0xBEDE, 1 word; payload 0a 80 00 a0; 3 bytes of padding.
    const data = hex("b2 e5 ffff ffffffff 00000001 00000002 00000003 bede 0001 11223344 0a8000a0 000003");
    const packet = parseRtp(data) as RtpPacket;
    expect(packet.marker).toBe(true);
    expect(packet.payloadType).toBe(101);
    expect(packet.sequence).toBe(65535);
    expect(packet.timestamp).toBe(0xffffffff);
    expect(packet.ssrc).toBe(1);
    expect(packet.csrc).toEqual([2, 3]);
    expect(packet.extension?.profile).toBe(0xbede);
    expect([...packet.extension!.data]).toEqual([0x11, 0x22, 0x33, 0x44]);
    expect(packet.padding).toBe(3);
    expect([...packet.payload]).toEqual([0x0a, 0x80, 0x00, 0xa0]);
    expect(Buffer.from(serializeRtp(packet)).equals(Buffer.from(data))).toBe(true);
  });

  it.each([
    ["empty", "", /shorter/],
    ["11 bytes", "80 00 0001 00000001 000000", /shorter/],
    ["version 1", "40 00 0001 00000001 00000001", /version 1/],
    ["version 0 (a STUN message)", "00 01 0000 2112a442 00000000", /version 0/],
    ["CSRCs past the end", "83 00 0001 00000001 00000001 00000002", /CSRCs/],
    ["extension header cut", "90 00 0001 00000001 00000001 bede", /extension header/],
    ["extension words past the end", "90 00 0001 00000001 00000001 bede 0002 00000000", /words/],
    ["padding of 0", "a0 00 0001 00000001 00000001 ff 00", /padding of 0/],
    ["padding past the payload", "a0 00 0001 00000001 00000001 ff 05", /exceeds/],
  ])("refuses %s", (_name, bytes, reason) => {
    const result = parseRtp(hex(bytes));
    expect(result).toBeInstanceOf(RtpParseError);
    expect((result as RtpParseError).reason).toMatch(reason);
  });

  it("never throws on random bytes", () => {
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    for (let i = 0; i < 5000; i++) {
      const data = Uint8Array.from({ length: rand() % 40 }, () => rand() & 0xff);
      if (data.length > 0) data[0] = 0x80 | (data[0]! & 0x3f);
      expect(() => parseRtp(data)).not.toThrow();
    }
  });

  it("reads a packet inside a larger buffer (a Node Buffer's pool slice)", () => {
    const pool = Buffer.alloc(64, 0xaa);
    hex("80 08 0002 00000140 00000009 d5 d5").forEach((b, i) => {
      pool[20 + i] = b;
    });
    const packet = parseRtp(pool.subarray(20, 34)) as RtpPacket;
    expect(packet.payloadType).toBe(8);
    expect(packet.sequence).toBe(2);
    expect(packet.timestamp).toBe(320);
    expect(packet.ssrc).toBe(9);
    expect([...packet.payload]).toEqual([0xd5, 0xd5]);
  });
});

describe("writeRtp", () => {
  it("writes the header bit for bit into a reused buffer", () => {
    const out = new Uint8Array(200);
    const payload = new Uint8Array(160).fill(0xff);
    const n = writeRtp(
      {
        padding: 0,
        marker: true,
        payloadType: 0,
        sequence: 7,
        timestamp: 160,
        ssrc: 0x01020304,
        csrc: [],
        payload,
      },
      out,
    );
    expect(n).toBe(172);
    expect(Buffer.from(out.subarray(0, 12)).toString("hex")).toBe("80800007000000a001020304");
    expect(out.subarray(12, 172).every((b) => b === 0xff)).toBe(true);
  });

  it("refuses fields out of range and a buffer too small", () => {
    const base: RtpPacket = {
      padding: 0,
      marker: false,
      payloadType: 0,
      sequence: 0,
      timestamp: 0,
      ssrc: 0,
      csrc: [],
      payload: new Uint8Array(4),
    };
    expect(() => serializeRtp({ ...base, payloadType: 128 })).toThrow(/payloadType/);
    expect(() => serializeRtp({ ...base, sequence: 65536 })).toThrow(/sequence/);
    expect(() => serializeRtp({ ...base, ssrc: -1 })).toThrow(/ssrc/);
    expect(() => serializeRtp({ ...base, csrc: Array(16).fill(1) })).toThrow(/CSRC/);
    expect(() => serializeRtp({ ...base, extension: { profile: 1, data: new Uint8Array(3) } })).toThrow(
      /multiple/,
    );
    expect(() => writeRtp(base, new Uint8Array(15))).toThrow(/buffer/);
  });
});
