/**
 * An RTP session: one call leg's audio over UDP, G.711 (PCMU or PCMA,
 * chosen at start) at 8 kHz in 20 ms frames, with RFC 4733 DTMF when the
 * remote negotiated a telephone-event payload type and in-band tones when
 * not. It joins the pieces of this folder:
 *
 * - Sockets (./ports.ts): RTP on an even port picked from [portMin,
 *   portMax] (tried from a random start, every even port once; 0–0: any
 *   free pair), RTCP on the next port. A session can open before the SDP answer (its port goes in
 *   the offer) and `start` once codec and remote are known.
 * - Symmetric RTP: packets go to the address the SDP gave until the first
 *   valid packet arrives (parsed, our codec's or telephone-event's payload
 *   type) from that address — any port, for endpoints behind NAT — or from
 *   anywhere with `latch: "any"`; from then on they go to where that packet
 *   came from, and packets from elsewhere are dropped (`rejected`). RTCP
 *   latches the same way on its own socket. `setRemote` (a re-INVITE)
 *   starts over.
 * - Sending: the shared Pacer asks for a frame every 20 ms: a DTMF event's
 *   next packet if one is under way, else the next 160 samples of what
 *   `play` queued (in-band DTMF tones first), else silence — RTP flows for
 *   the whole session, so the remote's own timeout never fires (except on
 *   hold: `setSending(false)`). Sequence +1 and timestamp +160 per frame,
 *   SSRC fixed, marker on the first packet (and the first after a hold);
 *   packets are written into a ring of reused buffers, each busy until the
 *   socket has sent it (the ring grows when a late wake-up sends a burst).
 * - Receiving: packets into the jitter buffer (./jitter-buffer.ts), played
 *   out on the same pacer: `audio` every 20 ms from the start (silence
 *   until audio comes). telephone-event packets through the decoder, each
 *   press once (`dtmf`, method "rfc4733"); in-band detection on the played
 *   audio when enabled (default: when no telephone-event was negotiated;
 *   method "inband"); SIP INFO bodies handed to `dtmfRelay` (method
 *   "sip-info"). `timeout` once when no RTP has come for
 *   `timeoutSeconds` (the session keeps running; the owner decides).
 * - RTCP: an SR with a report block and an SDES CNAME every
 *   `rtcpIntervalSeconds` (default 5), a BYE at close; the remote's
 *   reports feed `stats()` (./stats.ts plus the jitter buffer's counters).
 *
 * Nothing thrown by a malformed datagram leaves the socket handlers:
 * anything unreadable is counted (`malformed`) and dropped.
 */
import type dgram from "node:dgram";
import net from "node:net";
import { pooledRandomBytes } from "../random-pool.js";
import { decodeG711Into, type G711Encoding } from "../telephony/g711.js";
import { DtmfDetector } from "./dtmf-detector.js";
import { dtmfTone } from "./dtmf-tone.js";
import { encodeInto, g711EncodeTable } from "./g711-tables.js";
import { JitterBuffer, type JitterCounters, type PlayedFrame } from "./jitter-buffer.js";
import type { PacedStream, Pacer } from "./pacer.js";
import { parseRtp, type RtpPacket, RtpParseError, writeRtp } from "./packet.js";
import { bindPair, closeSocket } from "./ports.js";
import { buildRtcp, parseRtcp, type RtcpPacket, RtcpParseError, SDES_CNAME } from "./rtcp.js";
import { RtpStats, type RtpStatsSnapshot } from "./stats.js";
import {
  type DtmfPress,
  type DtmfRelay,
  dtmfEvent,
  type EventPacket,
  encodeDtmfPress,
  parseDtmfRelay,
  TelephoneEventDecoder,
} from "./telephone-event.js";

export type RtpCodec = "PCMU" | "PCMA";

/** The static payload types of RFC 3551. */
export const CODEC_PAYLOAD_TYPES: Record<RtpCodec, number> = { PCMU: 0, PCMA: 8 };

const ENCODINGS: Record<RtpCodec, G711Encoding> = { PCMU: "mulaw", PCMA: "alaw" };
const FRAME_SAMPLES = 160;
const FRAME_MS = 20;
/** Decoded 20 ms frames a session keeps for reuse (its jitter buffer holds at most 12). */
const FRAME_POOL = 16;
/** Send buffers to start with (the ring grows when a late wake-up sends more frames at once). */
const SEND_RING = 4;

/**
 * A reused send buffer. The socket sends after the current tick (dgram
 * resolves the address first), so a buffer is busy from being written until
 * its send's callback; a busy buffer is never written over.
 */
interface SendSlot {
  buffer: Uint8Array;
  busy: boolean;
  /** The send's callback (made once per slot, not per packet). */
  done: () => void;
}

function sendSlot(): SendSlot {
  const slot: SendSlot = {
    buffer: new Uint8Array(12 + FRAME_SAMPLES),
    busy: false,
    done: () => {
      slot.busy = false;
    },
  };
  return slot;
}

export interface RtpAddress {
  address: string;
  port: number;
}

/** Where the SDP says to send: an IP address and port, and RTCP's port (default port + 1). */
export type RtpRemote = RtpAddress & { rtcpPort?: number | undefined };

/** What the offer/answer settled: what `start` takes. */
export interface RtpMedia {
  codec: RtpCodec;
  /** The negotiated telephone-event payload type; undefined when the remote offered none. */
  telephoneEventPayloadType?: number | undefined;
  remote: RtpRemote;
}

export interface RtpSessionEvents {
  /** Every 20 ms: the played-out frame (160 samples) and what it is; the samples are reused after the call returns (copy to keep them). */
  audio?(samples: Int16Array, frame: { kind: PlayedFrame["kind"]; sequence?: number | undefined }): void;
  /** A key pressed by the remote, reported once. */
  dtmf?(
    digit: string,
    info: { method: "rfc4733" | "inband" | "sip-info"; durationMs?: number | undefined },
  ): void;
  /** No RTP for timeoutSeconds (once). */
  timeout?(): void;
  /** What `play` queued has all been sent. */
  drained?(): void;
}

export interface RtpSessionOptions {
  /** Local address to bind (default 0.0.0.0; "::" for IPv6). */
  address?: string;
  /** The RTP port range (inclusive); RTP takes an even port, RTCP the next. 0 and 0: any free pair (tests). */
  portMin: number;
  portMax: number;
  /** The codec; with `remote`, the session starts at once (else at `start`, once the SDP answer is in). */
  codec?: RtpCodec | undefined;
  /** The negotiated telephone-event payload type; undefined when the remote offered none. */
  telephoneEventPayloadType?: number | undefined;
  /** Where the SDP says to send (RTCP: `rtcpPort`, default port + 1). */
  remote?: RtpRemote | undefined;
  /** Latch to the first valid packet from the remote's address (default) or from any address. */
  latch?: "address" | "any";
  /** Seconds without RTP before `timeout` (default 30; 0: never). */
  timeoutSeconds?: number;
  /** Jitter buffer depth (default 60 ms). */
  jitterMs?: number;
  /** Seconds between RTCP reports (default 5). */
  rtcpIntervalSeconds?: number;
  /** Detect in-band DTMF on received audio (default: when no telephone-event payload type). */
  inbandDtmf?: boolean;
  /** Our SSRC (default random). */
  ssrc?: number;
  /** SDES CNAME (default "switchboard@<local address>"). */
  cname?: string;
  /** The process's pacing clock. */
  pacer: Pacer;
  events?: RtpSessionEvents;
}

/** Counters beyond RTCP's statistics. */
export interface RtpSessionCounters {
  /** Datagrams that are not RTP (or RTCP, on its port). */
  malformed: number;
  /** Packets from an address other than the latched one. */
  rejected: number;
  /** Packets of a payload type not negotiated (comfort noise, ...). */
  unknownPayload: number;
  /** Errors thrown while handling a datagram (a bug; counted, never thrown). */
  errors: number;
}

export interface RtpSessionStats extends RtpStatsSnapshot {
  /** Undefined before `start`. */
  codec: RtpCodec | undefined;
  localPort: number;
  /** Where packets go now, "address:port" (undefined before `start`). */
  sendingTo: string | undefined;
  latched: boolean;
  jitterBuffer: JitterCounters;
  counters: RtpSessionCounters;
}

export class RtpSession {
  readonly ssrc: number;
  /** The codec (undefined before `start`). */
  codec: RtpCodec | undefined;
  /** The codec's payload type (−1, matching no packet, before `start`). */
  private payloadType = -1;
  /** G.711 encoding by table (./g711-tables.ts). */
  private table: Uint8Array = g711EncodeTable("mulaw");
  private encoding: G711Encoding = "mulaw";
  private te: number | undefined;
  private readonly latchAny: boolean;
  private remote: RtpRemote | undefined;
  private sendTo: RtpAddress = { address: "", port: 0 };
  private rtcpTo: RtpAddress | undefined;
  private latched = false;
  private rtcpLatched = false;
  private readonly stats_: RtpStats;
  private readonly jitter: JitterBuffer;
  private readonly decoder = new TelephoneEventDecoder();
  private detector: DtmfDetector | undefined;
  private readonly events: RtpSessionEvents;
  private readonly counters: RtpSessionCounters = { malformed: 0, rejected: 0, unknownPayload: 0, errors: 0 };
  private removeSender: (() => void) | undefined;
  private removePlayout: (() => void) | undefined;
  // Sending state.
  private sequence: number;
  private timestamp: number;
  private first = true;
  private sending = true;
  /** The timestamp of the last frame sent and when it was sent. */
  private lastFrameTimestamp = 0;
  private lastFrameMs: number | undefined;
  private readonly ring = Array.from({ length: SEND_RING }, sendSlot);
  private ringAt = 0;
  /** The slot nextFrame wrote, for send. */
  private written: SendSlot | undefined;
  private readonly payload = new Uint8Array(FRAME_SAMPLES);
  private readonly header: RtpPacket;
  private queue: Array<{ samples: Int16Array; done: ((sent: boolean) => void) | undefined }> = [];
  private queueOffset = 0;
  private queuedSamples = 0;
  private inband: Int16Array[] = [];
  private inbandOffset = 0;
  /** Presses to send as telephone-events, each its packets. */
  private presses: EventPacket[][] = [];
  /** The press being sent. */
  private event: { packets: EventPacket[]; at: number; timestamp: number } | undefined;
  // Receiving state.
  /** Decoded frames the jitter buffer gave back, to decode into again. */
  private readonly frames: Int16Array[] = [];
  private lastRtpMs: number;
  private timedOut = false;
  private readonly timeoutMs: number;
  private readonly rtcpEveryTicks: number;
  private ticks = 0;
  private closed = false;
  private readonly cname: string;

  private constructor(
    private readonly options: RtpSessionOptions,
    private readonly rtp: dgram.Socket,
    private readonly rtcp: dgram.Socket,
    readonly localPort: number,
  ) {
    this.latchAny = options.latch === "any";
    const random = pooledRandomBytes(10);
    this.ssrc = options.ssrc ?? random.readUInt32BE(0);
    this.sequence = random.readUInt16BE(4);
    this.timestamp = random.readUInt32BE(6);
    this.stats_ = new RtpStats(this.ssrc);
    this.jitter = new JitterBuffer({
      depthMs: options.jitterMs ?? 60,
      // Frames come back to be decoded into again: no allocation per packet.
      release: (samples) => {
        if (samples.length === FRAME_SAMPLES && this.frames.length < FRAME_POOL) this.frames.push(samples);
      },
    });
    this.events = options.events ?? {};
    this.timeoutMs = (options.timeoutSeconds ?? 30) * 1000;
    this.rtcpEveryTicks = Math.max(1, Math.round(((options.rtcpIntervalSeconds ?? 5) * 1000) / FRAME_MS));
    this.cname = options.cname ?? `switchboard@${options.address ?? "0.0.0.0"}`;
    this.header = {
      padding: 0,
      marker: false,
      payloadType: this.payloadType,
      sequence: 0,
      timestamp: 0,
      ssrc: this.ssrc,
      csrc: [],
      payload: this.payload,
    };
    this.lastRtpMs = this.now();
    rtp.on("message", (msg, rinfo) => this.onRtp(msg, rinfo));
    rtcp.on("message", (msg, rinfo) => this.onRtcp(msg, rinfo));
    // Send errors (ICMP unreachable, ...) arrive here; a session must not crash the process for them.
    rtp.on("error", () => this.counters.errors++);
    rtcp.on("error", () => this.counters.errors++);
  }

  /**
   * Starts sending and playing out with what the offer/answer settled (open
   * does it when given codec and remote). RangeError for bad media; Error
   * when already started or closed (a re-INVITE's new address: setRemote).
   */
  start(media: RtpMedia): void {
    if (this.closed) throw new Error("the RTP session is closed");
    if (this.codec !== undefined) throw new Error("the RTP session has started already");
    checkMedia(media);
    this.codec = media.codec;
    this.payloadType = CODEC_PAYLOAD_TYPES[media.codec];
    this.encoding = ENCODINGS[media.codec];
    this.table = g711EncodeTable(this.encoding);
    this.te = media.telephoneEventPayloadType;
    this.header.payloadType = this.payloadType;
    this.detector = (this.options.inbandDtmf ?? this.te === undefined) ? new DtmfDetector() : undefined;
    this.setRemote(media.remote);
    this.lastRtpMs = this.now();
    const sender: PacedStream = {
      nextFrame: () => this.nextFrame(),
      send: (packet) => {
        const slot = this.written;
        this.written = undefined;
        this.rtp.send(packet, this.sendTo.port, this.sendTo.address, slot?.done);
      },
    };
    const playout: PacedStream = {
      nextFrame: () => {
        this.playoutTick();
        return undefined;
      },
      send: () => {},
    };
    this.removeSender = this.options.pacer.add(sender);
    this.removePlayout = this.options.pacer.add(playout);
  }

  /**
   * Binds a port pair from the range (RtpBindError when none is free) and,
   * given codec and remote, starts; else `start` does once the answer is in
   * (until then nothing is sent and every packet is dropped as `rejected`).
   */
  static async open(options: RtpSessionOptions): Promise<RtpSession> {
    checkOptions(options);
    const media =
      options.codec !== undefined && options.remote !== undefined
        ? {
            codec: options.codec,
            telephoneEventPayloadType: options.telephoneEventPayloadType,
            remote: options.remote,
          }
        : undefined;
    if (media !== undefined) checkMedia(media);
    const address = options.address ?? "0.0.0.0";
    const pair = await bindPair(
      net.isIPv6(address) ? "udp6" : "udp4",
      address,
      options.portMin,
      options.portMax,
    );
    const session = new RtpSession(options, pair.rtp, pair.rtcp, pair.port);
    if (media !== undefined) session.start(media);
    return session;
  }

  /**
   * Queues 8 kHz PCM to send after what is queued. `done` is called once:
   * true when its last sample has gone out, false when `clear` or `close`
   * dropped it first (a closed session calls it false at once).
   */
  play(pcm: Int16Array, done?: (sent: boolean) => void): void {
    if (this.closed) {
      done?.(false);
      return;
    }
    if (pcm.length === 0) {
      done?.(true);
      return;
    }
    this.queue.push({ samples: pcm, done });
    this.queuedSamples += pcm.length;
  }

  /** Drops what `play` queued and not yet sent (their `done` called with false). */
  clear(): void {
    const dropped = this.queue;
    this.queue = [];
    this.queueOffset = 0;
    this.queuedSamples = 0;
    for (const item of dropped) item.done?.(false);
  }

  /** Milliseconds of queued audio not yet sent. */
  get queued(): number {
    return this.queuedSamples / 8;
  }

  /**
   * Sends a key press: as RFC 4733 events when a telephone-event payload
   * type was negotiated, else as an in-band tone (then 50 ms of silence)
   * sent ahead of queued audio. RangeError for a key that is not DTMF.
   */
  sendDtmf(digit: string, durationMs = 100): void {
    if (dtmfEvent(digit) === undefined) throw new RangeError(`not a DTMF key: ${JSON.stringify(digit)}`);
    if (this.closed) return;
    if (this.te !== undefined) {
      this.presses.push(encodeDtmfPress(digit, { durationMs }));
    } else {
      this.inband.push(dtmfTone(digit, { durationMs, pauseMs: 50 }));
    }
  }

  /**
   * A SIP INFO `application/dtmf-relay` body of this call (the signalling
   * side hands it over, so every way a key comes in ends in `dtmf`): the
   * press is reported with method "sip-info"; what the body holds is
   * returned, or what is wrong with it (then nothing is reported).
   */
  dtmfRelay(body: string): DtmfRelay | { error: string } {
    const relay = parseDtmfRelay(body);
    if (!("error" in relay) && !this.closed) {
      this.events.dtmf?.(relay.digit, { method: "sip-info", durationMs: relay.durationMs });
    }
    return relay;
  }

  /** Where packets go from now on (a re-INVITE); latching starts over. */
  setRemote(remote: RtpRemote): void {
    checkRemote(remote);
    this.remote = { ...remote };
    this.sendTo = { address: remote.address, port: remote.port };
    this.rtcpTo = undefined;
    this.latched = false;
    this.rtcpLatched = false;
  }

  stats(): RtpSessionStats {
    return {
      ...this.stats_.snapshot(),
      codec: this.codec,
      localPort: this.localPort,
      sendingTo: this.remote === undefined ? undefined : `${this.sendTo.address}:${this.sendTo.port}`,
      latched: this.latched,
      jitterBuffer: { ...this.jitter.counters },
      counters: { ...this.counters },
    };
  }

  /** Stops sending and playing out, sends an RTCP BYE, closes the sockets. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.removeSender?.();
    this.removePlayout?.();
    this.clear();
    for (const press of this.decoder.flush()) this.reportPress(press);
    if (this.remote === undefined) {
      await Promise.all([closeSocket(this.rtp), closeSocket(this.rtcp)]);
      return;
    }
    const bye = buildRtcp([...this.reports(), { type: "bye", ssrcs: [this.ssrc] }]);
    await new Promise<void>((resolve) => {
      const to = this.rtcpTarget();
      this.rtcp.send(bye, to.port, to.address, () => resolve());
    });
    await Promise.all([closeSocket(this.rtp), closeSocket(this.rtcp)]);
  }

  private now(): number {
    return this.options.pacer.timers.nowMs();
  }

  // --- Sending ---

  private nextFrame(): Uint8Array | undefined {
    const frameTimestamp = this.timestamp;
    this.timestamp = (this.timestamp + FRAME_SAMPLES) >>> 0;
    const press = this.event === undefined ? this.presses.shift() : undefined;
    if (press !== undefined) {
      // Every packet of a press carries the timestamp of its first (RFC 4733 §2.5.1.2).
      this.event = { packets: press, at: 0, timestamp: frameTimestamp };
    }
    const ev = this.event;
    let event: EventPacket | undefined;
    if (ev !== undefined && this.te !== undefined) {
      event = ev.packets[ev.at++]!;
      if (ev.at >= ev.packets.length) this.event = undefined;
    } else {
      this.fillAudio();
    }
    // On hold the frame's time passes (queued audio included) and nothing is sent; the
    // sequence numbers go on from the last packet sent, and the next one is marked.
    if (!this.sending) {
      this.first = true;
      return undefined;
    }
    this.lastFrameTimestamp = frameTimestamp;
    this.lastFrameMs = this.now();
    this.header.sequence = this.sequence;
    this.sequence = (this.sequence + 1) & 0xffff;
    const marker = this.first;
    this.first = false;
    if (event !== undefined) return this.write(this.te!, event.marker, ev!.timestamp, event.payload);
    return this.write(this.payloadType, marker, frameTimestamp, this.payload);
  }

  /**
   * Whether frames are sent (default true). False while the remote holds
   * the call (its SDP sendonly or inactive): time passes, queued audio with
   * it, and nothing goes out; RTCP still does.
   */
  setSending(on: boolean): void {
    this.sending = on;
  }

  private write(payloadType: number, marker: boolean, timestamp: number, payload: Uint8Array): Uint8Array {
    const h = this.header;
    h.payloadType = payloadType;
    h.marker = marker;
    h.timestamp = timestamp;
    h.payload = payload;
    let slot = this.ring[this.ringAt]!;
    if (slot.busy) {
      slot = sendSlot();
      this.ring.splice(this.ringAt, 0, slot);
    }
    this.ringAt = (this.ringAt + 1) % this.ring.length;
    slot.busy = true;
    this.written = slot;
    const n = writeRtp(h, slot.buffer);
    this.stats_.sent(payload.length);
    return slot.buffer.subarray(0, n);
  }

  /** The next 160 samples (in-band DTMF first, then the play queue, then silence), encoded into `payload`. */
  private fillAudio(): void {
    let filled = 0;
    while (filled < FRAME_SAMPLES && this.inband.length > 0) {
      const chunk = this.inband[0]!;
      const n = Math.min(FRAME_SAMPLES - filled, chunk.length - this.inbandOffset);
      encodeInto(this.table, chunk, this.inbandOffset, n, this.payload, filled);
      filled += n;
      this.inbandOffset += n;
      if (this.inbandOffset >= chunk.length) {
        this.inband.shift();
        this.inbandOffset = 0;
      }
    }
    const hadQueue = this.queuedSamples > 0;
    while (filled < FRAME_SAMPLES && this.queue.length > 0) {
      const item = this.queue[0]!;
      const chunk = item.samples;
      const n = Math.min(FRAME_SAMPLES - filled, chunk.length - this.queueOffset);
      encodeInto(this.table, chunk, this.queueOffset, n, this.payload, filled);
      filled += n;
      this.queueOffset += n;
      this.queuedSamples -= n;
      if (this.queueOffset >= chunk.length) {
        this.queue.shift();
        this.queueOffset = 0;
        item.done?.(true);
      }
    }
    if (filled < FRAME_SAMPLES) this.payload.fill(this.table[32768]!, filled);
    if (hadQueue && this.queuedSamples === 0) this.events.drained?.();
  }

  // --- Receiving ---

  private onRtp(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    // A boundary due while the loop reads a batch of packets goes out now, not after the batch.
    this.options.pacer.poll();
    try {
      const packet = parseRtp(msg);
      if (packet instanceof RtpParseError) {
        this.counters.malformed++;
        return;
      }
      if (this.codec === undefined) {
        this.counters.rejected++; // not started: no remote to take packets from yet
        return;
      }
      const audio = packet.payloadType === this.payloadType;
      const event = this.te !== undefined && packet.payloadType === this.te;
      if (!audio && !event) {
        this.counters.unknownPayload++;
        return;
      }
      if (!this.latched) {
        if (this.remote === undefined || (!this.latchAny && rinfo.address !== this.remote.address)) {
          this.counters.rejected++;
          return;
        }
        this.latched = true;
        this.sendTo = { address: rinfo.address, port: rinfo.port };
      } else if (rinfo.address !== this.sendTo.address || rinfo.port !== this.sendTo.port) {
        this.counters.rejected++;
        return;
      }
      const now = this.now();
      this.lastRtpMs = now;
      this.timedOut = false;
      this.stats_.receivedPacket(packet.ssrc, packet.sequence, packet.timestamp, packet.payload.length, now);
      if (audio) {
        const n = packet.payload.length;
        const frame = (n === FRAME_SAMPLES ? this.frames.pop() : undefined) ?? new Int16Array(n);
        decodeG711Into(this.encoding, packet.payload, frame);
        this.jitter.push(packet.ssrc, packet.sequence, frame);
      } else {
        this.jitter.pushEmpty(packet.ssrc, packet.sequence);
        for (const press of this.decoder.push(packet.ssrc, packet.timestamp, packet.payload, now)) {
          this.reportPress(press);
        }
      }
    } catch {
      this.counters.errors++;
    }
  }

  private reportPress(press: DtmfPress): void {
    this.events.dtmf?.(press.digit, { method: "rfc4733", durationMs: press.durationMs });
  }

  private playoutTick(): void {
    const now = this.now();
    this.ticks++;
    // The session's own work first, so that a throwing event handler (counted by the pacer) cannot stop it.
    if (this.ticks % this.rtcpEveryTicks === 0) this.sendReport();
    const timedOut = this.timeoutMs > 0 && !this.timedOut && now - this.lastRtpMs >= this.timeoutMs;
    if (timedOut) this.timedOut = true;
    const frame = this.jitter.pop();
    const inband =
      this.detector !== undefined && frame.kind !== "silence" ? this.detector.push(frame.samples) : [];
    const expired = this.decoder.expire(now);
    this.events.audio?.(frame.samples, { kind: frame.kind, sequence: frame.sequence });
    for (const d of inband) this.events.dtmf?.(d.digit, { method: "inband" });
    for (const press of expired) this.reportPress(press);
    if (timedOut) this.events.timeout?.();
  }

  // --- RTCP ---

  private reports(): RtcpPacket[] {
    const now = this.now();
    const block = this.stats_.reportBlock(now);
    // The SR's RTP timestamp is the one for this instant on the sending clock (§6.4.1).
    const rtpTimestamp =
      this.lastFrameMs === undefined
        ? this.timestamp
        : (this.lastFrameTimestamp + Math.round((now - this.lastFrameMs) * 8)) >>> 0;
    const sr = this.stats_.senderReport(now, rtpTimestamp, block ? [block] : []);
    return [
      sr,
      { type: "sdes", chunks: [{ ssrc: this.ssrc, items: [{ type: SDES_CNAME, text: this.cname }] }] },
    ];
  }

  private rtcpTarget(): RtpAddress {
    if (this.rtcpTo !== undefined) return this.rtcpTo;
    if (this.latched) return { address: this.sendTo.address, port: this.sendTo.port + 1 };
    const remote = this.remote!;
    return { address: remote.address, port: remote.rtcpPort ?? remote.port + 1 };
  }

  private sendReport(): void {
    const to = this.rtcpTarget();
    this.rtcp.send(buildRtcp(this.reports()), to.port, to.address);
  }

  private onRtcp(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    try {
      const packets = parseRtcp(msg);
      if (packets instanceof RtcpParseError) {
        this.counters.malformed++;
        return;
      }
      if (!this.rtcpLatched) {
        if (this.remote === undefined || (!this.latchAny && rinfo.address !== this.remote.address)) {
          this.counters.rejected++;
          return;
        }
        this.rtcpLatched = true;
        this.rtcpTo = { address: rinfo.address, port: rinfo.port };
      } else if (rinfo.address !== this.rtcpTo?.address || rinfo.port !== this.rtcpTo.port) {
        this.counters.rejected++;
        return;
      }
      const now = this.now();
      for (const p of packets) {
        if (p.type === "sr") this.stats_.remoteSenderReport(p, now);
        else if (p.type === "rr") this.stats_.remoteReceiverReport(p.reports, now);
      }
    } catch {
      this.counters.errors++;
    }
  }
}

/** RangeError for media that cannot work. */
function checkMedia(m: RtpMedia): void {
  if (!(m.codec in CODEC_PAYLOAD_TYPES))
    throw new RangeError(`codec must be PCMU or PCMA, got ${String(m.codec)}`);
  const te = m.telephoneEventPayloadType;
  if (te !== undefined && (!Number.isInteger(te) || te < 96 || te > 127)) {
    throw new RangeError(`telephoneEventPayloadType must be a dynamic payload type (96..127), got ${te}`);
  }
  checkRemote(m.remote);
}

/** RangeError for a remote that is not an IP address and a port. */
function checkRemote(r: RtpRemote): void {
  if (net.isIP(r.address) === 0) {
    throw new RangeError(`the remote address must be an IP address, got ${JSON.stringify(r.address)}`);
  }
  if (!Number.isInteger(r.port) || r.port < 1 || r.port > 65535) {
    throw new RangeError(`the remote port must be 1..65535, got ${r.port}`);
  }
}

/** RangeError for options that cannot work (they come from configuration and SDP, checked before here). */
function checkOptions(o: RtpSessionOptions): void {
  const nonNegative: Array<[string, number | undefined]> = [
    ["timeoutSeconds", o.timeoutSeconds],
    ["jitterMs", o.jitterMs],
    ["rtcpIntervalSeconds", o.rtcpIntervalSeconds],
  ];
  for (const [name, value] of nonNegative) {
    if (value !== undefined && !(value >= 0 && Number.isFinite(value))) {
      throw new RangeError(`${name} must be a number >= 0, got ${value}`);
    }
  }
  if (o.rtcpIntervalSeconds === 0) throw new RangeError("rtcpIntervalSeconds must be above 0");
}
