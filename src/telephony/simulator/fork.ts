/**
 * The media fork of a simulated leg (Carrier `fork`, the markup's Stream),
 * paced by a FrameClock (src/media/frame-clock.ts) on the leg's timers:
 * boundary k falls at start + k frames, whenever the timer actually fires.
 * At each boundary, in order (a late timer hands out every boundary due
 * by then, one after the other):
 * - out: the remote party's audio of the frame just past, [boundary k-1,
 *   boundary k), is rendered from the leg's timeline (media.ts
 *   `renderRemote`) and handed to `audio`: always exactly one frame;
 * - in: when the queue ran dry during that frame, `drained` fires; then up
 *   to a frame of queued samples is taken and played from boundary k
 *   (`LegMedia.playSamples`), so recordings of the leg hold it.
 * The leg's end first hands out the boundaries due by the end, then the
 * remote audio from the last boundary to the end (a shorter frame), then
 * `ended`. Audio given to `play` therefore starts at the next boundary (at
 * most one frame of latency) and `clear` leaves the frame being played to
 * play out.
 *
 * Frames are counted on the leg's clock (`nowMs`): at scale 1 a frame is
 * `frameSeconds` of audio (1280 samples for 0.16 s); on a scaled simulator
 * (SIMULATOR_TIME_SCALE, whose timestamps come from the service clock) it is
 * `frameSeconds * timeScale` of audio, compressed like recordings are.
 * Boundaries are whole samples from the start: sample s of the fork is at
 * start + s/8 ms and boundary k at sample round(k * samples per frame), so a
 * fractional frame (12.8 samples at scale 0.01) alternates 12 and 13 while
 * the audio's total stays equal to the time that passed.
 */
import { FrameClock, type FrameTimers } from "../../media/frame-clock.js";
import type { ForkEvents, MediaFork } from "../carrier.js";
import { type LegMedia, SAMPLE_RATE } from "./media.js";

/** What the fork needs of its leg: its timeline and its timers (cancelled when the leg ends). */
export interface ForkHost extends FrameTimers {
  readonly timeline: LegMedia;
  /** Forgets the fork (it closed). */
  release(fork: SimulatorFork): void;
}

export class SimulatorFork implements MediaFork {
  private chunks: Int16Array[] = [];
  queued = 0;
  /** Call time (ms of the leg's clock) the fork started at: its sample s is at startMs + s/8. */
  readonly startMs: number;
  /** Samples in a frame (a fraction on a scaled clock). */
  private readonly frameSamples: number;
  /** Output rendered up to this sample. */
  private rendered = 0;
  /** The end of what was played (sample). */
  private playingUntil = 0;
  /** Something was played since the last `drained`. */
  private playing = false;
  private readonly clock: FrameClock;
  private closed = false;

  constructor(
    private readonly host: ForkHost,
    frameSeconds: number,
    private readonly events: ForkEvents,
  ) {
    if (!(frameSeconds > 0)) throw new RangeError("frameSeconds must be above 0");
    this.frameSamples = frameSeconds * SAMPLE_RATE * host.timeScale;
    this.clock = new FrameClock(host, frameSeconds, (k) => this.boundary(k));
    this.startMs = this.clock.startMs;
  }

  /** The sample boundary `k` falls on. */
  private sampleOf(k: number): number {
    return Math.round(k * this.frameSamples);
  }

  /** The call time (ms) of sample `s`. */
  private msOf(s: number): number {
    return this.startMs + (s * 1000) / SAMPLE_RATE;
  }

  /** Hands the remote audio from what was rendered up to sample `until` to `audio`. */
  private emit(until: number): void {
    if (until <= this.rendered) return;
    const audio = this.host.timeline.renderRemote(this.msOf(this.rendered), this.msOf(until));
    this.rendered = until;
    const samples = audio.channels[0];
    if (samples !== undefined && samples.length > 0) this.events.audio(samples);
  }

  /** Boundary `k`: the frame just past goes out, the next frame of input plays. */
  private boundary(k: number): void {
    if (this.closed) return;
    const at = this.sampleOf(k);
    this.emit(at);
    if (this.closed) return;
    if (this.playing && this.queued === 0 && this.playingUntil <= at) {
      this.playing = false;
      this.events.drained();
      if (this.closed) return;
    }
    const frame = this.take(this.sampleOf(k + 1) - at);
    if (frame.length > 0) {
      this.host.timeline.playSamples(this.msOf(at), frame);
      this.playingUntil = at + frame.length;
      this.playing = true;
    }
  }

  /** Takes up to `n` queued samples. */
  private take(n: number): Int16Array {
    const count = Math.min(n, this.queued);
    const out = new Int16Array(count);
    let filled = 0;
    while (filled < count) {
      const head = this.chunks[0]!;
      const part = Math.min(head.length, count - filled);
      out.set(head.subarray(0, part), filled);
      filled += part;
      if (part === head.length) this.chunks.shift();
      else this.chunks[0] = head.subarray(part);
    }
    this.queued -= count;
    return out;
  }

  play(samples: Int16Array): void {
    if (this.closed || samples.length === 0) return;
    this.chunks.push(samples);
    this.queued += samples.length;
  }

  clear(): void {
    this.chunks = [];
    this.queued = 0;
  }

  /** The leg ended at `endMs`: the frames due by then, the rest up to the end, then `ended`. */
  legEnded(endMs: number): void {
    if (this.closed) return;
    this.clock.catchUp(endMs);
    if (this.closed) return;
    this.emit(Math.round(((endMs - this.startMs) * SAMPLE_RATE) / 1000));
    if (this.closed) return;
    this.stop();
    this.events.ended();
  }

  private stop(): void {
    this.closed = true;
    this.clock.stop();
    this.clear();
    this.host.release(this);
  }

  close(): void {
    if (!this.closed) this.stop();
  }
}
