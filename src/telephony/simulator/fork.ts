/**
 * The media fork of a simulated leg (Carrier `fork`, the markup's Stream):
 * one timer per frame on the leg's scheduler. At each frame boundary t:
 * - out: the remote party's audio of [previous boundary, t) is rendered from
 *   the leg's timeline (media.ts `renderRemote`) and handed to `audio`;
 * - in: when the queue ran dry during the frame just past, `drained` fires;
 *   then up to a frame of queued samples is taken and played from t
 *   (`LegMedia.playSamples`), so recordings of the leg hold it.
 * The leg's end delivers the remote audio up to the end, then `ended`.
 * Audio given to `play` therefore starts at the next boundary (at most one
 * frame of latency) and `clear` leaves the frame being played to play out.
 * Both directions count samples by the leg's clock (`nowMs`) between
 * boundaries: on a scaled simulator (SIMULATOR_TIME_SCALE, whose timestamps
 * come from the service clock) frames then carry less audio, compressed
 * like recordings are; at scale 1 and on a test scheduler a frame is
 * exactly `frameSeconds` of audio.
 */
import type { ForkEvents, MediaFork } from "../carrier.js";
import type { Timer } from "../scheduler.js";
import { type LegMedia, SAMPLE_RATE } from "./media.js";

/** What the fork needs of its leg. */
export interface ForkHost {
  readonly timeline: LegMedia;
  /** Call time in ms. */
  nowMs(): number;
  /** A timer of the leg (cancelled when the leg ends). */
  after(seconds: number, fn: () => void): Timer;
  /** Forgets the fork (it closed). */
  release(fork: SimulatorFork): void;
}

export class SimulatorFork implements MediaFork {
  private chunks: Int16Array[] = [];
  queued = 0;
  /** Output rendered up to here (call time, ms). */
  private renderedMs: number;
  /** The end of what was played (call time, ms). */
  private playingUntilMs: number;
  /** Something was played since the last `drained`. */
  private playing = false;
  private timer: Timer | undefined;
  private closed = false;

  constructor(
    private readonly host: ForkHost,
    private readonly frameSeconds: number,
    private readonly events: ForkEvents,
  ) {
    if (!(frameSeconds > 0)) throw new RangeError("frameSeconds must be above 0");
    this.renderedMs = host.nowMs();
    this.playingUntilMs = this.renderedMs;
    this.arm();
  }

  private arm(): void {
    this.timer = this.host.after(this.frameSeconds, () => this.tick());
  }

  private emit(untilMs: number): void {
    if (untilMs <= this.renderedMs) return;
    const audio = this.host.timeline.renderRemote(this.renderedMs, untilMs);
    this.renderedMs = untilMs;
    const samples = audio.channels[0];
    if (samples !== undefined && samples.length > 0) this.events.audio(samples);
  }

  private tick(): void {
    if (this.closed) return;
    const now = this.host.nowMs();
    // The frame just past, in samples of the leg's clock.
    const frameSamples = Math.round(((now - this.renderedMs) * SAMPLE_RATE) / 1000);
    this.emit(now);
    if (this.closed) return;
    if (this.playing && this.queued === 0 && this.playingUntilMs <= now) {
      this.playing = false;
      this.events.drained();
      if (this.closed) return;
    }
    const frame = this.take(frameSamples);
    if (frame.length > 0) {
      this.host.timeline.playSamples(now, frame);
      this.playingUntilMs = now + (frame.length * 1000) / SAMPLE_RATE;
      this.playing = true;
    }
    this.arm();
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

  /** The leg ended at `endMs`: the last audio, then `ended`. */
  legEnded(endMs: number): void {
    if (this.closed) return;
    this.emit(endMs);
    this.stop();
    this.events.ended();
  }

  private stop(): void {
    this.closed = true;
    this.timer?.cancel();
    this.clear();
    this.host.release(this);
  }

  close(): void {
    if (!this.closed) this.stop();
  }
}
