/**
 * RTCP against literal bytes: SR, RR, SDES and BYE written and read bit for
 * bit, compound packets, the validity checks of RFC 3550 A.2; and the
 * session statistics: loss and fraction lost per interval (A.3), sequence
 * wrap and restart (A.1), interarrival jitter (A.8), RTT from LSR/DLSR.
 */
import { describe, expect, it } from "vitest";
import {
  buildRtcp,
  ntpFromMs,
  ntpMiddle,
  parseRtcp,
  type RtcpPacket,
  RtcpParseError,
  SDES_CNAME,
} from "../../src/rtp/rtcp.js";
import { RtpStats } from "../../src/rtp/stats.js";

const hex = (s: string) => Uint8Array.from(Buffer.from(s.replace(/\s+/g, ""), "hex"));
const toHex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("RTCP packets", () => {
  it("writes an SR with one block and an SDES CNAME, bit for bit", () => {
    const bytes = buildRtcp([
      {
        type: "sr",
        ssrc: 0x11111111,
        ntp: { seconds: 0xe0000000, fraction: 0x80000000 },
        rtpTimestamp: 16000,
        packetCount: 100,
        octetCount: 16000,
        reports: [
          {
            ssrc: 0x22222222,
            fractionLost: 25,
            cumulativeLost: -1,
            highestSequence: 70000,
            jitter: 40,
            lsr: 0x12345678,
            dlsr: 65536,
          },
        ],
      },
      { type: "sdes", chunks: [{ ssrc: 0x11111111, items: [{ type: SDES_CNAME, text: "ab" }] }] },
    ]);
    expect(toHex(bytes)).toBe(
      [
        "81c8000c", // V=2 RC=1 PT=200 length 12 words
        "11111111 e0000000 80000000 00003e80 00000064 00003e80",
        "22222222 19ffffff 00011170 00000028 12345678 00010000",
        "81ca0003", // V=2 SC=1 PT=202 length 3
        "11111111 01026162 00000000", // CNAME "ab", null item, padding
      ]
        .join("")
        .replace(/\s+/g, ""),
    );
    const parsed = parseRtcp(bytes) as RtcpPacket[];
    expect(parsed).toHaveLength(2);
    expect(parsed[0]).toMatchObject({
      type: "sr",
      packetCount: 100,
      reports: [{ cumulativeLost: -1, fractionLost: 25 }],
    });
    expect(parsed[1]).toEqual({
      type: "sdes",
      chunks: [{ ssrc: 0x11111111, items: [{ type: 1, text: "ab" }] }],
    });
  });

  it("reads an RR, an SDES with two items and a BYE with a reason", () => {
    const parsed = parseRtcp(
      hex(
        "80c90001 0000000a" + // RR, no blocks
          "81ca0004 0000000a 01037878 78020179 00000000" + // CNAME "xxx", NAME "y", null, pad
          "81cb0003 0000000a 04627965 21000000", // BYE of 10, reason "bye!"
      ),
    );
    expect(parsed).toEqual([
      { type: "rr", ssrc: 10, reports: [] },
      {
        type: "sdes",
        chunks: [
          {
            ssrc: 10,
            items: [
              { type: 1, text: "xxx" },
              { type: 2, text: "y" },
            ],
          },
        ],
      },
      { type: "bye", ssrcs: [10], reason: "bye!" },
    ]);
    const again = buildRtcp(parsed as RtcpPacket[]);
    expect(parseRtcp(again)).toEqual(parsed);
  });

  it.each([
    ["empty", "", /empty/],
    ["a cut header", "80c9", /header/],
    ["version 1", "40c90001 0000000a", /version 1/],
    ["a length past the end", "80c90005 0000000a", /past the end/],
    ["a block count past the length", "81c90001 0000000a", /report blocks/],
    ["a compound not starting with SR/RR", "80cb0001 0000000a", /starts with type 203/],
    ["padding before the last packet", "a0c90002 0000000a 00000004 80c90001 0000000a", /padding before/],
    [
      "an SDES chunk without its end",
      "80c90001 0000000a 81ca0002 0000000a 01027878",
      /no end|past its length/,
    ],
  ])("refuses %s", (_name, bytes, reason) => {
    const result = parseRtcp(hex(bytes));
    expect(result).toBeInstanceOf(RtcpParseError);
    expect((result as RtcpParseError).reason).toMatch(reason);
  });

  it("never throws on random bytes", () => {
    let seed = 3;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    for (let i = 0; i < 5000; i++) {
      const data = Uint8Array.from({ length: rand() % 64 }, () => rand() & 0xff);
      if (data.length > 1) {
        data[0] = 0x80 | (data[0]! & 0x3f);
        data[1] = 200 + (rand() % 4);
      }
      expect(() => parseRtcp(data)).not.toThrow();
    }
  });

  it("converts times to NTP and its middle 32 bits", () => {
    const t = ntpFromMs(Date.UTC(2026, 0, 1) + 500);
    expect(t.seconds).toBe((Date.UTC(2026, 0, 1) / 1000 + 2_208_988_800) >>> 0);
    expect(t.fraction).toBe(0x80000000);
    expect(ntpMiddle(t)).toBe((((t.seconds & 0xffff) << 16) | 0x8000) >>> 0);
  });
});

describe("RtpStats", () => {
  it("counts loss, and the fraction lost per report interval", () => {
    const stats = new RtpStats(1);
    for (let s = 0; s < 100; s++) if (s % 20 !== 7) stats.receivedPacket(9, s, s * 160, 160, s * 20);
    const first = stats.reportBlock(2000)!;
    expect(first).toMatchObject({ ssrc: 9, cumulativeLost: 5, highestSequence: 99, fractionLost: 12 });
    for (let s = 100; s < 200; s++) stats.receivedPacket(9, s, s * 160, 160, s * 20);
    const second = stats.reportBlock(4000)!;
    expect(second).toMatchObject({ cumulativeLost: 5, highestSequence: 199, fractionLost: 0 });
    const snap = stats.snapshot();
    expect(snap).toMatchObject({
      remoteSsrc: 9,
      received: { packets: 195, octets: 195 * 160 },
      cumulativeLost: 5,
    });
  });

  it("extends the sequence across the wrap and follows a confirmed restart", () => {
    const stats = new RtpStats(1);
    for (let i = 0; i < 100; i++) stats.receivedPacket(9, (65500 + i) & 0xffff, i * 160, 160, i * 20);
    expect(stats.reportBlock(0)).toMatchObject({ highestSequence: 65536 + 63, cumulativeLost: 0 });
    stats.receivedPacket(9, 20000, 0, 160, 3000); // a jump: not counted yet
    stats.receivedPacket(9, 20001, 160, 160, 3020); // confirmed: a restart
    stats.receivedPacket(9, 20002, 320, 160, 3040);
    expect(stats.reportBlock(3040)).toMatchObject({ highestSequence: 20002, cumulativeLost: 0 });
  });

  it("computes interarrival jitter as RFC 3550 A.8 does", () => {
    const stats = new RtpStats(1);
    let expectJ = 0;
    let prevTransit: number | undefined;
    for (let i = 0; i < 400; i++) {
      const arrival = i * 20 + (i % 2 === 1 ? 4 : 0) + (i % 7 === 0 ? 3 : 0);
      stats.receivedPacket(9, i, i * 160, 160, arrival);
      const transit = arrival * 8 - i * 160;
      if (prevTransit !== undefined) expectJ += (Math.abs(transit - prevTransit) - expectJ) / 16;
      prevTransit = transit;
    }
    expect(stats.snapshot().jitterMs).toBeCloseTo(expectJ / 8, 9);
    expect(stats.snapshot().jitterMs).toBeGreaterThan(3);
    expect(stats.reportBlock(8000)!.jitter).toBe(Math.floor(expectJ));
  });

  it("takes the RTT from LSR and DLSR of a report about our SSRC", () => {
    const ours = new RtpStats(0xaaaa);
    const sr = ours.senderReport(1_000_000, 0, []);
    // The remote got it at 1,000,050 and answered 100 ms later; it arrives at 1,000,350.
    const lsr = ntpMiddle(sr.ntp);
    ours.remoteReceiverReport(
      [
        { ssrc: 0xbbbb, fractionLost: 0, cumulativeLost: 0, highestSequence: 0, jitter: 0, lsr: 1, dlsr: 1 },
        {
          ssrc: 0xaaaa,
          fractionLost: 64,
          cumulativeLost: 3,
          highestSequence: 9,
          jitter: 80,
          lsr,
          dlsr: 6554,
        },
      ],
      1_000_350,
    );
    const snap = ours.snapshot();
    expect(snap.rttMs).toBeGreaterThan(249.9);
    expect(snap.rttMs).toBeLessThan(250.1);
    expect(snap.remote).toEqual({ fractionLost: 0.25, cumulativeLost: 3, jitterMs: 10 });
    expect(snap.rtcp).toEqual({ sent: 1, received: 1 });
  });

  it("echoes the remote's last SR in LSR with the delay since in DLSR", () => {
    const stats = new RtpStats(1);
    stats.receivedPacket(9, 0, 0, 160, 0);
    const ntp = ntpFromMs(5_000_000);
    stats.remoteSenderReport(
      { type: "sr", ssrc: 9, ntp, rtpTimestamp: 0, packetCount: 1, octetCount: 160, reports: [] },
      5_000_010,
    );
    const block = stats.reportBlock(5_000_510)!;
    expect(block.lsr).toBe(ntpMiddle(ntp));
    expect(block.dlsr).toBe(32768); // 0.5 s
  });
});
