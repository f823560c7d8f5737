/**
 * Audio measures for the media interop tests: the energy of 20 ms frames,
 * which frames are sound (RMS over a threshold), and the stretch from the
 * first to the last of them. Real software in between (baresip's jitter
 * buffer, SIPp's pacing) shifts and may pad the audio, so the tests compare
 * lengths and levels, not samples.
 */

/** 20 ms at 8 kHz. */
export const FRAME = 160;

/**
 * The level (RMS of 16-bit samples) over which a frame counts as sound:
 * eSpeak's speech is in the thousands, G.711 idle noise and silence under 50.
 */
export const SOUND_RMS = 300;

/** RMS of each 20 ms frame. */
export function frameRms(samples: Int16Array): number[] {
  const out: number[] = [];
  for (let at = 0; at + FRAME <= samples.length; at += FRAME) {
    let sum = 0;
    for (let i = at; i < at + FRAME; i++) sum += samples[i]! * samples[i]!;
    out.push(Math.sqrt(sum / FRAME));
  }
  return out;
}

export interface Sound {
  /** Frames from the first sound frame to the last, inclusive (0 when silent). */
  spanFrames: number;
  /** Frames over the threshold in that stretch. */
  soundFrames: number;
  /** RMS over the stretch. */
  rms: number;
  /** Index of the first sound frame (-1 when silent). */
  firstFrame: number;
}

export function sound(samples: Int16Array, threshold = SOUND_RMS): Sound {
  const frames = frameRms(samples);
  const first = frames.findIndex((r) => r > threshold);
  if (first < 0) return { spanFrames: 0, soundFrames: 0, rms: 0, firstFrame: -1 };
  let last = frames.length - 1;
  while (frames[last]! <= threshold) last--;
  const span = frames.slice(first, last + 1);
  const rms = Math.sqrt(span.reduce((s, r) => s + r * r, 0) / span.length);
  return {
    spanFrames: span.length,
    soundFrames: span.filter((r) => r > threshold).length,
    rms,
    firstFrame: first,
  };
}

/** A sine tone of `hz` at `amplitude`, `seconds` long. */
export function tone(hz: number, seconds: number, amplitude = 10_000): Int16Array {
  return Int16Array.from({ length: Math.round(seconds * 8000) }, (_, i) =>
    Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / 8000)),
  );
}

/** The power of `hz` in `samples` (Goertzel), normalised per sample. */
export function powerAt(samples: Int16Array, hz: number): number {
  const coefficient = 2 * Math.cos((2 * Math.PI * hz) / 8000);
  let s1 = 0;
  let s2 = 0;
  for (const x of samples) {
    const s0 = x + coefficient * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return (s1 * s1 + s2 * s2 - coefficient * s1 * s2) / samples.length;
}
