/**
 * Measures of audio for tests, written here independently of src/: RMS,
 * energy in a frequency band (a direct DFT over 1024-sample windows), the
 * dominant pitch (autocorrelation over voiced windows) and a sine generator.
 */

export function rms(samples: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / Math.max(1, samples.length));
}

/** Energy between `lowHz` and `highHz` summed over windows of 256 samples, every 4th window. */
export function bandEnergy(samples: ArrayLike<number>, rate: number, lowHz: number, highHz: number): number {
  const N = 256;
  let total = 0;
  for (let start = 0; start + N <= samples.length; start += N * 4) {
    for (let k = 0; k <= N / 2; k++) {
      const f = (k * rate) / N;
      if (f < lowHz || f > highHz) continue;
      let re = 0;
      let im = 0;
      for (let n = 0; n < N; n++) {
        const w = 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / (N - 1));
        const v = samples[start + n]! * w;
        re += v * Math.cos((2 * Math.PI * k * n) / N);
        im -= v * Math.sin((2 * Math.PI * k * n) / N);
      }
      total += re * re + im * im;
    }
  }
  return total;
}

/** The median pitch (Hz, 60..400) of the loud 40 ms windows, by autocorrelation. */
export function pitchHz(samples: ArrayLike<number>, rate: number): number {
  const N = Math.round(rate * 0.04);
  const level = rms(samples);
  const found: number[] = [];
  for (let start = 0; start + N <= samples.length; start += N) {
    const win = Array.from({ length: N }, (_, i) => samples[start + i]!);
    if (rms(win) < level) continue;
    let best = 0;
    let bestLag = 0;
    for (let lag = Math.floor(rate / 400); lag <= Math.ceil(rate / 60); lag++) {
      let acc = 0;
      for (let i = 0; i + lag < N; i++) acc += win[i]! * win[i + lag]!;
      acc /= N - lag;
      if (acc > best) {
        best = acc;
        bestLag = lag;
      }
    }
    if (bestLag > 0) found.push(rate / bestLag);
  }
  found.sort((a, b) => a - b);
  return found[Math.floor(found.length / 2)] ?? 0;
}

/** A sine of `hz` at `rate`, `seconds` long, peak `level` (of int16 full scale). */
export function sine(hz: number, rate: number, seconds: number, level = 0.5): Int16Array {
  const out = new Int16Array(Math.round(rate * seconds));
  for (let i = 0; i < out.length; i++)
    out[i] = Math.round(level * 32767 * Math.sin((2 * Math.PI * hz * i) / rate));
  return out;
}
