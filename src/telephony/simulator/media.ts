/**
 * The audio of a simulated leg, as a timeline in call time (milliseconds of
 * the scheduler's clock): when the leg was answered and ended, what was
 * played to it, and when it was bridged with which leg. Samples exist only
 * when asked for: `render` synthesizes the window it is given (PCM 16-bit,
 * 8000 Hz), never more, and nothing is generated as time passes.
 *
 * Sources (all deterministic, seeded from the call id):
 * - the remote party, from answer to end: SPEECH is one unbounded
 *   speech-like signal (signal.ts, seed `<callId>:remote`) starting at the
 *   answer; SILENCE is zeros. Before the answer the remote party is silent;
 * - `say`: speech-like audio (seed `<callId>:say:<n>`, n counting the leg's
 *   says from 0) from the say's start for its duration, at level 0.4;
 * - `play`: a uri starting `silence:` plays zeros; `tone:beep...` a 1000 Hz
 *   tone; anything else a 440 Hz tone; tones at level 0.3. Phase 0 at the
 *   play's start;
 * - `playSamples` (a media stream's input audio): the samples given, as
 *   they are;
 * - collecting digits plays nothing (nor does recording).
 * A play or say cut short by the leg's end stops at the end.
 *
 * Capture channels (AudioCapture in ../carrier.ts): when the leg was bridged
 * during the window, [0] the remote party plus what was played to the leg
 * outside the bridged spans, [1] the bridged leg's remote party during the
 * bridged spans (zeros elsewhere); otherwise [0] alone. Sources are mixed by
 * addition and clipped to int16.
 */
import { seedFrom, speechLikeWindow, tone } from "../../recordings/audio/signal.js";
import type { AudioCapture, CapturedAudio } from "../carrier.js";
import type { Audio } from "./routes.js";

export const SAMPLE_RATE = 8000;
/** Peak level of the remote party's speech. */
export const REMOTE_SPEECH_LEVEL = 0.5;
/** Peak level of `say` audio. */
export const SAY_LEVEL = 0.4;
export const TONE_LEVEL = 0.3;
export const TONE_HZ = 440;
export const BEEP_HZ = 1000;

/** Samples in `ms` milliseconds. */
function samplesIn(ms: number): number {
  return Math.round((ms * SAMPLE_RATE) / 1000);
}

/** What a played span sounds like. */
export type PlayedSound =
  | { kind: "speech"; seed: number }
  | { kind: "samples"; samples: Int16Array }
  | { kind: "tone"; frequency: number }
  | { kind: "silence" };

/** The sound `play` makes of a uri. */
export function soundOfUri(uri: string): PlayedSound {
  if (uri.startsWith("silence:")) return { kind: "silence" };
  if (uri.startsWith("tone:beep")) return { kind: "tone", frequency: BEEP_HZ };
  return { kind: "tone", frequency: TONE_HZ };
}

/** A half-open interval of call time, [startMs, endMs). */
export interface Span {
  startMs: number;
  endMs: number;
}

export interface PlayedSpan extends Span {
  sound: PlayedSound;
}

export interface BridgeSpan extends Span {
  /** The other leg's timeline. */
  other: LegMedia;
}

/** Renders `length` samples from `offset` samples into the sound (its start being 0). */
function renderSound(
  sound: PlayedSound,
  spanLength: number,
  offset: number,
  length: number,
): Int16Array | null {
  switch (sound.kind) {
    case "silence":
      return null;
    case "samples":
      return sound.samples.subarray(Math.min(offset, sound.samples.length), offset + length);
    case "tone":
      return tone({ frequency: sound.frequency, sampleRate: SAMPLE_RATE, level: TONE_LEVEL }, offset, length);
    case "speech":
      return speechLikeWindow(
        { seed: sound.seed, sampleRate: SAMPLE_RATE, level: SAY_LEVEL, totalLength: spanLength },
        offset,
        length,
      );
  }
}

/** `span` minus the `holes` (any order, possibly overlapping), in order. */
export function subtract(span: Span, holes: readonly Span[]): Span[] {
  let parts: Span[] = [span];
  for (const hole of holes) {
    const next: Span[] = [];
    for (const p of parts) {
      if (hole.endMs <= p.startMs || hole.startMs >= p.endMs) {
        next.push(p);
        continue;
      }
      if (hole.startMs > p.startMs) next.push({ startMs: p.startMs, endMs: hole.startMs });
      if (hole.endMs < p.endMs) next.push({ startMs: hole.endMs, endMs: p.endMs });
    }
    parts = next;
  }
  return parts;
}

/** Adds samples into an int32 accumulator; the mix is clipped to int16 at the end. */
class Mix {
  readonly acc: Int32Array;

  constructor(
    readonly startMs: number,
    length: number,
  ) {
    this.acc = new Int32Array(length);
  }

  /** Sample index of `ms` in the window, clamped to it. */
  private index(ms: number): number {
    return Math.min(this.acc.length, Math.max(0, samplesIn(ms - this.startMs)));
  }

  /**
   * Adds `part` (a part of a source that starts at `originMs`) clipped to the
   * window; `render(offset, length)` gives the source's samples from
   * `offset` samples after its origin.
   */
  add(part: Span, originMs: number, render: (offset: number, length: number) => Int16Array | null): void {
    const from = this.index(part.startMs);
    const to = this.index(part.endMs);
    if (to <= from) return;
    // The window's sample `from` is at startMs + from/8 ms of call time.
    const offset = from + samplesIn(this.startMs - originMs);
    const samples = render(offset, to - from);
    if (samples === null) return;
    for (let i = 0; i < samples.length; i++) this.acc[from + i]! += samples[i]!;
  }

  toInt16(): Int16Array {
    const out = new Int16Array(this.acc.length);
    for (let i = 0; i < out.length; i++) out[i] = Math.max(-32768, Math.min(32767, this.acc[i]!));
    return out;
  }
}

/** The audio timeline of one leg. */
export class LegMedia {
  answeredMs: number | undefined;
  endedMs: number | undefined;
  readonly played: PlayedSpan[] = [];
  readonly bridges: BridgeSpan[] = [];
  private says = 0;

  constructor(
    readonly callId: string,
    /** What the remote party sends once answered (the route's audio). */
    readonly remote: Audio,
  ) {}

  answer(atMs: number): void {
    this.answeredMs ??= atMs;
  }

  /** Ends the leg's media: closes any open bridge span (on both sides). */
  end(atMs: number): void {
    if (this.endedMs !== undefined) return;
    this.endedMs = atMs;
    this.unbridge(atMs);
  }

  /** `say` from `atMs`, lasting `seconds`. */
  say(atMs: number, seconds: number): void {
    const seed = seedFrom(`${this.callId}:say:${this.says++}`);
    this.played.push({ startMs: atMs, endMs: atMs + seconds * 1000, sound: { kind: "speech", seed } });
  }

  /** `play` of `uri` from `atMs`, lasting `seconds`. */
  play(atMs: number, uri: string, seconds: number): void {
    this.played.push({ startMs: atMs, endMs: atMs + seconds * 1000, sound: soundOfUri(uri) });
  }

  /** `samples` (8000 Hz) played from `atMs` (a media stream's input audio). */
  playSamples(atMs: number, samples: Int16Array): void {
    const endMs = atMs + (samples.length * 1000) / SAMPLE_RATE;
    this.played.push({ startMs: atMs, endMs, sound: { kind: "samples", samples } });
  }

  /** The open bridge span, if any. */
  private openBridge(): BridgeSpan | undefined {
    const last = this.bridges.at(-1);
    return last !== undefined && last.endMs === Number.POSITIVE_INFINITY ? last : undefined;
  }

  /** Starts bridging with `other` (both sides), after ending either side's current bridge. */
  bridge(other: LegMedia, atMs: number): void {
    this.unbridge(atMs);
    other.unbridge(atMs);
    this.bridges.push({ startMs: atMs, endMs: Number.POSITIVE_INFINITY, other });
    other.bridges.push({ startMs: atMs, endMs: Number.POSITIVE_INFINITY, other: this });
  }

  /** Ends the current bridge, if any, on both sides. */
  unbridge(atMs: number): void {
    const open = this.openBridge();
    if (open === undefined) return;
    open.endMs = atMs;
    const back = open.other.openBridge();
    if (back !== undefined && back.other === this) back.endMs = atMs;
  }

  /** When the remote party is on the line: from answer to end. */
  private remoteSpan(): Span | undefined {
    if (this.answeredMs === undefined) return undefined;
    return { startMs: this.answeredMs, endMs: this.endedMs ?? Number.POSITIVE_INFINITY };
  }

  /** Adds this leg's remote party within `part` to `mix`. */
  private addRemote(mix: Mix, part: Span = { startMs: mix.startMs, endMs: Number.POSITIVE_INFINITY }): void {
    const span = this.remoteSpan();
    if (span === undefined || this.remote === "SILENCE") return;
    const clipped = {
      startMs: Math.max(span.startMs, part.startMs),
      endMs: Math.min(span.endMs, part.endMs),
    };
    const seed = seedFrom(`${this.callId}:remote`);
    mix.add(clipped, span.startMs, (offset, length) =>
      speechLikeWindow({ seed, sampleRate: SAMPLE_RATE, level: REMOTE_SPEECH_LEVEL }, offset, length),
    );
  }

  /** `endMs` clipped to the leg's end. */
  clipToEnd(endMs: number): number {
    return Math.min(endMs, this.endedMs ?? Number.POSITIVE_INFINITY);
  }

  private captured(startMs: number, channels: Int16Array[]): CapturedAudio {
    const length = channels[0]?.length ?? 0;
    return {
      sampleRate: SAMPLE_RATE,
      channels,
      startTime: new Date(startMs),
      durationSeconds: length / SAMPLE_RATE,
    };
  }

  /** The remote party alone over [startMs, endMs) (one channel; recordCaller). */
  renderRemote(startMs: number, endMs: number): CapturedAudio {
    const mix = new Mix(startMs, samplesIn(Math.max(0, endMs - startMs)));
    this.addRemote(mix);
    return this.captured(startMs, [mix.toInt16()]);
  }

  /** The leg's capture over [startMs, endMs): one or two channels (see the header). */
  render(startMs: number, endMs: number): CapturedAudio {
    const length = samplesIn(Math.max(0, endMs - startMs));
    const bridged = this.bridges.filter(
      (b) =>
        b.endMs > b.startMs &&
        ((b.startMs < endMs && b.endMs > startMs) || (b.startMs <= startMs && b.endMs > startMs)),
    );
    const own = new Mix(startMs, length);
    this.addRemote(own);
    const end = this.endedMs ?? Number.POSITIVE_INFINITY;
    for (const p of this.played) {
      const spanLength = samplesIn(p.endMs - p.startMs);
      const heard = { startMs: p.startMs, endMs: Math.min(p.endMs, end) };
      for (const part of subtract(heard, bridged)) {
        own.add(part, p.startMs, (offset, n) => renderSound(p.sound, spanLength, offset, n));
      }
    }
    if (bridged.length === 0) return this.captured(startMs, [own.toInt16()]);
    const peer = new Mix(startMs, length);
    for (const b of bridged) b.other.addRemote(peer, b);
    return this.captured(startMs, [own.toInt16(), peer.toInt16()]);
  }

  /**
   * A capture from `startMs`; `now()` is read at stop. It stops at the
   * earlier of stop() and the leg's end; later stops return the same audio.
   */
  capture(startMs: number, now: () => number): AudioCapture {
    let result: CapturedAudio | undefined;
    return {
      stop: () => {
        result ??= this.render(startMs, Math.max(startMs, this.clipToEnd(now())));
        return result;
      },
    };
  }
}
