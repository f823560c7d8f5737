/**
 * G.711 against known values: the code points of silence and full scale,
 * decoded values of the reference tables (ITU-T G.711, as the public-domain
 * g711.c tabulates them), segment boundaries, and what companding costs.
 */
import { describe, expect, it } from "vitest";
import {
  alawToLinear,
  decodeG711,
  encodeG711,
  linearToAlaw,
  linearToMulaw,
  mulawToLinear,
} from "../../src/telephony/g711.js";

describe("G.711 μ-law", () => {
  it.each([
    [0, 0xff],
    [-1, 0x7f],
    [32767, 0x80],
    [-32768, 0x00],
    [100, 0xf2],
    [-100, 0x72],
    [1000, 0xce],
    [8000, 0xa0],
  ])("encodes %i as 0x%s", (linear, code) => {
    expect(linearToMulaw(linear)).toBe(code);
  });

  it.each([
    [0xff, 0],
    [0x7f, 0],
    [0x80, 32124],
    [0x00, -32124],
    // The first value of each segment: 0, 132, 396, 924, 1980, 4092, 8316, 16764.
    [0xf0, 120],
    [0xef, 132],
    [0xdf, 396],
    [0xcf, 924],
    [0xbf, 1980],
    [0xaf, 4092],
    [0x9f, 8316],
    [0x8f, 16764],
  ])("decodes 0x%s as %i", (code, linear) => {
    expect(mulawToLinear(code)).toBe(linear);
  });

  it("round-trips every code point and keeps the error within half a step (1/16 of the value)", () => {
    for (let b = 0; b < 256; b++) {
      if (b === 0x7f) continue; // negative zero encodes back as 0xff
      expect(linearToMulaw(mulawToLinear(b))).toBe(b);
    }
    for (let x = -32000; x <= 32000; x += 7) {
      expect(Math.abs(mulawToLinear(linearToMulaw(x)) - x)).toBeLessThanOrEqual(Math.abs(x) / 16 + 8);
    }
  });
});

describe("G.711 A-law", () => {
  it.each([
    [0, 0xd5],
    [-1, 0x55],
    [32767, 0xaa],
    [-32768, 0x2a],
    [100, 0xd3],
    [1000, 0xfa],
    [-1000, 0x7a],
  ])("encodes %i as 0x%s", (linear, code) => {
    expect(linearToAlaw(linear)).toBe(code);
  });

  it.each([
    [0xd5, 8],
    [0x55, -8],
    [0xaa, 32256],
    [0x2a, -32256],
    // The first value of each segment: 8, 264, 528, 1056, 2112, 4224, 8448, 16896.
    [0xd4, 24],
    [0xc5, 264],
    [0xf5, 528],
    [0xe5, 1056],
    [0x95, 2112],
    [0x85, 4224],
    [0xb5, 8448],
    [0xa5, 16896],
    [0xfa, 1008],
  ])("decodes 0x%s as %i", (code, linear) => {
    expect(alawToLinear(code)).toBe(linear);
  });

  it("round-trips every code point and keeps the error within half a step (1/16 of the value)", () => {
    for (let b = 0; b < 256; b++) expect(linearToAlaw(alawToLinear(b))).toBe(b);
    for (let x = -32000; x <= 32000; x += 7) {
      expect(Math.abs(alawToLinear(linearToAlaw(x)) - x)).toBeLessThanOrEqual(Math.abs(x) / 16 + 8);
    }
  });
});

describe("buffers", () => {
  it("encode and decode whole buffers either way", () => {
    const pcm = Int16Array.from([0, 1000, -1000, 32767, -32768]);
    expect([...encodeG711("mulaw", pcm)]).toEqual([0xff, 0xce, 0x4e, 0x80, 0x00]);
    expect([...decodeG711("alaw", encodeG711("alaw", pcm))]).toEqual([8, 1008, -1008, 32256, -32256]);
  });
});
