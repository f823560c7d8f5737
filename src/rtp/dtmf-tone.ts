/**
 * DTMF tones (ITU-T Q.23): the keypad's frequency pairs, and a generator
 * of 8 kHz 16-bit PCM for a key — for tests, and for sending digits in-band
 * when the remote offered no telephone-event.
 *
 *            1209  1336  1477  1633 Hz
 *     697     1     2     3     A
 *     770     4     5     6     B
 *     852     7     8     9     C
 *     941     *     0     #     D
 */

export const DTMF_ROWS = [697, 770, 852, 941] as const;
export const DTMF_COLUMNS = [1209, 1336, 1477, 1633] as const;
/** The keys by row, then column. */
export const DTMF_KEYPAD = ["123A", "456B", "789C", "*0#D"] as const;

/** The [row, column] frequencies of `digit` (case-insensitive), or undefined. */
export function dtmfFrequencies(digit: string): [number, number] | undefined {
  if (digit.length !== 1) return undefined;
  const key = digit.toUpperCase();
  for (let r = 0; r < 4; r++) {
    const c = DTMF_KEYPAD[r]!.indexOf(key);
    if (c >= 0) return [DTMF_ROWS[r]!, DTMF_COLUMNS[c]!];
  }
  return undefined;
}

export interface DtmfToneOptions {
  /** Tone length (default 100 ms). */
  durationMs?: number;
  /** Silence after the tone (default 0). */
  pauseMs?: number;
  /** Peak level of each of the two tones, in dBFS (default −10). */
  levelDbfs?: number;
  /** The column (high) tone's level minus the row (low) tone's, in dB (default 0). */
  twistDb?: number;
  sampleRate?: number;
}

/** PCM of `digit` pressed: the two tones summed, with 2 ms ramps against clicks. RangeError for other keys. */
export function dtmfTone(digit: string, options: DtmfToneOptions = {}): Int16Array {
  const freqs = dtmfFrequencies(digit);
  if (freqs === undefined) throw new RangeError(`not a DTMF key: ${JSON.stringify(digit)}`);
  const rate = options.sampleRate ?? 8000;
  const toneSamples = Math.round(((options.durationMs ?? 100) * rate) / 1000);
  const out = new Int16Array(toneSamples + Math.round(((options.pauseMs ?? 0) * rate) / 1000));
  const low = 32767 * 10 ** ((options.levelDbfs ?? -10) / 20);
  const high = low * 10 ** ((options.twistDb ?? 0) / 20);
  const ramp = Math.max(1, Math.round(0.002 * rate));
  for (let i = 0; i < toneSamples; i++) {
    const t = i / rate;
    const envelope = Math.min(1, (i + 1) / ramp, (toneSamples - i) / ramp);
    const v =
      envelope * (low * Math.sin(2 * Math.PI * freqs[0] * t) + high * Math.sin(2 * Math.PI * freqs[1] * t));
    out[i] = Math.max(-32768, Math.min(32767, Math.round(v)));
  }
  return out;
}
