/**
 * In-band DTMF: the generator's tones detected for every key, once per
 * press, through G.711 and under noise; and things that must not trigger —
 * noise, single tones, too short a blip, too much twist, too low a level,
 * and speech-like signals (glottal pulse trains through vowel formants,
 * with a gliding pitch).
 */
import { describe, expect, it } from "vitest";
import { DtmfDetector } from "../../src/rtp/dtmf-detector.js";
import { dtmfFrequencies, dtmfTone } from "../../src/rtp/dtmf-tone.js";
import { decodeG711, encodeG711 } from "../../src/telephony/g711.js";

const RATE = 8000;

/** A seeded uniform random in [0, 1). */
function random(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x80000000;
  };
}

function concat(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const silence = (ms: number) => new Int16Array((ms * RATE) / 1000);

/** Gaussian-ish white noise at `dbfs` RMS. */
function noise(ms: number, dbfs: number, seed = 1): Int16Array {
  const rand = random(seed);
  const rms = 32767 * 10 ** (dbfs / 20);
  return Int16Array.from({ length: (ms * RATE) / 1000 }, () => {
    const g = (rand() + rand() + rand() + rand() - 2) * Math.sqrt(3); // variance 1
    return Math.max(-32768, Math.min(32767, Math.round(g * rms)));
  });
}

function mix(a: Int16Array, b: Int16Array): Int16Array {
  return Int16Array.from(a, (v, i) => Math.max(-32768, Math.min(32767, v + (b[i] ?? 0))));
}

function tone(freq: number, ms: number, dbfs: number): Int16Array {
  const amp = 32767 * 10 ** (dbfs / 20);
  return Int16Array.from({ length: (ms * RATE) / 1000 }, (_, i) =>
    Math.round(amp * Math.sin((2 * Math.PI * freq * i) / RATE)),
  );
}

/**
 * A vowel: a pulse train at a pitch gliding from f0 to f1 through formant
 * resonators (two-pole filters at the formants, 80 Hz bandwidth), at about
 * −20 dBFS.
 */
function vowel(ms: number, formants: number[], f0: number, f1 = f0): Int16Array {
  const n = (ms * RATE) / 1000;
  const src = new Float64Array(n);
  let phase = 0;
  for (let i = 0; i < n; i++) {
    const f = f0 + ((f1 - f0) * i) / n;
    phase += f / RATE;
    if (phase >= 1) {
      phase -= 1;
      src[i] = 1;
    }
  }
  let signal = src;
  for (const fc of formants) {
    const r = Math.exp((-Math.PI * 80) / RATE);
    const a1 = 2 * r * Math.cos((2 * Math.PI * fc) / RATE);
    const a2 = -r * r;
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) out[i] = signal[i]! + a1 * (out[i - 1] ?? 0) + a2 * (out[i - 2] ?? 0);
    signal = out;
  }
  const peak = signal.reduce((m, v) => Math.max(m, Math.abs(v)), 0) || 1;
  return Int16Array.from(signal, (v) => Math.round((v / peak) * 32767 * 0.3));
}

/** Feeds `pcm` in 20 ms frames and returns the keys reported. */
function detect(pcm: Int16Array, detector = new DtmfDetector()): string[] {
  const keys: string[] = [];
  for (let i = 0; i < pcm.length; i += 160)
    keys.push(...detector.push(pcm.subarray(i, i + 160)).map((d) => d.digit));
  return keys;
}

const KEYS = "0123456789*#ABCD".split("");

describe("dtmfTone", () => {
  it("holds the key's two frequencies", () => {
    expect(dtmfFrequencies("5")).toEqual([770, 1336]);
    expect(dtmfFrequencies("#")).toEqual([941, 1477]);
    expect(dtmfFrequencies("d")).toEqual([941, 1633]);
    expect(dtmfFrequencies("x")).toBeUndefined();
    const pcm = dtmfTone("1", { durationMs: 100, pauseMs: 50 });
    expect(pcm.length).toBe(1200);
    expect(pcm.subarray(800).every((v) => v === 0)).toBe(true);
    const peak = pcm.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    expect(peak).toBeGreaterThan(32767 * 0.5); // two tones at −10 dBFS each
    expect(peak).toBeLessThanOrEqual(32767 * 0.64);
    expect(() => dtmfTone("x")).toThrow(/not a DTMF key/);
  });
});

describe("DtmfDetector", () => {
  it("detects every key once per press", () => {
    const pcm = concat(...KEYS.map((k) => dtmfTone(k, { durationMs: 80, pauseMs: 60 })));
    expect(detect(pcm)).toEqual(KEYS);
  });

  it("detects the same key pressed twice as two presses, and a long press as one", () => {
    const pcm = concat(
      dtmfTone("5", { durationMs: 1000, pauseMs: 50 }),
      dtmfTone("5", { durationMs: 60, pauseMs: 40 }),
    );
    expect(detect(pcm)).toEqual(["5", "5"]);
  });

  it("detects a 40 ms press at any alignment", () => {
    for (let offset = 0; offset < 102; offset += 17) {
      expect(detect(concat(silence(offset / 8), dtmfTone("9", { durationMs: 45, pauseMs: 40 })))).toEqual([
        "9",
      ]);
    }
  });

  it("reports where the press started", () => {
    const detector = new DtmfDetector();
    const reports = detector.push(concat(silence(100), dtmfTone("3", { durationMs: 100 })));
    expect(reports).toHaveLength(1);
    expect(reports[0]!.startSample).toBeGreaterThanOrEqual(800);
    expect(reports[0]!.startSample).toBeLessThanOrEqual(800 + 102);
  });

  it("detects through μ-law and A-law, with noise 20 dB below the tones, and at −25 dBFS", () => {
    for (const encoding of ["mulaw", "alaw"] as const) {
      const pcm = concat(...KEYS.map((k) => dtmfTone(k, { durationMs: 70, pauseMs: 60 })));
      expect(detect(decodeG711(encoding, encodeG711(encoding, pcm)))).toEqual(KEYS);
    }
    const tones = concat(...KEYS.map((k) => dtmfTone(k, { durationMs: 70, pauseMs: 60, levelDbfs: -13 })));
    expect(detect(mix(tones, noise(tones.length / 8, -30)))).toEqual(KEYS);
    expect(
      detect(concat(...KEYS.map((k) => dtmfTone(k, { durationMs: 70, pauseMs: 60, levelDbfs: -25 })))),
    ).toEqual(KEYS);
  });

  it("accepts twist within the limits and refuses beyond", () => {
    expect(detect(dtmfTone("6", { twistDb: -7 }))).toEqual(["6"]);
    expect(detect(dtmfTone("6", { twistDb: 3 }))).toEqual(["6"]);
    expect(detect(dtmfTone("6", { twistDb: -10 }))).toEqual([]);
    expect(detect(dtmfTone("6", { twistDb: 6 }))).toEqual([]);
  });

  it("ignores silence, quiet tones, blips, single tones and noise", () => {
    expect(detect(silence(1000))).toEqual([]);
    expect(detect(dtmfTone("1", { levelDbfs: -40 }))).toEqual([]);
    expect(detect(concat(dtmfTone("1", { durationMs: 20 }), silence(100)))).toEqual([]);
    for (const f of [697, 941, 1000, 1209, 1633, 2100]) expect(detect(tone(f, 500, -10))).toEqual([]);
    for (const dbfs of [-40, -20, -6]) expect(detect(noise(2000, dbfs, 5))).toEqual([]);
  });

  it("ignores speech-like signals: vowels at many pitches, steady and gliding", () => {
    const vowels: Record<string, number[]> = {
      a: [730, 1090, 2440],
      i: [270, 2290, 3010],
      u: [300, 870, 2240],
      e: [530, 1840, 2480],
      o: [570, 840, 2410],
      ae: [660, 1720, 2410],
      er: [490, 1350, 1690],
    };
    for (const formants of Object.values(vowels)) {
      for (const f0 of [85, 100, 110, 120, 135, 150, 170, 200, 220, 250]) {
        expect(detect(vowel(300, formants, f0))).toEqual([]);
        expect(detect(vowel(300, formants, f0, f0 * 1.3))).toEqual([]);
      }
    }
  });

  it("takes its minimum duration from options", () => {
    const pcm = concat(dtmfTone("2", { durationMs: 60 }), silence(100));
    expect(detect(pcm, new DtmfDetector({ minDurationMs: 100 }))).toEqual([]);
    expect(detect(dtmfTone("2", { durationMs: 150 }), new DtmfDetector({ minDurationMs: 100 }))).toEqual([
      "2",
    ]);
  });
});
