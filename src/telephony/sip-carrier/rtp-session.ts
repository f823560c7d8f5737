/**
 * The RTP of one call (just enough to prove audio both ways; full media is
 * issue #28): G.711 (PCMU/PCMA, 8 kHz, 20 ms packets) sent and received on
 * the call's own UDP socket, and RFC 4733 telephone-events received.
 *
 * Sending: audio is queued (say, play, a media fork's input) and sent 160
 * samples a packet, paced by a FrameClock (src/media/frame-clock.ts) on real
 * time from `start()`: frame k (k = 1, 2, ...) leaves at boundary k with
 * timestamp base + 160 (k - 1), consecutive sequence numbers, one random
 * SSRC, the marker bit on the first packet of each talkspurt (after a frame
 * with nothing queued, which sends nothing). A short last frame is padded
 * with silence. While the peer holds the call (sendonly / inactive) frames
 * pass without being sent. Symmetric RTP: packets go to the SDP's address
 * until a packet arrives, then to where packets come from.
 *
 * Receiving: packets of the negotiated payload type are decoded into the
 * remote party's track, placed by RTP timestamp (the first packet of each
 * SSRC starts where the track is when it arrives; the others follow by
 * timestamp), so captures hold what
 * the peer sent, in order; what we sent is kept the same way. Tracks are in
 * samples from `start()`. telephone-events: each press reported once (the
 * first packet of an event timestamp).
 */
import type dgram from "node:dgram";
import { FrameClock, schedulerTimers } from "../../media/frame-clock.js";
import type { G711 } from "../../sip/sdp.js";
import { decodeG711, encodeG711 } from "../g711.js";
import type { Scheduler } from "../scheduler.js";
import { readRtp, readTelephoneEvent, writeRtp } from "./rtp-packet.js";

export const SAMPLE_RATE = 8000;
export const FRAME_SAMPLES = 160;
const FRAME_SECONDS = FRAME_SAMPLES / SAMPLE_RATE;

/** What the peer and we agreed (SDP offer/answer, src/sip/sdp.ts). */
export interface RtpParameters {
  codec: G711;
  payloadType: number;
  telephoneEvent: number | undefined;
  remote: { address: string; port: number };
  /** The peer holds the call: nothing is sent. */
  hold: boolean;
}

interface Queued {
  samples: Int16Array;
  offset: number;
  owner: unknown;
  done: (completed: boolean) => void;
}

/** Audio placed on a timeline of samples from the session's start. */
class Track {
  private readonly chunks: Array<{ at: number; samples: Int16Array }> = [];
  /** Where the last sample written ends (samples from start). */
  end = 0;

  put(at: number, samples: Int16Array): void {
    if (at < 0) return;
    this.chunks.push({ at, samples });
    this.end = Math.max(this.end, at + samples.length);
  }

  /** Samples [from, to) mixed by addition into `out` (clipped), zeros where nothing was. */
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

function random32(): number {
  return Math.floor(Math.random() * 0x1_0000_0000) >>> 0;
}

export class RtpSession {
  /** What the peer sent us. */
  readonly remoteTrack = new Track();
  /** What we sent the peer. */
  readonly localTrack = new Track();
  private params: RtpParameters | undefined;
  private latched: { address: string; port: number } | undefined;
  private clock: FrameClock | undefined;
  private startMs = 0;
  private readonly queue: Queued[] = [];
  private readonly ssrc = random32();
  private sequence = random32() & 0xffff;
  private readonly timestampBase = random32();
  private talking = false;
  private closed = false;
  /** Per remote SSRC: the sample position of its first packet and that packet's timestamp. */
  private readonly anchors = new Map<number, { at: number; timestamp: number }>();
  private readonly seenEvents = new Set<string>();
  private readonly digitListeners = new Set<(key: string) => void>();
  private readonly drainListeners = new Set<() => void>();
  /** Packets sent and received (tests, logs). */
  sent = 0;
  received = 0;

  constructor(
    readonly socket: dgram.Socket,
    private readonly scheduler: Scheduler,
    /** The address written in our SDP. */
    readonly advertisedAddress: string,
  ) {
    socket.on("message", (data, from) => this.receive(data, { address: from.address, port: from.port }));
  }

  get port(): number {
    return this.socket.address().port;
  }

  get parameters(): RtpParameters | undefined {
    return this.params;
  }

  /** Sets (or, on a re-INVITE, updates) what was negotiated. */
  configure(params: RtpParameters): void {
    const moved =
      this.params !== undefined &&
      (this.params.remote.address !== params.remote.address ||
        this.params.remote.port !== params.remote.port);
    if (moved) this.latched = undefined;
    this.params = params;
  }

  /** Starts the media clock (the call is answered). */
  start(): void {
    if (this.clock !== undefined || this.closed) return;
    this.startMs = this.scheduler.now().getTime();
    this.clock = new FrameClock(schedulerTimers(this.scheduler), FRAME_SECONDS, (k) => this.frame(k));
  }

  /** Samples since start, now. */
  position(): number {
    if (this.clock === undefined) return 0;
    return Math.max(0, Math.round(((this.scheduler.now().getTime() - this.startMs) * SAMPLE_RATE) / 1000));
  }

  /** Queues audio; resolves true once sent, false when cleared or the session closed first. */
  send(samples: Int16Array, owner: unknown = undefined): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (samples.length === 0) return Promise.resolve(true);
    return new Promise((done) => this.queue.push({ samples, offset: 0, owner, done }));
  }

  /** Drops the queued audio of `owner` (what is in the frame being sent plays out). */
  clear(owner: unknown): void {
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const q = this.queue[i]!;
      if (q.owner !== owner) continue;
      this.queue.splice(i, 1);
      q.done(false);
    }
  }

  /** Samples queued by `owner` and not sent yet. */
  queued(owner: unknown): number {
    let n = 0;
    for (const q of this.queue) if (q.owner === owner) n += q.samples.length - q.offset;
    return n;
  }

  onDigit(listener: (key: string) => void): () => void {
    this.digitListeners.add(listener);
    return () => this.digitListeners.delete(listener);
  }

  onDrained(listener: () => void): () => void {
    this.drainListeners.add(listener);
    return () => this.drainListeners.delete(listener);
  }

  private frame(k: number): void {
    const frame = new Int16Array(FRAME_SAMPLES);
    let filled = 0;
    const finished: Queued[] = [];
    while (filled < FRAME_SAMPLES && this.queue.length > 0) {
      const q = this.queue[0]!;
      const n = Math.min(FRAME_SAMPLES - filled, q.samples.length - q.offset);
      frame.set(q.samples.subarray(q.offset, q.offset + n), filled);
      filled += n;
      q.offset += n;
      if (q.offset >= q.samples.length) finished.push(this.queue.shift()!);
    }
    if (filled === 0) {
      this.talking = false;
      return;
    }
    const at = (k - 1) * FRAME_SAMPLES;
    this.localTrack.put(at, frame);
    const params = this.params;
    const to = this.latched ?? params?.remote;
    if (params !== undefined && to !== undefined && !params.hold && to.port > 0) {
      const packet = writeRtp({
        payloadType: params.payloadType,
        marker: !this.talking,
        sequence: this.sequence,
        timestamp: (this.timestampBase + at) >>> 0,
        ssrc: this.ssrc,
        payload: Buffer.from(encodeG711(params.codec === "PCMU" ? "mulaw" : "alaw", frame)),
      });
      this.sequence = (this.sequence + 1) & 0xffff;
      this.talking = true;
      this.sent++;
      this.socket.send(packet, to.port, to.address);
    }
    for (const q of finished) q.done(true);
    if (this.queue.length === 0 && finished.length > 0) for (const l of [...this.drainListeners]) l();
  }

  private receive(data: Buffer, from: { address: string; port: number }): void {
    if (this.closed) return;
    const packet = readRtp(data);
    const params = this.params;
    if (packet === undefined || params === undefined) return;
    this.latched = from;
    this.received++;
    if (packet.payloadType === params.telephoneEvent) {
      const event = readTelephoneEvent(packet.payload);
      const id = `${packet.ssrc}:${packet.timestamp}`;
      if (event === undefined || this.seenEvents.has(id)) return;
      this.seenEvents.add(id);
      for (const l of [...this.digitListeners]) l(event.key);
      return;
    }
    if (packet.payloadType !== params.payloadType || this.clock === undefined) return;
    let anchor = this.anchors.get(packet.ssrc);
    if (anchor === undefined) {
      anchor = { at: this.position(), timestamp: packet.timestamp };
      this.anchors.set(packet.ssrc, anchor);
    }
    // Signed 32-bit difference: packets a little before the anchor land before it.
    const delta = ((packet.timestamp - anchor.timestamp) << 0) | 0;
    const samples = decodeG711(params.codec === "PCMU" ? "mulaw" : "alaw", packet.payload);
    this.remoteTrack.put(anchor.at + delta, samples);
  }

  /** Stops sending (queued audio resolves false) and closes the socket. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.clock?.stop();
    for (const q of this.queue.splice(0)) q.done(false);
    this.digitListeners.clear();
    this.drainListeners.clear();
    try {
      this.socket.close();
    } catch {
      // Already closed.
    }
  }
}
