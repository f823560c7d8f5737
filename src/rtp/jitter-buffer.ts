/**
 * A jitter buffer for one incoming G.711 stream (8 kHz, 20 ms frames): the
 * receive path pushes each packet's decoded frame as it arrives, in any
 * order, and the playout side pops one frame per 20 ms tick.
 *
 * - Order: frames are kept by extended sequence number (RFC 3550 A.1's
 *   cycles × 65536 + seq, so a wrap from 65535 to 0 is just the next
 *   frame) and played in that order. Timestamps are not used for ordering:
 *   a timestamp jump (silence suppression, a remote restarting its clock)
 *   plays on in sequence.
 * - Depth: playout starts once `depthMs` of frames (default 60 ms, 3 frames)
 *   are buffered, or once the first frame has waited that long; a buffer
 *   that runs dry goes back to buffering, so a new talk spurt gets its
 *   depth again. More than `maxMs` buffered (default 4 × depth) drops the
 *   oldest frames (counted as `overflow`), bounding the delay.
 * - Loss: a frame missing at its turn while later frames are buffered is
 *   concealed — the previous frame repeated once, silence after that (a
 *   repeat hides a single lost packet; repeating longer buzzes) — and
 *   counted `lost`. A frame arriving after its turn is dropped and counted
 *   `late`; one already buffered or played is dropped and counted
 *   `duplicate`; one arriving before an earlier-sequenced frame is counted
 *   `reordered` (and played in its place).
 * - Packets without audio: an RFC 4733 event takes sequence numbers of the
 *   stream; `pushEmpty` marks them so their turns play silence rather than
 *   count as lost.
 * - Re-sync: a new SSRC flushes the buffer and starts over from that
 *   packet (counted `resyncs`). So does a sequence number more than
 *   `resyncFrames` (default 100) away from the expected one, once the next
 *   packet follows it (as RFC 3550 A.1 confirms a restart): a lone stray
 *   packet far off is dropped (`strays`) and the stream plays on.
 *
 * Pure: no timers, no I/O; the caller's tick drives `pop`.
 *
 * Custody: a frame pushed is the buffer's until it is done with it — not
 * kept (late, duplicate, stray), dropped (overflow, re-sync), or played and
 * then followed by the next played frame (the last one played stays, for
 * concealment) — and then handed to `release`, so a caller can reuse its
 * frames instead of allocating one per packet. A frame `pop` returns is
 * valid until the next `push` or `pop`.
 */

export interface JitterBufferOptions {
  /** Samples in a frame (default 160: 20 ms at 8 kHz). */
  frameSamples?: number;
  /** Milliseconds of a frame (default 20). */
  frameMs?: number;
  /** Target depth before playout starts (default 60 ms). */
  depthMs?: number;
  /** Most buffered before the oldest frames are dropped (default 4 × depthMs). */
  maxMs?: number;
  /** A sequence jump beyond this many frames re-syncs (default 100). */
  resyncFrames?: number;
  /** Frames the buffer is done with (see Custody above). */
  release?: (samples: Int16Array) => void;
}

export interface JitterCounters {
  /** Frames pushed (each packet once, duplicates included). */
  received: number;
  /** Frames played from packets. */
  played: number;
  /** Frames missing at their turn and concealed. */
  lost: number;
  /** Packets that came after their turn (dropped). */
  late: number;
  /** Packets already buffered or played (dropped). */
  duplicate: number;
  /** Packets that came before an earlier-sequenced one. */
  reordered: number;
  /** Frames dropped because the buffer was over maxMs. */
  overflow: number;
  /** Ticks with nothing to play (buffering or run dry): silence. */
  underruns: number;
  /** Times the buffer started over (new SSRC, sequence jump). */
  resyncs: number;
  /** Packets far from the stream's sequence not (yet) confirmed as a jump: dropped. */
  strays: number;
}

/** What a tick plays. */
export interface PlayedFrame {
  /**
   * "audio": a received frame; "concealed": a lost frame's stand-in;
   * "silence": nothing to play (buffering, run dry, or a packet without audio).
   */
  kind: "audio" | "concealed" | "silence";
  samples: Int16Array;
  /** The frame's sequence number (audio and concealed). */
  sequence?: number;
}

/** What pushEmpty stores. */
const NO_AUDIO = new Int16Array(0);

/** How much of a sequence ring remembers what was received (for duplicate vs late). */
const HISTORY = 256;

export class JitterBuffer {
  readonly frameSamples: number;
  readonly depthFrames: number;
  readonly maxFrames: number;
  private readonly resyncFrames: number;
  private readonly release: (samples: Int16Array) => void;
  private readonly silence: Int16Array;
  private readonly frames = new Map<number, Int16Array>();
  /** Extended sequence numbers pushed, by ext % HISTORY. */
  private readonly seen = new Float64Array(HISTORY).fill(-1);
  private ssrc: number | undefined;
  /** After a stray packet far off: the sequence number that would confirm a jump. */
  private jumpTo: number | undefined;
  /** Extended sequence number of the next frame to play (undefined before the first packet). */
  private next: number | undefined;
  /** Highest extended sequence number pushed. */
  private highest = -1;
  private playing = false;
  private waited = 0;
  private last: Int16Array | undefined;
  private repeated = false;
  readonly counters: JitterCounters = {
    received: 0,
    played: 0,
    lost: 0,
    late: 0,
    duplicate: 0,
    reordered: 0,
    overflow: 0,
    underruns: 0,
    resyncs: 0,
    strays: 0,
  };

  constructor(options: JitterBufferOptions = {}) {
    this.frameSamples = positive("frameSamples", options.frameSamples ?? 160);
    const frameMs = positive("frameMs", options.frameMs ?? 20);
    const depthMs = positive("depthMs", options.depthMs ?? 60);
    this.depthFrames = Math.max(1, Math.round(depthMs / frameMs));
    this.maxFrames = Math.max(this.depthFrames, Math.round((options.maxMs ?? 4 * depthMs) / frameMs));
    this.resyncFrames = positive("resyncFrames", options.resyncFrames ?? 100);
    const release = options.release;
    this.release =
      release === undefined
        ? () => {}
        : (samples) => {
            if (samples !== NO_AUDIO) release(samples);
          };
    this.silence = new Int16Array(this.frameSamples);
  }

  /** Frames buffered now. */
  get size(): number {
    return this.frames.size;
  }

  /**
   * A packet of the stream that carries no audio (an RFC 4733 event shares
   * the stream's sequence numbers): its turn plays silence, and it is not
   * counted lost.
   */
  pushEmpty(ssrc: number, sequence: number): void {
    this.push(ssrc, sequence, NO_AUDIO);
  }

  /** Adds a received frame: its packet's SSRC and sequence number, and its decoded samples. */
  push(ssrc: number, sequence: number, samples: Int16Array): void {
    this.counters.received++;
    if (this.ssrc !== ssrc || this.next === undefined) {
      if (this.ssrc !== undefined) this.counters.resyncs++;
      this.restart(ssrc, sequence);
    }
    let ext = this.extend(sequence);
    if (Math.abs(ext - this.next!) > this.resyncFrames) {
      if (sequence !== this.jumpTo) {
        this.jumpTo = (sequence + 1) & 0xffff;
        this.counters.strays++;
        this.release(samples);
        return;
      }
      this.counters.resyncs++;
      this.restart(ssrc, sequence);
      ext = this.next!;
    }
    this.jumpTo = undefined;
    if (ext < this.next! && !this.playing && this.next! - ext < this.maxFrames) {
      // Before playout starts, an earlier frame than the first is simply earlier.
      this.next = ext;
    }
    if (ext < this.next!) {
      if (this.seen[ext % HISTORY] === ext) this.counters.duplicate++;
      else this.counters.late++;
      this.release(samples);
      return;
    }
    if (this.frames.has(ext)) {
      this.counters.duplicate++;
      this.release(samples);
      return;
    }
    if (ext < this.highest) this.counters.reordered++;
    else this.highest = ext;
    this.seen[ext % HISTORY] = ext;
    this.frames.set(ext, samples);
    while (this.frames.size > this.maxFrames) {
      const dropped = this.frames.get(this.next!);
      if (dropped !== undefined) {
        this.frames.delete(this.next!);
        this.release(dropped);
        this.counters.overflow++;
      } else this.counters.lost++;
      this.next!++;
    }
  }

  /** The frame for this tick. */
  pop(): PlayedFrame {
    if (this.next === undefined) return this.idle();
    if (!this.playing) {
      if (this.frames.size === 0) return this.idle();
      this.waited++;
      if (this.frames.size < this.depthFrames && this.waited <= this.depthFrames) return this.idle();
      this.playing = true;
      // Start at the earliest frame buffered (an earlier one may have been lost).
      this.next = Math.min(...this.frames.keys());
    }
    if (this.frames.size === 0) {
      this.playing = false;
      this.waited = 0;
      return this.idle();
    }
    const ext = this.next;
    this.next++;
    const sequence = ext & 0xffff;
    const samples = this.frames.get(ext);
    if (samples === NO_AUDIO) {
      this.frames.delete(ext);
      this.repeated = true;
      return { kind: "silence", samples: this.silence, sequence };
    }
    if (samples !== undefined) {
      this.frames.delete(ext);
      this.counters.played++;
      if (this.last !== undefined) this.release(this.last);
      this.last = samples;
      this.repeated = false;
      return { kind: "audio", samples, sequence };
    }
    this.counters.lost++;
    if (this.last !== undefined && !this.repeated) {
      this.repeated = true;
      return { kind: "concealed", samples: this.last, sequence };
    }
    return { kind: "concealed", samples: this.silence, sequence };
  }

  private idle(): PlayedFrame {
    this.counters.underruns++;
    return { kind: "silence", samples: this.silence };
  }

  /** Starts over with `ssrc`, `sequence` being the next to play. */
  private restart(ssrc: number, sequence: number): void {
    this.ssrc = ssrc;
    for (const samples of this.frames.values()) this.release(samples);
    if (this.last !== undefined) this.release(this.last);
    this.frames.clear();
    this.seen.fill(-1);
    // One cycle up, so that extended numbers of earlier packets stay positive.
    this.next = sequence + 0x10000;
    this.highest = this.next - 1;
    this.playing = false;
    this.waited = 0;
    this.last = undefined;
  }

  /** `sequence` as the extended sequence number nearest the next to play. */
  private extend(sequence: number): number {
    const base = this.next!;
    const delta = ((sequence - (base & 0xffff) + 0x18000) & 0xffff) - 0x8000;
    return base + delta;
  }
}

function positive(name: string, value: number): number {
  if (!(value > 0) || !Number.isFinite(value))
    throw new RangeError(`${name} must be a positive number, got ${value}`);
  return value;
}
