/**
 * In-band DTMF detection on 8 kHz 16-bit PCM (for remotes that offered no
 * telephone-event): the Goertzel algorithm at the eight DTMF frequencies
 * over blocks of 102 samples (12.75 ms; the bins are then ~78 Hz wide, so
 * a neighbouring DTMF frequency falls near the first null), then per block:
 *
 * - energy: the strongest row and column tones each at least `minLevelDbfs`
 *   (default −30 dBFS, as a sine's peak level);
 * - twist: the row (low) tone at most `maxNormalTwistDb` (8 dB) above the
 *   column (high) tone, the column at most `maxReverseTwistDb` (4 dB) above
 *   the row (ITU-T Q.24's usual limits);
 * - relative peak: each of the two at least 8 dB above the other tones of
 *   its group;
 * - purity: the two tones carry at least 75% of the block's energy — speech
 *   and noise spread their energy wider and fail here.
 *
 * A key counts once it has passed in consecutive blocks covering
 * `minDurationMs` (default 40 ms: 3 blocks); it is reported then, once,
 * and may be reported again only after two blocks without it (a single
 * failed block inside a press does not make two presses).
 */
import { DTMF_COLUMNS, DTMF_KEYPAD, DTMF_ROWS } from "./dtmf-tone.js";

export interface DtmfDetectorOptions {
  minLevelDbfs?: number;
  maxNormalTwistDb?: number;
  maxReverseTwistDb?: number;
  minDurationMs?: number;
}

export interface DetectedDigit {
  digit: string;
  /** Where the press was first seen: samples since the detector's start. */
  startSample: number;
}

const RATE = 8000;
const BLOCK = 102;
const FREQUENCIES = [...DTMF_ROWS, ...DTMF_COLUMNS];
const COEFFICIENTS = FREQUENCIES.map((f) => 2 * Math.cos((2 * Math.PI * f) / RATE));
const RELATIVE_PEAK = 10 ** (8 / 10);
const PURITY = 0.75;
const GAP_BLOCKS = 2;

export class DtmfDetector {
  private readonly block = new Float64Array(BLOCK);
  private filled = 0;
  private samples = 0;
  private readonly minPower: number;
  private readonly normalTwist: number;
  private readonly reverseTwist: number;
  private readonly blocksNeeded: number;
  private candidate: string | undefined;
  private candidateStart = 0;
  private run = 0;
  private reported: string | undefined;
  private absent = 0;
  private readonly power = new Float64Array(8);

  constructor(options: DtmfDetectorOptions = {}) {
    // A sine of peak amplitude A (in full scale) carries A²/2 per sample; powers below are per sample.
    const a = 10 ** ((options.minLevelDbfs ?? -30) / 20);
    this.minPower = (a * a) / 2;
    this.normalTwist = 10 ** ((options.maxNormalTwistDb ?? 8) / 10);
    this.reverseTwist = 10 ** ((options.maxReverseTwistDb ?? 4) / 10);
    this.blocksNeeded = Math.max(2, Math.floor((options.minDurationMs ?? 40) / ((BLOCK / RATE) * 1000)));
  }

  /** Feeds samples; returns the presses detected in them. */
  push(pcm: Int16Array): DetectedDigit[] {
    const out: DetectedDigit[] = [];
    for (let i = 0; i < pcm.length; i++) {
      this.block[this.filled++] = pcm[i]! / 32768;
      if (this.filled === BLOCK) {
        this.filled = 0;
        const detected = this.analyse(this.samples + i + 1 - BLOCK);
        if (detected) out.push(detected);
      }
    }
    this.samples += pcm.length;
    return out;
  }

  /** Which key one block holds, if any. */
  private classify(): string | undefined {
    let energy = 0;
    for (let i = 0; i < BLOCK; i++) energy += this.block[i]! * this.block[i]!;
    energy /= BLOCK;
    if (energy < this.minPower) return undefined;
    for (let f = 0; f < 8; f++) {
      const coeff = COEFFICIENTS[f]!;
      let s1 = 0;
      let s2 = 0;
      for (let i = 0; i < BLOCK; i++) {
        const s0 = this.block[i]! + coeff * s1 - s2;
        s2 = s1;
        s1 = s0;
      }
      // |X|² scaled so that a sine of amplitude A gives A²/2 (its power per sample).
      this.power[f] = ((s1 * s1 + s2 * s2 - coeff * s1 * s2) * 2) / (BLOCK * BLOCK);
    }
    const row = strongest(this.power, 0);
    const col = strongest(this.power, 4);
    const rowP = this.power[row]!;
    const colP = this.power[col]!;
    if (rowP < this.minPower || colP < this.minPower) return undefined;
    if (rowP > colP * this.normalTwist || colP > rowP * this.reverseTwist) return undefined;
    for (let f = 0; f < 4; f++) {
      if (f !== row && this.power[f]! * RELATIVE_PEAK > rowP) return undefined;
      if (f + 4 !== col && this.power[f + 4]! * RELATIVE_PEAK > colP) return undefined;
    }
    if (rowP + colP < PURITY * energy) return undefined;
    return DTMF_KEYPAD[row]![col - 4];
  }

  private analyse(blockStart: number): DetectedDigit | undefined {
    const key = this.classify();
    if (key === undefined || key !== this.candidate) {
      this.run = 0;
      this.candidate = key;
      this.candidateStart = blockStart;
    }
    if (key === undefined || key !== this.reported) {
      if (++this.absent >= GAP_BLOCKS) this.reported = undefined;
    } else {
      this.absent = 0;
    }
    if (key === undefined) return undefined;
    this.run++;
    if (this.run >= this.blocksNeeded && this.reported !== key) {
      this.reported = key;
      this.absent = 0;
      return { digit: key, startSample: this.candidateStart };
    }
    return undefined;
  }
}

function strongest(power: Float64Array, from: number): number {
  let best = from;
  for (let f = from + 1; f < from + 4; f++) if (power[f]! > power[best]!) best = f;
  return best;
}
