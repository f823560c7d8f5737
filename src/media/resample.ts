/**
 * Sample-rate conversion for audio the service plays: a windowed-sinc
 * (Kaiser, beta 8) band-limited resampler. Each output sample is the input
 * interpolated at its instant through a low-pass filter whose cut-off is
 * CUTOFF of the lower Nyquist frequency, so downsampling (22 050 Hz speech,
 * 44 100 Hz music to 8000 Hz) leaves no aliases of what lies above 4 kHz, and
 * upsampling leaves no images. The filter spans HALF_TAPS zero crossings of
 * its sinc each side (scaled with the cut-off). Input outside the signal is
 * zero; the output has round(length * to / from) samples and no delay.
 *
 * `resampleYielding` does the same a slice at a time, for long audio.
 * `mixToMono` averages channels; `toInt16` clips floats in [-1, 1] to PCM.
 */

/** Fraction of the lower Nyquist frequency the low-pass passes. */
export const CUTOFF = 0.92;
/** Zero crossings of the sinc kept on each side. */
export const HALF_TAPS = 16;
const KAISER_BETA = 8;

/** The zeroth-order modified Bessel function of the first kind (series). */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const q = (x * x) / 4;
  for (let k = 1; k < 50; k++) {
    term *= q / (k * k);
    sum += term;
    if (term < sum * 1e-12) break;
  }
  return sum;
}

const I0_BETA = besselI0(KAISER_BETA);

/** The Kaiser window at `r` in [-1, 1] (0 outside). */
function kaiser(r: number): number {
  if (r <= -1 || r >= 1) return 0;
  return besselI0(KAISER_BETA * Math.sqrt(1 - r * r)) / I0_BETA;
}

/** Samples of a signal, integers (PCM 16-bit) or floats in [-1, 1]. */
type Samples = Int16Array | Float32Array;

/**
 * `input` at `fromRate` Hz resampled to `toRate` Hz, in the input's scale
 * (Float32Array out). Equal rates copy.
 */
export function resample(input: Samples, fromRate: number, toRate: number): Float32Array {
  const r = resampler(input, fromRate, toRate);
  const out = new Float32Array(r.length);
  r.fill(out, 0, r.length);
  return out;
}

/** Output samples computed between two yields to the event loop (`resampleYielding`). */
const SLICE = 80_000;

/**
 * `resample` for long audio (minutes of music): the same result, computed a
 * slice at a time with the event loop turning between slices.
 */
export async function resampleYielding(
  input: Samples,
  fromRate: number,
  toRate: number,
): Promise<Float32Array> {
  const r = resampler(input, fromRate, toRate);
  const out = new Float32Array(r.length);
  for (let at = 0; at < r.length; at += SLICE) {
    r.fill(out, at, Math.min(r.length, at + SLICE));
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return out;
}

/** The resampling of `input`: its output length, and a function filling output samples [start, end). */
function resampler(
  input: Samples,
  fromRate: number,
  toRate: number,
): { length: number; fill(out: Float32Array, start: number, end: number): void } {
  if (!(fromRate > 0) || !(toRate > 0)) throw new RangeError(`bad sample rates ${fromRate} -> ${toRate}`);
  const length = Math.round((input.length * toRate) / fromRate);
  if (fromRate === toRate) {
    return { length, fill: (out, start, end) => out.set(input.subarray(start, end), start) };
  }
  // Cut-off as a fraction of the input's sample rate (cycles per input sample).
  const fc = (CUTOFF * Math.min(fromRate, toRate)) / (2 * fromRate);
  // Half-width of the filter in input samples.
  const width = HALF_TAPS / (2 * fc);
  // The filter is tabulated finely and interpolated linearly: resampling a
  // call's audio evaluates it millions of times.
  const STEPS = 512;
  const tableLength = Math.ceil(width * STEPS) + 2;
  const table = new Float32Array(tableLength);
  for (let i = 0; i < tableLength; i++) {
    const d = i / STEPS;
    const x = 2 * fc * d;
    const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
    table[i] = 2 * fc * sinc * kaiser(d / width);
  }
  const step = fromRate / toRate;
  const fill = (out: Float32Array, start: number, end: number) => {
    for (let n = start; n < end; n++) {
      const t = n * step;
      const first = Math.max(0, Math.ceil(t - width));
      const last = Math.min(input.length - 1, Math.floor(t + width));
      let acc = 0;
      for (let k = first; k <= last; k++) {
        const pos = Math.abs(t - k) * STEPS;
        const i = Math.floor(pos);
        if (i + 1 >= tableLength) continue;
        const frac = pos - i;
        acc += input[k]! * (table[i]! + (table[i + 1]! - table[i]!) * frac);
      }
      out[n] = acc;
    }
  };
  return { length, fill };
}

/** The average of the channels (equal lengths; the first's length is used). */
export function mixToMono(channels: readonly Float32Array[]): Float32Array {
  if (channels.length === 1) return channels[0]!;
  const out = new Float32Array(channels[0]?.length ?? 0);
  for (const ch of channels) for (let i = 0; i < out.length; i++) out[i]! += ch[i] ?? 0;
  for (let i = 0; i < out.length; i++) out[i]! /= channels.length;
  return out;
}

/** Floats in [-1, 1] as PCM 16-bit, clipped. */
export function toInt16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const v = Math.round(samples[i]! * 32768);
    out[i] = Math.max(-32768, Math.min(32767, v));
  }
  return out;
}

/** PCM 16-bit at `fromRate` as PCM 16-bit at `toRate`. */
export function resampleInt16(input: Int16Array, fromRate: number, toRate: number): Int16Array {
  if (fromRate === toRate) return input.slice();
  const f = resample(input, fromRate, toRate);
  const out = new Int16Array(f.length);
  for (let i = 0; i < f.length; i++) {
    const v = Math.round(f[i]!);
    out[i] = Math.max(-32768, Math.min(32767, v));
  }
  return out;
}
