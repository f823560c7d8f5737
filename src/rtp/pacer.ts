/**
 * The pacing clock: one timer for every outgoing RTP stream of the process,
 * not one per call. It runs a FrameClock (src/media/frame-clock.ts) of
 * 20 ms frames, so boundaries are fixed from its start and late timers
 * cause no drift; at each boundary it asks every registered stream for its
 * next frame (`nextFrame()`) and hands it to the stream's `send`. A wake-up
 * late by more than a frame hands out every boundary due, in order: each
 * stream sends the frames it owes at once rather than stretching one.
 *
 * The clock runs only while streams are registered (a stream added joins at
 * the next boundary). A stream that throws is counted in `errors` and
 * reported to `onError`; the others still send.
 *
 * Spacing is measured on the timers' clock: for each boundary, the time
 * since the previous boundary was handed out (0 for the extra boundaries of
 * a late wake-up) and how late it was handed out, in histograms of 0.5 ms
 * buckets, so a bench can report p50/p99 (`spacing()`).
 */
import { FrameClock, type FrameTimers } from "../media/frame-clock.js";

/** An outgoing stream the pacer drives. */
export interface PacedStream {
  /** The packet for this boundary, or undefined to send nothing. */
  nextFrame(): Uint8Array | undefined;
  /** Sends what nextFrame returned. */
  send(packet: Uint8Array): void;
}

export interface PacerOptions {
  /** Frame length in seconds of timer time (default 0.02). */
  frameSeconds?: number;
  /** Called with a stream's error (it stays registered). */
  onError?: (error: unknown) => void;
}

/** A histogram of ms values in 0.5 ms buckets up to 100 ms (and one for above). */
export class MsHistogram {
  static readonly BUCKET_MS = 0.5;
  static readonly BUCKETS = 200;
  private readonly counts = new Float64Array(MsHistogram.BUCKETS + 1);
  count = 0;
  sum = 0;
  max = 0;

  record(ms: number): void {
    const i = Math.min(MsHistogram.BUCKETS, Math.max(0, Math.floor(ms / MsHistogram.BUCKET_MS)));
    this.counts[i]!++;
    this.count++;
    this.sum += ms;
    if (ms > this.max) this.max = ms;
  }

  /** The upper edge of the bucket holding the p-th percentile (0 < p <= 100), in ms; 0 when empty. */
  percentile(p: number): number {
    if (this.count === 0) return 0;
    const rank = Math.ceil((p / 100) * this.count);
    let seen = 0;
    for (let i = 0; i <= MsHistogram.BUCKETS; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return i === MsHistogram.BUCKETS ? this.max : (i + 1) * MsHistogram.BUCKET_MS;
    }
    return this.max;
  }

  /** Non-empty buckets as [upper edge ms, count] (the last edge Infinity). */
  buckets(): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    this.counts.forEach((c, i) => {
      if (c > 0)
        out.push([i === MsHistogram.BUCKETS ? Number.POSITIVE_INFINITY : (i + 1) * MsHistogram.BUCKET_MS, c]);
    });
    return out;
  }

  snapshot(): HistogramSnapshot {
    return {
      count: this.count,
      meanMs: this.count === 0 ? 0 : this.sum / this.count,
      p50Ms: this.percentile(50),
      p99Ms: this.percentile(99),
      maxMs: this.max,
      buckets: this.buckets(),
    };
  }
}

export interface HistogramSnapshot {
  count: number;
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  buckets: Array<[number, number]>;
}

export interface PacerStats {
  /** Streams registered now. */
  streams: number;
  /** Boundaries handed out since the clock last started. */
  ticks: number;
  /** Packets sent. */
  sent: number;
  /** Errors thrown by streams. */
  errors: number;
  /** Time between consecutive boundaries as handed out. */
  spacing: HistogramSnapshot;
  /** How late each boundary was handed out. */
  lateness: HistogramSnapshot;
}

/** Timers on the real clock with sub-millisecond readings (performance.now), unref'd. */
export function realTimers(): FrameTimers {
  return {
    nowMs: () => performance.timeOrigin + performance.now(),
    after: (seconds, fn) => {
      const handle = setTimeout(fn, Math.max(0, seconds * 1000));
      handle.unref();
      return { cancel: () => clearTimeout(handle) };
    },
    timeScale: 1,
  };
}

export class Pacer {
  private readonly frameSeconds: number;
  private streams: PacedStream[] = [];
  private clock: FrameClock | undefined;
  private lastMs: number | undefined;
  private ticks = 0;
  private sent = 0;
  private errors = 0;
  private readonly spacingHistogram = new MsHistogram();
  private readonly latenessHistogram = new MsHistogram();

  constructor(
    /** The clock and timers it runs on (streams read the time here too). */
    readonly timers: FrameTimers,
    private readonly options: PacerOptions = {},
  ) {
    this.frameSeconds = options.frameSeconds ?? 0.02;
  }

  /** Registers `stream`; returns its removal (idempotent). */
  add(stream: PacedStream): () => void {
    this.streams = [...this.streams, stream];
    if (this.clock === undefined) {
      this.lastMs = undefined;
      this.ticks = 0;
      this.clock = new FrameClock(this.timers, this.frameSeconds, (_k, atMs) => this.tick(atMs));
    }
    return () => this.remove(stream);
  }

  private remove(stream: PacedStream): void {
    if (!this.streams.includes(stream)) return;
    this.streams = this.streams.filter((s) => s !== stream);
    if (this.streams.length === 0) {
      this.clock?.stop();
      this.clock = undefined;
    }
  }

  /**
   * Hands out a boundary that is due now. The receive path calls it for
   * every packet: a timer runs only between the event loop's phases, so a
   * boundary due while the loop works through a batch of datagrams (400
   * calls' packets arrive together) would wait for the whole batch; polled,
   * it waits for one. The timer still wakes for the boundaries nobody polls.
   */
  poll(): void {
    this.clock?.catchUp(this.timers.nowMs());
  }

  /** Whether the clock's timer runs. */
  get running(): boolean {
    return this.clock !== undefined;
  }

  private tick(atMs: number): void {
    const now = this.timers.nowMs();
    if (this.lastMs !== undefined) this.spacingHistogram.record(now - this.lastMs);
    this.latenessHistogram.record(Math.max(0, now - atMs));
    this.lastMs = now;
    this.ticks++;
    // A copy-on-write array: streams added or removed during the tick take effect next tick.
    for (const stream of this.streams) {
      try {
        const packet = stream.nextFrame();
        if (packet !== undefined) {
          stream.send(packet);
          this.sent++;
        }
      } catch (error) {
        this.errors++;
        this.options.onError?.(error);
      }
    }
  }

  stats(): PacerStats {
    return {
      streams: this.streams.length,
      ticks: this.ticks,
      sent: this.sent,
      errors: this.errors,
      spacing: this.spacingHistogram.snapshot(),
      lateness: this.latenessHistogram.snapshot(),
    };
  }

  /** Stops the clock and forgets every stream. */
  stop(): void {
    this.clock?.stop();
    this.clock = undefined;
    this.streams = [];
  }
}
