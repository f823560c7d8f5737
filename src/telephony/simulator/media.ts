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
 *   answer; SILENCE is zeros. Before the answer the remote party is silent.
 *   A SPEECH party with `words` (the route's) says them instead: from the
 *   answer, speechSeconds(words) of speech-like audio (seed
 *   `<callId>:remote:<k>` for the k-th time, from 0), then WORDS_PAUSE_MS of
 *   silence, again and again until the end;
 * - `say`: the speech engine's audio of the text when the carrier has an
 *   engine (src/media/speech; the say lasts as long as that audio), else
 *   speech-like audio (seed `<callId>:say:<n>`, n counting the leg's says
 *   from 0) from the say's start for its duration, at level 0.4;
 * - `play`: the decoded audio of the uri when the engine fetched it
 *   (src/voice/calls/play-audio.ts); otherwise a uri starting `silence:`
 *   plays zeros; `tone:beep...` a 1000 Hz tone; anything else a 440 Hz
 *   tone; tones at level 0.3. Phase 0 at the play's start;
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
 *
 * Every capture also says what was said in it (CapturedAudio.speech), per
 * channel, from the same timeline: the text of each `say` heard on a
 * channel and the remote party's words. A stretch cut by the capture's
 * window keeps the words whose middle is inside it (a say's words share its
 * duration evenly); unintelligible speech and tones say nothing.
 */
import { seedFrom, speechLikeWindow, tone } from "../../recordings/audio/signal.js";
import type { AudioCapture, CapturedAudio, SpokenSegment } from "../carrier.js";
import type { Audio } from "./routes.js";

export const SAMPLE_RATE = 8000;
/** Peak level of the remote party's speech. */
export const REMOTE_SPEECH_LEVEL = 0.5;
/** Peak level of `say` audio. */
export const SAY_LEVEL = 0.4;
export const TONE_LEVEL = 0.3;
export const TONE_HZ = 440;
export const BEEP_HZ = 1000;
/** The remote party's pause between two sayings of its words. */
export const WORDS_PAUSE_MS = 500;

/** How long speaking `text` takes: 0.4 s a word, at least 0.5 s. */
export function speechSeconds(text: string): number {
  const words = text.trim() === "" ? 0 : text.trim().split(/\s+/).length;
  return Math.max(0.5, words * 0.4);
}

/** A stretch of speech in call time and what it says. */
interface Said extends Span {
  text: string;
}

/**
 * The part of `said` inside `window` (and before `endMs`): the words whose
 * middle is inside, with their span; undefined when none is.
 */
function clipSaid(said: Said, window: Span): Said | undefined {
  const words = said.text.split(" ").filter((w) => w !== "");
  if (words.length === 0) return undefined;
  const per = (said.endMs - said.startMs) / words.length;
  const kept: number[] = [];
  words.forEach((_, i) => {
    const mid = said.startMs + (i + 0.5) * per;
    if (mid >= window.startMs && mid < window.endMs) kept.push(i);
  });
  if (kept.length === 0) return undefined;
  return {
    startMs: Math.max(window.startMs, said.startMs + kept[0]! * per),
    endMs: Math.min(window.endMs, said.startMs + (kept.at(-1)! + 1) * per),
    text: kept.map((i) => words[i]).join(" "),
  };
}

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
  /** A say's text (empty for plays). */
  text: string;
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

  /** The end of the window in call time. */
  get endMs(): number {
    return this.startMs + (this.acc.length * 1000) / SAMPLE_RATE;
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
    /** What a SPEECH remote party says (the route's words); empty: unintelligible speech. */
    readonly words = "",
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

  /**
   * `say` of `text` from `atMs`, lasting `seconds`: `samples` (8000 Hz, the
   * speech engine's) when given, else speech-like audio.
   */
  say(atMs: number, seconds: number, text = "", samples?: Int16Array): void {
    const seed = seedFrom(`${this.callId}:say:${this.says++}`);
    this.played.push({
      startMs: atMs,
      endMs: atMs + seconds * 1000,
      sound: samples === undefined ? { kind: "speech", seed } : { kind: "samples", samples },
      text: text.trim().replace(/\s+/g, " "),
    });
  }

  /** `play` of `uri` from `atMs`, lasting `seconds`: `samples` (8000 Hz, decoded) when given, else soundOfUri. */
  play(atMs: number, uri: string, seconds: number, samples?: Int16Array): void {
    const sound: PlayedSound = samples === undefined ? soundOfUri(uri) : { kind: "samples", samples };
    this.played.push({ startMs: atMs, endMs: atMs + seconds * 1000, sound, text: "" });
  }

  /** The remote party's sayings of its words that overlap `part` (within its time on the line). */
  private remoteSaid(part: Span): (Said & { k: number })[] {
    const span = this.remoteSpan();
    if (span === undefined || this.remote === "SILENCE" || this.words === "") return [];
    const length = speechSeconds(this.words) * 1000;
    const period = length + WORDS_PAUSE_MS;
    const from = Math.max(span.startMs, part.startMs);
    const to = Math.min(span.endMs, part.endMs);
    const out: (Said & { k: number })[] = [];
    for (let k = Math.max(0, Math.floor((from - span.startMs) / period)); ; k++) {
      const startMs = span.startMs + k * period;
      if (startMs >= to || !Number.isFinite(startMs)) break;
      out.push({ startMs, endMs: startMs + length, text: this.words, k });
    }
    return out;
  }

  /** `samples` (8000 Hz) played from `atMs` (a media stream's input audio). */
  playSamples(atMs: number, samples: Int16Array): void {
    const endMs = atMs + (samples.length * 1000) / SAMPLE_RATE;
    this.played.push({ startMs: atMs, endMs, sound: { kind: "samples", samples }, text: "" });
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
    if (this.words !== "") {
      const window = { startMs: clipped.startMs, endMs: Math.min(clipped.endMs, mix.endMs) };
      for (const said of this.remoteSaid(window)) {
        const seed = seedFrom(`${this.callId}:remote:${said.k}`);
        const totalLength = samplesIn(said.endMs - said.startMs);
        const heard = {
          startMs: Math.max(said.startMs, window.startMs),
          endMs: Math.min(said.endMs, window.endMs),
        };
        mix.add(heard, said.startMs, (offset, length) =>
          speechLikeWindow(
            { seed, sampleRate: SAMPLE_RATE, level: REMOTE_SPEECH_LEVEL, totalLength },
            offset,
            length,
          ),
        );
      }
      return;
    }
    const seed = seedFrom(`${this.callId}:remote`);
    mix.add(clipped, span.startMs, (offset, length) =>
      speechLikeWindow({ seed, sampleRate: SAMPLE_RATE, level: REMOTE_SPEECH_LEVEL }, offset, length),
    );
  }

  /** What this leg's remote party said within `part`, clipped to it. */
  private remoteSpeech(part: Span): Said[] {
    const out: Said[] = [];
    for (const said of this.remoteSaid(part)) {
      const clipped = clipSaid(said, {
        startMs: part.startMs,
        endMs: Math.min(part.endMs, this.endedMs ?? part.endMs),
      });
      if (clipped !== undefined) out.push(clipped);
    }
    return out;
  }

  /** `endMs` clipped to the leg's end. */
  clipToEnd(endMs: number): number {
    return Math.min(endMs, this.endedMs ?? Number.POSITIVE_INFINITY);
  }

  private captured(startMs: number, channels: Int16Array[], said: Said[][]): CapturedAudio {
    const length = channels[0]?.length ?? 0;
    const speech: SpokenSegment[] = [];
    said.forEach((stretches, channel) => {
      for (const s of stretches) {
        if (s.endMs <= s.startMs) continue;
        speech.push({
          channel,
          offsetMs: s.startMs - startMs,
          durationMs: s.endMs - s.startMs,
          text: s.text,
        });
      }
    });
    speech.sort((a, b) => a.offsetMs - b.offsetMs || a.channel - b.channel);
    return {
      sampleRate: SAMPLE_RATE,
      channels,
      startTime: new Date(startMs),
      durationSeconds: length / SAMPLE_RATE,
      speech,
    };
  }

  /** The remote party alone over [startMs, endMs) (one channel; recordCaller). */
  renderRemote(startMs: number, endMs: number): CapturedAudio {
    const mix = new Mix(startMs, samplesIn(Math.max(0, endMs - startMs)));
    this.addRemote(mix);
    return this.captured(startMs, [mix.toInt16()], [this.remoteSpeech({ startMs, endMs: mix.endMs })]);
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
    const window = { startMs, endMs: own.endMs };
    const ownSaid = this.remoteSpeech(window);
    const end = this.endedMs ?? Number.POSITIVE_INFINITY;
    for (const p of this.played) {
      const spanLength = samplesIn(p.endMs - p.startMs);
      const heard = { startMs: p.startMs, endMs: Math.min(p.endMs, end) };
      for (const part of subtract(heard, bridged)) {
        own.add(part, p.startMs, (offset, n) => renderSound(p.sound, spanLength, offset, n));
        if (p.text === "") continue;
        const clip = {
          startMs: Math.max(part.startMs, window.startMs),
          endMs: Math.min(part.endMs, window.endMs),
        };
        const said = clipSaid({ startMs: p.startMs, endMs: p.endMs, text: p.text }, clip);
        if (said !== undefined) ownSaid.push(said);
      }
    }
    if (bridged.length === 0) return this.captured(startMs, [own.toInt16()], [ownSaid]);
    const peer = new Mix(startMs, length);
    const peerSaid: Said[] = [];
    for (const b of bridged) {
      b.other.addRemote(peer, b);
      const part = { startMs: Math.max(b.startMs, window.startMs), endMs: Math.min(b.endMs, window.endMs) };
      peerSaid.push(...b.other.remoteSpeech(part));
    }
    return this.captured(startMs, [own.toInt16(), peer.toInt16()], [ownSaid, peerSaid]);
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
