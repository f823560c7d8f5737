/**
 * The resampler (src/media/resample.ts): a tone below the new Nyquist
 * frequency keeps its level and frequency; one above it is filtered out, not
 * folded back as an alias (which picking samples would do); lengths follow
 * the rates; upsampling adds no images.
 */
import { describe, expect, it } from "vitest";
import { mixToMono, resample, resampleInt16, toInt16 } from "../../src/media/resample.js";
import { bandEnergy, rms, sine } from "./signal-measures.js";

/** The middle of `s` (away from the edges, where the filter sees zeros). */
function middle(s: Int16Array): Int16Array {
  return s.subarray(Math.floor(s.length * 0.1), Math.floor(s.length * 0.9));
}

describe("resample", () => {
  it("keeps a 1 kHz tone's level and frequency from 22 050 Hz to 8000 Hz", () => {
    const input = sine(1000, 22050, 1);
    const out = resampleInt16(input, 22050, 8000);
    expect(out.length).toBe(8000);
    expect(rms(middle(out)) / rms(middle(input))).toBeCloseTo(1, 1);
    const near = bandEnergy(middle(out), 8000, 900, 1100);
    expect(near / bandEnergy(middle(out), 8000, 0, 4000)).toBeGreaterThan(0.99);
  });

  it("removes a 5 kHz tone going to 8000 Hz instead of folding it to 3 kHz", () => {
    const input = sine(5000, 22050, 1);
    const out = resampleInt16(input, 22050, 8000);
    expect(rms(middle(out))).toBeLessThan(rms(middle(input)) * 0.01);
    // What sample picking gives, for contrast: a loud 3 kHz alias.
    const picked = Int16Array.from({ length: 8000 }, (_, i) => input[Math.floor((i * 22050) / 8000)]!);
    expect(rms(middle(picked))).toBeGreaterThan(rms(middle(input)) * 0.5);
  });

  it.each([
    [44100, 8000],
    [48000, 8000],
    [16000, 8000],
    [11025, 8000],
    [8000, 44100],
  ])("%i Hz to %i Hz: length and a 440 Hz tone's level", (from, to) => {
    const input = sine(440, from, 0.5);
    const out = resampleInt16(input, from, to);
    expect(out.length).toBe(Math.round(input.length * (to / from)));
    expect(rms(middle(out)) / rms(middle(input))).toBeCloseTo(1, 1);
  });

  it("upsampling adds nothing above the old Nyquist frequency", () => {
    const out = resampleInt16(sine(1000, 8000, 0.5), 8000, 32000);
    const above = bandEnergy(middle(out), 32000, 4500, 16000);
    expect(above / bandEnergy(middle(out), 32000, 0, 16000)).toBeLessThan(1e-4);
  });

  it("equal rates copy; mono mixing averages; floats clip to int16", () => {
    const s = new Int16Array([1, 2, 3]);
    const copy = resampleInt16(s, 8000, 8000);
    expect([...copy]).toEqual([1, 2, 3]);
    expect(copy).not.toBe(s);
    expect([...resample(new Float32Array([0.5]), 8000, 8000)]).toEqual([0.5]);
    expect([...mixToMono([new Float32Array([1, 0]), new Float32Array([0, -1])])]).toEqual([0.5, -0.5]);
    expect([...toInt16(new Float32Array([2, -2, 0.5]))]).toEqual([32767, -32768, 16384]);
  });
});
