/**
 * Synthetic audio for the carrier simulator: speech-like bursts (a few
 * harmonics of a wandering pitch plus a little noise, under a syllable-rate
 * amplitude envelope) separated by pauses of true silence. Deterministic:
 * the same seed gives the same samples.
 */

/** A small deterministic PRNG (mulberry32), values in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `ms` milliseconds of silence (zeros) at `sampleRate`. */
export function silence(ms: number, sampleRate: number): Int16Array {
  return new Int16Array(Math.round((ms * sampleRate) / 1000));
}

export interface SpeechOptions {
  seed: number;
  durationMs: number;
  sampleRate: number;
  /** Peak amplitude, 0..1 of full scale. Default 0.5. */
  level?: number;
}

/**
 * `durationMs` of speech-like audio: bursts of 300-1200 ms separated by
 * pauses of 100-400 ms of zeros (the signal never starts or ends mid-pause
 * longer than that).
 */
export function speechLike(options: SpeechOptions): Int16Array {
  const { sampleRate } = options;
  const random = seededRandom(options.seed);
  const level = (options.level ?? 0.5) * 32767;
  const out = new Int16Array(Math.round((options.durationMs * sampleRate) / 1000));
  let i = 0;
  while (i < out.length) {
    const burst = Math.round(((300 + random() * 900) * sampleRate) / 1000);
    const pitch = 100 + random() * 150;
    const syllableHz = 3 + random() * 3;
    const end = Math.min(out.length, i + burst);
    for (let j = i; j < end; j++) {
      const t = (j - i) / sampleRate;
      const f = pitch * (1 + 0.05 * Math.sin(2 * Math.PI * 0.7 * t));
      const voice =
        0.6 * Math.sin(2 * Math.PI * f * t) +
        0.25 * Math.sin(2 * Math.PI * 2 * f * t) +
        0.1 * Math.sin(2 * Math.PI * 3 * f * t) +
        0.05 * (random() * 2 - 1);
      // syllables: a raised-cosine envelope, never fully closed inside a burst
      const envelope = 0.55 - 0.45 * Math.cos(2 * Math.PI * syllableHz * t);
      // 10 ms fades at the burst's edges avoid clicks
      const edge = Math.min(1, (j - i) / (0.01 * sampleRate), (end - j) / (0.01 * sampleRate));
      out[j] = Math.round(level * envelope * edge * voice);
    }
    i = end + Math.round(((100 + random() * 300) * sampleRate) / 1000);
  }
  return out;
}
