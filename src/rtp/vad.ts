/**
 * An energy-based voice activity detector, for `<Record>`'s silence timeout
 * and for telling an empty recording from one with someone on it.
 *
 * Each frame's level is its RMS in dBFS (20·log10(rms / 32768): a
 * full-scale square wave is 0 dBFS, a full-scale sine −3 dBFS, digital
 * silence −∞, reported as −120). A frame at or above `thresholdDbfs`
 * (default −40 dBFS: telephone speech sits around −30 to −15, a quiet line's
 * noise below −50) is loud. Speech starts after `attackMs` of consecutive
 * loud frames (default 40 ms, so a click does not count) and lasts until
 * `hangoverMs` (default 300 ms) pass with no loud frame, so the pauses
 * between words do not end it.
 *
 * `silenceMs` is the time since the last loud frame of speech (since the
 * start when there has been none): the figure a silence timeout compares
 * against. Pure: the caller pushes frames.
 */

export interface VoiceActivityOptions {
  thresholdDbfs?: number;
  attackMs?: number;
  hangoverMs?: number;
  sampleRate?: number;
}

export interface VoiceActivity {
  /** Whether speech is on (including its hangover). */
  speech: boolean;
  /** This frame's level, dBFS. */
  levelDbfs: number;
  /** Milliseconds since the last loud frame of speech (since the start if none). */
  silenceMs: number;
  /** Whether speech has been heard at all. */
  heardSpeech: boolean;
}

/** The RMS level of `pcm` in dBFS (−120 for digital silence or no samples). */
export function levelDbfs(pcm: Int16Array): number {
  if (pcm.length === 0) return -120;
  let sum = 0;
  for (let i = 0; i < pcm.length; i++) sum += pcm[i]! * pcm[i]!;
  const rms = Math.sqrt(sum / pcm.length) / 32768;
  return rms === 0 ? -120 : Math.max(-120, 20 * Math.log10(rms));
}

export class VoiceActivityDetector {
  readonly thresholdDbfs: number;
  private readonly attackMs: number;
  private readonly hangoverMs: number;
  private readonly sampleRate: number;
  private loudMs = 0;
  private quietMs = 0;
  private speech = false;
  private heard = false;
  private silence = 0;

  constructor(options: VoiceActivityOptions = {}) {
    this.thresholdDbfs = options.thresholdDbfs ?? -40;
    this.attackMs = options.attackMs ?? 40;
    this.hangoverMs = options.hangoverMs ?? 300;
    this.sampleRate = options.sampleRate ?? 8000;
    for (const [name, v] of [
      ["attackMs", this.attackMs],
      ["hangoverMs", this.hangoverMs],
    ] as const) {
      if (!(v >= 0) || !Number.isFinite(v)) throw new RangeError(`${name} must be a number >= 0, got ${v}`);
    }
    if (!Number.isFinite(this.thresholdDbfs)) throw new RangeError("thresholdDbfs must be a number");
  }

  /** Takes the next frame. */
  push(pcm: Int16Array): VoiceActivity {
    const ms = (pcm.length * 1000) / this.sampleRate;
    const level = levelDbfs(pcm);
    const loud = level >= this.thresholdDbfs;
    if (loud) {
      this.loudMs += ms;
      this.quietMs = 0;
    } else {
      this.loudMs = 0;
      this.quietMs += ms;
    }
    if (loud && this.loudMs >= this.attackMs) {
      if (!this.speech) this.speech = true;
      this.heard = true;
    } else if (this.speech && this.quietMs >= this.hangoverMs) {
      this.speech = false;
    }
    if (loud && this.speech) this.silence = 0;
    else this.silence += ms;
    return { speech: this.speech, levelDbfs: level, silenceMs: this.silence, heardSpeech: this.heard };
  }
}
