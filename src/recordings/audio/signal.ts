/**
 * Synthetic audio for the carrier simulator: speech-like bursts (a few
 * harmonics of a wandering pitch plus a little noise, under a syllable-rate
 * amplitude envelope) separated by pauses of true silence, and pure tones.
 * Deterministic: the same seed gives the same samples.
 *
 * Both generators are seekable: `speechLikeWindow` / `tone` render any
 * window of an unbounded signal without rendering what comes before it, so
 * the simulator can render a minute of a day-long call in a minute's memory
 * and time (skipping costs a few operations per 0.3-1.2 s burst).
 */

const MULBERRY_STEP = 0x6d2b79f5;

/** mulberry32 with an O(1) skip: its state only ever advances by a constant. */
class Mulberry32 {
  private a: number;

  constructor(seed: number) {
    this.a = seed >>> 0;
  }

  next(): number {
    this.a = (this.a + MULBERRY_STEP) >>> 0;
    let t = this.a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Advances as `n` calls of next() would (n < 2^31). */
  skip(n: number): void {
    this.a = (this.a + Math.imul(n, MULBERRY_STEP)) >>> 0;
  }
}

/** A small deterministic PRNG (mulberry32), values in [0, 1). */
export function seededRandom(seed: number): () => number {
  const prng = new Mulberry32(seed);
  return () => prng.next();
}

/** A 32-bit FNV-1a hash of `text`: a seed derived from a name (a call id, say). */
export function seedFrom(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
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
 * longer than that). Equal to `speechLikeWindow` of the same seed with
 * `totalLength` the same length.
 */
export function speechLike(options: SpeechOptions): Int16Array {
  const out = new Int16Array(Math.round((options.durationMs * options.sampleRate) / 1000));
  const { seed, sampleRate, level } = options;
  speechLikeWindow({ seed, sampleRate, level, totalLength: out.length }, 0, out.length, out);
  return out;
}

export interface SignalOptions {
  seed: number;
  sampleRate: number;
  /** Peak amplitude, 0..1 of full scale. Default 0.5. */
  level?: number | undefined;
  /**
   * The signal's length in samples, when bounded: the burst it cuts short
   * fades out at its end (speechLike's last burst). Default unbounded.
   */
  totalLength?: number | undefined;
}

/**
 * Samples [start, start + length) of the unbounded speech-like signal of
 * `seed` (see speechLike; bounded by `totalLength` when given), written into `out` (a new Int16Array when not
 * given; otherwise its first `length` items are overwritten).
 */
export function speechLikeWindow(
  options: SignalOptions,
  start: number,
  length: number,
  out: Int16Array = new Int16Array(length),
): Int16Array {
  const { sampleRate } = options;
  const random = new Mulberry32(options.seed);
  const level = (options.level ?? 0.5) * 32767;
  const stop = start + length;
  const total = options.totalLength ?? Number.POSITIVE_INFINITY;
  let i = 0;
  while (i < stop) {
    const burst = Math.round(((300 + random.next() * 900) * sampleRate) / 1000);
    const pitch = 100 + random.next() * 150;
    const syllableHz = 3 + random.next() * 3;
    const end = Math.min(total, i + burst);
    if (end <= start) {
      // Entirely before the window: skip its noise draws.
      random.skip(end - i);
    } else {
      const from = Math.max(i, start);
      random.skip(from - i);
      const to = Math.min(end, stop);
      for (let j = from; j < to; j++) {
        const t = (j - i) / sampleRate;
        const f = pitch * (1 + 0.05 * Math.sin(2 * Math.PI * 0.7 * t));
        const voice =
          0.6 * Math.sin(2 * Math.PI * f * t) +
          0.25 * Math.sin(2 * Math.PI * 2 * f * t) +
          0.1 * Math.sin(2 * Math.PI * 3 * f * t) +
          0.05 * (random.next() * 2 - 1);
        // syllables: a raised-cosine envelope, never fully closed inside a burst
        const envelope = 0.55 - 0.45 * Math.cos(2 * Math.PI * syllableHz * t);
        // 10 ms fades at the burst's edges avoid clicks
        const edge = Math.min(1, (j - i) / (0.01 * sampleRate), (end - j) / (0.01 * sampleRate));
        out[j - start] = Math.round(level * envelope * edge * voice);
      }
      if (to === stop) break;
      random.skip(end - to);
    }
    const pause = Math.round(((100 + random.next() * 300) * sampleRate) / 1000);
    // The pause's zeros inside the window.
    out.fill(0, Math.max(0, end - start), Math.max(0, Math.min(stop, end + pause) - start));
    i = end + pause;
  }
  return out;
}

export interface ToneOptions {
  /** Hertz. */
  frequency: number;
  sampleRate: number;
  /** Peak amplitude, 0..1 of full scale. */
  level: number;
}

/** Samples [start, start + length) of a sine tone starting at phase 0 at sample 0. */
export function tone(options: ToneOptions, start: number, length: number): Int16Array {
  const out = new Int16Array(length);
  const amplitude = options.level * 32767;
  const step = (2 * Math.PI * options.frequency) / options.sampleRate;
  for (let j = 0; j < length; j++) out[j] = Math.round(amplitude * Math.sin(step * (start + j)));
  return out;
}
