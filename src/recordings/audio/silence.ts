/**
 * Silence detection on 20 ms frames: a frame is silent when the RMS of its
 * samples (every channel together) is below a threshold, by default -50 dBFS
 * (about 103 of 32767). A recording whose every frame is silent is EMPTY;
 * TRIM_SILENCE removes the silent frames at the start and at the end.
 */

export const FRAME_MS = 20;
/** RMS below which a frame counts as silence: -50 dBFS. */
export const DEFAULT_SILENCE_RMS = 32767 * 10 ** (-50 / 20);

function frameLength(sampleRate: number): number {
  return Math.max(1, Math.round((sampleRate * FRAME_MS) / 1000));
}

/** For each 20 ms frame (the last may be shorter), whether it is silent. */
export function silentFrames(
  channels: readonly Int16Array[],
  sampleRate: number,
  threshold = DEFAULT_SILENCE_RMS,
): boolean[] {
  const length = channels[0]?.length ?? 0;
  const size = frameLength(sampleRate);
  const out: boolean[] = [];
  for (let start = 0; start < length; start += size) {
    const end = Math.min(length, start + size);
    let sum = 0;
    for (const c of channels) {
      for (let i = start; i < end; i++) sum += c[i]! * c[i]!;
    }
    const rms = Math.sqrt(sum / ((end - start) * channels.length));
    out.push(rms < threshold);
  }
  return out;
}

/** True when every frame is silent (and when there are no samples at all). */
export function isSilent(channels: readonly Int16Array[], sampleRate: number, threshold?: number): boolean {
  return silentFrames(channels, sampleRate, threshold).every((s) => s);
}

/** The samples [start, end) that TRIM_SILENCE keeps ([0, 0) when all is silent). */
export function trimBounds(
  channels: readonly Int16Array[],
  sampleRate: number,
  threshold?: number,
): { start: number; end: number } {
  const frames = silentFrames(channels, sampleRate, threshold);
  const first = frames.indexOf(false);
  if (first === -1) return { start: 0, end: 0 };
  const last = frames.lastIndexOf(false);
  const size = frameLength(sampleRate);
  const length = channels[0]!.length;
  return { start: first * size, end: Math.min(length, (last + 1) * size) };
}

/**
 * The channels without their leading and trailing silent frames (the
 * channels unchanged when nothing is silent; empty ones when all is).
 */
export function trimSilence(
  channels: readonly Int16Array[],
  sampleRate: number,
  threshold?: number,
): Int16Array[] {
  const { start, end } = trimBounds(channels, sampleRate, threshold);
  if (end === 0) return channels.map(() => new Int16Array(0));
  return channels.map((c) => c.subarray(start, end));
}
