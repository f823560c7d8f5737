/**
 * A SIP call's media: the full RTP session of src/rtp/session.ts (jitter
 * buffer, RTCP, RFC 4733 and in-band DTMF, SIP INFO relay, RTP timeout),
 * paced by the one process-wide Pacer, and the two tracks the leg
 * (./leg.ts) records from.
 *
 * - Timeline: samples from `start()` (the answer), counted by the session's
 *   playout ticks: each 20 ms tick adds 160 samples, whatever arrived.
 * - The remote track: every played-out frame (`audio` event) at its tick's
 *   position — received audio, a lost frame's concealment (the jitter
 *   buffer's: the previous frame repeated once, silence after), or silence when
 *   nothing came. A remote SSRC change starts the jitter buffer over; the
 *   track just goes on.
 * - The local track: what `send` queued, placed where the session sends it
 *   (right after what is queued, or at the next frame when nothing is);
 *   between sends the session sends silence (RTP flows for the whole call,
 *   so a peer's own RTP timeout never fires), which the track leaves empty.
 * - Owners: `send(samples, owner)` and `clear(owner)` (a media fork clears
 *   its own audio, not a `<Say>` under way).
 * - Memory: the tracks keep the last 0.5 s (pruned every 0.2 s, in whole 0.5 s segments: at
 *   most 1.2 s is left behind the present), and older audio only while a
 *   consumer (a call recording, a Record, a fork) `hold`s it, so a long call
 *   that nobody records costs no more than a short one.
 * - RTP timeout: checked once a second on the playout ticks — no packet
 *   (audio or telephone-event) received for `timeoutSeconds`, the call not
 *   held: `onTimeout` listeners, once. On hold the count is suspended, and
 *   it starts over at the resume.
 * - Hold: while the peer holds the call (sendonly / inactive) nothing is
 *   sent.
 */
import type { Logger } from "../../log.js";
import { Pacer, realTimers } from "../../rtp/pacer.js";
import { type RtpCodec, RtpSession, type RtpSessionStats } from "../../rtp/session.js";
import type { Negotiated } from "../../sip/sdp.js";
import { recordCallRtp } from "./rtp-metrics.js";

export const SAMPLE_RATE = 8000;
export const FRAME_SAMPLES = 160;
/** How often (ticks of 20 ms) the RTP timeout is checked: every second. */
const TIMEOUT_CHECK_TICKS = 50;
/** How often (ticks) the tracks are pruned: every 0.2 s. */
const PRUNE_TICKS = 10;
/**
 * Audio the tracks keep behind the present when nothing holds older audio:
 * 0.5 s. Every consumer holds from the present on (a capture, a Record, a
 * fork), so this is a margin, not something read.
 */
const HISTORY_SAMPLES = 4000;

/** A consumer's claim on the tracks' audio from `at` on (CallMedia.hold). */
export interface TrackHold {
  /** The oldest sample it may still render; move it forward as it goes. */
  at: number;
  release(): void;
}

let shared: Pacer | undefined;

/** The process's one pacing clock for every call's RTP (created on first use). */
export function processPacer(): Pacer {
  shared ??= new Pacer(realTimers());
  return shared;
}

/** Where RTP sockets are bound and how sessions behave (from settings). */
export interface CallMediaOptions {
  /** Local address to bind (the SIP edge's). */
  address: string;
  /** RTP_PORT_MIN, RTP_PORT_MAX (0 and 0: any free pair). */
  portMin: number;
  portMax: number;
  /** RTP_TIMEOUT_SECONDS (0: never). */
  timeoutSeconds: number;
  /** Default: processPacer(). */
  pacer?: Pacer;
}

/** Samples of a segment that `Track.append` fills (0.5 s): a call's kept audio is two or three of them, not 100 frames. */
const SEGMENT_SAMPLES = 4000;
/** Segments of pruned audio, reused (at most 2 MB of them kept). */
const segmentPool: Int16Array[] = [];
const SEGMENT_POOL_MAX = 256;

/** A chunk of a track; `segment` when its samples are a view of a pooled buffer that `append` fills. */
interface StoredChunk {
  at: number;
  samples: Int16Array;
  segment?: Int16Array;
}

/** Audio placed on a timeline of samples. */
export class Track {
  private readonly chunks: StoredChunk[] = [];
  /** Where the last sample written ends. */
  end = 0;

  /**
   * Adds `samples` (copied) at `at`, coalesced with the audio just before it
   * into a pooled 0.5 s segment: a track fed frame by frame (the remote party's
   * 20 ms frames) holds a few buffers, not an object per frame that lives as
   * long as the track keeps it (which the garbage collector pays for at every
   * collection, and the pacer with it).
   */
  append(at: number, samples: Int16Array): void {
    if (at < 0 || samples.length === 0) return;
    const last = this.chunks.at(-1);
    const used = last?.samples.length ?? 0;
    if (
      last?.segment !== undefined &&
      at === last.at + used &&
      used + samples.length <= last.segment.length
    ) {
      last.segment.set(samples, used);
      last.samples = last.segment.subarray(0, used + samples.length);
    } else if (samples.length > SEGMENT_SAMPLES) {
      this.chunks.push({ at, samples: samples.slice() });
    } else {
      const segment = segmentPool.pop() ?? new Int16Array(SEGMENT_SAMPLES);
      segment.set(samples, 0);
      this.chunks.push({ at, samples: segment.subarray(0, samples.length), segment });
    }
    this.end = Math.max(this.end, at + samples.length);
  }

  /** Places `samples` at `at`; the chunk returned may be moved or cut later (then call `changed`). */
  put(at: number, samples: Int16Array): TrackChunk {
    const chunk = { at, samples };
    if (at < 0 || samples.length === 0) return chunk;
    this.chunks.push(chunk);
    this.end = Math.max(this.end, at + samples.length);
    return chunk;
  }

  /** After chunks were moved or cut: empty ones dropped, `end` recomputed. */
  changed(): void {
    let end = 0;
    for (let i = this.chunks.length - 1; i >= 0; i--) {
      const c = this.chunks[i]!;
      if (c.samples.length === 0) this.chunks.splice(i, 1);
      else end = Math.max(end, c.at + c.samples.length);
    }
    this.end = end;
  }

  /** Samples [from, from + out.length) added into `out` (clipped), zeros where nothing was. */
  mixInto(out: Int16Array, from: number): void {
    const to = from + out.length;
    for (const { at, samples } of this.chunks) {
      if (at >= to || at + samples.length <= from) continue;
      const start = Math.max(at, from);
      const stop = Math.min(at + samples.length, to);
      for (let i = start; i < stop; i++) {
        const v = out[i - from]! + samples[i - at]!;
        out[i - from] = Math.min(32767, Math.max(-32768, v));
      }
    }
  }

  /** Forgets the chunks that end at or before `before` (audio nobody will render again). */
  prune(before: number): void {
    if (this.chunks.length === 0 || this.chunks.every((c) => c.at + c.samples.length > before)) return;
    const kept: StoredChunk[] = [];
    for (const c of this.chunks) {
      if (c.at + c.samples.length > before) kept.push(c);
      else if (c.segment !== undefined && segmentPool.length < SEGMENT_POOL_MAX) segmentPool.push(c.segment);
    }
    this.chunks.length = 0;
    this.chunks.push(...kept);
  }

  render(from: number, to: number): Int16Array {
    const out = new Int16Array(Math.max(0, to - from));
    this.mixInto(out, from);
    return out;
  }

  /** Whether any sample in [from, to) is louder than `level`. */
  loud(from: number, to: number, level: number): boolean {
    for (const { at, samples } of this.chunks) {
      if (at >= to || at + samples.length <= from) continue;
      for (let i = Math.max(at, from); i < Math.min(at + samples.length, to); i++) {
        if (Math.abs(samples[i - at]!) > level) return true;
      }
    }
    return false;
  }
}

export interface TrackChunk {
  at: number;
  samples: Int16Array;
}

interface Queued {
  /** Samples of it still in the session's queue (all of them, but for the first item). */
  pending: number;
  /** Where it is in the local track (the whole of it). */
  chunk: TrackChunk;
  owner: unknown;
  done: (sent: boolean) => void;
  settled: boolean;
}

export class CallMedia {
  readonly remoteTrack = new Track();
  readonly localTrack = new Track();
  /** What a bridge relayed to the peer (the other leg's party), kept apart from localTrack for recordings. */
  readonly bridgeTrack = new Track();
  /** Consumers of the tracks' audio (a capture, a Record, a fork): older audio is forgotten. */
  private readonly holds = new Set<TrackHold>();
  private readonly audioListeners = new Set<(samples: Int16Array) => void>();
  private media: Negotiated | undefined;
  private started = false;
  private closed = false;
  private ticks = 0;
  /** Where the local track's last queued audio ends. */
  private localEnd = 0;
  private queue: Queued[] = [];
  private requeueing = false;
  private readonly digitListeners = new Set<(key: string) => void>();
  private readonly timeoutListeners = new Set<() => void>();
  private readonly drainListeners = new Set<() => void>();
  private finalStats: RtpSessionStats | undefined;

  /** RTP timeout bookkeeping: packets received at the last check, and the tick they last changed. */
  private receivedAtCheck = 0;
  private quietSince = 0;
  private readonly timeoutTicks: number;

  private constructor(
    readonly session: RtpSession,
    private readonly log: Logger | undefined,
    timeoutSeconds: number,
  ) {
    this.timeoutTicks = Math.round((timeoutSeconds * SAMPLE_RATE) / FRAME_SAMPLES);
  }

  /** Binds a port pair (RtpBindError when the range is full); `start` once the call is answered. */
  static async open(options: CallMediaOptions, log?: Logger): Promise<CallMedia> {
    let media: CallMedia | undefined;
    const session = await RtpSession.open({
      address: options.address,
      portMin: options.portMin,
      portMax: options.portMax,
      // The timeout is kept here (suspended on hold, restarted on resume), not by the session's one-shot event.
      timeoutSeconds: 0,
      pacer: options.pacer ?? processPacer(),
      // The negotiated telephone-event decides (in-band detection when the peer offered none).
      events: {
        audio: (samples, frame) => media?.tick(samples, frame.kind),
        dtmf: (digit) => media?.digit(digit),
        drained: () => media?.drained(),
      },
    });
    media = new CallMedia(session, log, options.timeoutSeconds);
    return media;
  }

  get port(): number {
    return this.session.localPort;
  }

  get parameters(): Negotiated | undefined {
    return this.media;
  }

  /** Sets (or, on a re-INVITE, updates) what was negotiated. */
  configure(media: Negotiated): void {
    const before = this.media;
    this.media = media;
    if (!this.started || this.closed) return;
    if (before?.remote.address !== media.remote.address || before.remote.port !== media.remote.port) {
      if (media.remote.port > 0 && media.remote.address !== "0.0.0.0") this.session.setRemote(media.remote);
    }
    this.session.setSending(!media.hold);
    // The timeout counts again from a resume.
    if (before?.hold === true && !media.hold) this.quietSince = this.ticks;
  }

  /** Starts sending and playing out (the call is answered). */
  start(): void {
    if (this.started || this.closed || this.media === undefined) return;
    this.started = true;
    const m = this.media;
    const held = m.hold || m.remote.port === 0 || m.remote.address === "0.0.0.0";
    this.session.start({
      codec: m.codec as RtpCodec,
      telephoneEventPayloadType: m.telephoneEvent,
      // A held call's c=0.0.0.0 still needs an address to start with; nothing is sent to it.
      remote:
        held && (m.remote.port === 0 || m.remote.address === "0.0.0.0")
          ? { address: "127.0.0.1", port: 9 }
          : m.remote,
    });
    this.session.setSending(!held);
  }

  /** Samples since start, now. */
  position(): number {
    return this.ticks * FRAME_SAMPLES;
  }

  private tick(samples: Int16Array, kind: "audio" | "concealed" | "silence"): void {
    // Silence is what the track renders where nothing was put: not kept.
    if (kind !== "silence") {
      this.remoteTrack.append(this.position(), samples);
      if (this.audioListeners.size > 0) {
        const copy = samples.slice();
        for (const l of this.audioListeners) l(copy);
      }
    }
    this.ticks++;
    if (this.ticks % PRUNE_TICKS === 0) this.prune();
    if (this.ticks % TIMEOUT_CHECK_TICKS === 0 && this.timeoutTicks > 0) this.checkTimeout();
  }

  /**
   * Keeps the tracks' audio from `at` on until released: without a hold the
   * tracks keep only the last 0.5 s, so a call nobody records holds no more
   * than that, however long it lasts.
   */
  hold(at: number): TrackHold {
    const holds = this.holds;
    const hold: TrackHold = {
      at,
      release() {
        holds.delete(hold);
      },
    };
    holds.add(hold);
    return hold;
  }

  private prune(): void {
    let keep = this.position() - HISTORY_SAMPLES;
    for (const h of this.holds) keep = Math.min(keep, h.at);
    this.remoteTrack.prune(keep);
    this.localTrack.prune(keep);
    this.bridgeTrack.prune(keep);
  }

  /** Once a second: no RTP (audio or telephone-event) since quietSince for the timeout, not on hold. */
  private checkTimeout(): void {
    const received = this.session.stats().received.packets;
    if (received !== this.receivedAtCheck || this.media?.hold) {
      this.receivedAtCheck = received;
      this.quietSince = this.ticks;
      return;
    }
    if (this.ticks - this.quietSince >= this.timeoutTicks) {
      this.quietSince = Number.POSITIVE_INFINITY; // once
      this.timedOut();
    }
  }

  private digit(key: string): void {
    for (const l of [...this.digitListeners]) l(key);
  }

  private timedOut(): void {
    if (this.closed) return;
    for (const l of [...this.timeoutListeners]) l();
  }

  private drained(): void {
    for (const l of [...this.drainListeners]) l();
  }

  /** Everything queued has been sent. */
  onDrained(listener: () => void): () => void {
    this.drainListeners.add(listener);
    return () => this.drainListeners.delete(listener);
  }

  /** RTP packets sent and received so far (tests, logs). */
  get sent(): number {
    return this.stats().sent.packets;
  }

  get received(): number {
    return this.stats().received.packets;
  }

  /** Each 20 ms frame of the peer's audio as it is played out (not the silence when nothing came). */
  onAudio(listener: (samples: Int16Array) => void): () => void {
    this.audioListeners.add(listener);
    return () => this.audioListeners.delete(listener);
  }

  /** Sends a key to the peer: RFC 4733 when it offered telephone-event, else an in-band tone. */
  sendDtmf(key: string): void {
    if (!this.closed && this.started) this.session.sendDtmf(key);
  }

  onDigit(listener: (key: string) => void): () => void {
    this.digitListeners.add(listener);
    return () => this.digitListeners.delete(listener);
  }

  /** No RTP for RTP_TIMEOUT_SECONDS while the call is not held. */
  onTimeout(listener: () => void): () => void {
    this.timeoutListeners.add(listener);
    return () => this.timeoutListeners.delete(listener);
  }

  /** A SIP INFO body of the call's dialog (application/dtmf-relay or application/dtmf). */
  dtmfInfo(contentType: string, body: string): { digit: string } | { error: string } {
    if (this.closed) return { error: "the call's media has ended" };
    if (contentType === "application/dtmf") {
      // RFC 6086's application/dtmf: the key alone.
      const key = body.trim();
      if (!/^[0-9*#A-Da-d]$/.test(key))
        return { error: `not a DTMF key: ${JSON.stringify(key.slice(0, 8))}` };
      this.session.dtmfRelay(`Signal=${key.toUpperCase()}\r\n`);
      return { digit: key.toUpperCase() };
    }
    const relay = this.session.dtmfRelay(body);
    return "error" in relay ? relay : { digit: relay.digit };
  }

  /**
   * Queues audio; resolves true once sent, false when cleared or the media
   * closed first. `track`: where recordings find it (localTrack; a bridge's
   * relay goes in bridgeTrack).
   */
  send(samples: Int16Array, owner: unknown = undefined, track: Track = this.localTrack): Promise<boolean> {
    if (this.closed || !this.started) return Promise.resolve(false);
    if (samples.length === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const at = Math.max(this.position(), this.localEnd);
      const chunk = track.put(at, samples);
      const item: Queued = { pending: samples.length, chunk, owner, done: resolve, settled: false };
      this.localEnd = at + samples.length;
      this.queue.push(item);
      this.session.play(samples, (sent) => this.settle(item, sent));
    });
  }

  private settle(item: Queued, sent: boolean): void {
    if (this.requeueing || item.settled) return;
    item.settled = true;
    this.queue = this.queue.filter((q) => q !== item);
    item.done(sent);
  }

  /** Drops the queued audio of `owner` (the frame being sent plays out); the rest plays on. */
  clear(owner: unknown): void {
    if (!this.queue.some((q) => q.owner === owner)) return;
    // What is left of each item: the first is partly sent.
    const remaining = Math.round(this.session.queued * 8);
    const left = this.queue.map((q) => q.pending);
    const rest = left.slice(1).reduce((a, b) => a + b, 0);
    left[0] = Math.max(0, remaining - rest);
    const items = this.queue;
    this.requeueing = true;
    this.session.clear();
    this.requeueing = false;
    this.queue = [];
    // Where what has gone out ends; what plays on follows from there.
    let cut = this.localEnd - remaining;
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      const whole = item.chunk.samples;
      const sent = whole.length - left[i]!;
      if (item.owner === owner) {
        item.chunk.samples = whole.subarray(0, sent); // the track keeps what went out
        item.settled = true;
        item.done(false);
        continue;
      }
      item.chunk.at = cut - sent;
      item.pending = left[i]!;
      cut += left[i]!;
      this.queue.push(item);
      this.session.play(whole.subarray(sent), (ok) => this.settle(item, ok));
    }
    this.localEnd = cut;
    this.localTrack.changed();
    this.bridgeTrack.changed();
  }

  /** Samples queued by `owner` and not sent yet. */
  queued(owner: unknown): number {
    if (this.queue.length === 0) return 0;
    const remaining = Math.round(this.session.queued * 8);
    let n = 0;
    let rest = 0;
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const q = this.queue[i]!;
      const size = i === 0 ? Math.max(0, remaining - rest) : q.pending;
      if (q.owner === owner) n += size;
      rest += size;
    }
    return n;
  }

  /** The call's RTP figures (the last ones once closed). */
  stats(): RtpSessionStats {
    return this.finalStats ?? this.session.stats();
  }

  /** Stops sending (queued audio resolves false), sends RTCP BYE, closes the sockets, records the call's figures. Idempotent. */
  close(callId?: string): void {
    if (this.closed) return;
    this.closed = true;
    this.digitListeners.clear();
    this.timeoutListeners.clear();
    this.audioListeners.clear();
    this.drainListeners.clear();
    const started = this.started;
    this.finalStats = this.session.stats();
    void this.session.close().catch(() => {});
    for (const q of this.queue.splice(0)) {
      if (!q.settled) {
        q.settled = true;
        q.done(false);
      }
    }
    if (!started) return;
    const s = this.finalStats;
    recordCallRtp(s);
    this.log?.info(
      {
        call: callId,
        rtp: {
          codec: s.codec,
          packetsSent: s.sent.packets,
          packetsReceived: s.received.packets,
          lost: s.cumulativeLost,
          jitterMs: Math.round(s.jitterMs * 10) / 10,
          remoteLost: s.remote?.cumulativeLost,
          remoteFractionLost: s.remote?.fractionLost,
          remoteJitterMs: s.remote === undefined ? undefined : Math.round(s.remote.jitterMs * 10) / 10,
          rttMs: s.rttMs,
          concealed: s.jitterBuffer.lost,
          late: s.jitterBuffer.late,
          malformed: s.counters.malformed,
          rejected: s.counters.rejected,
        },
      },
      "call RTP figures",
    );
  }
}
