/**
 * Per-session RTP statistics (RFC 3550): what was sent, what was received
 * from the remote source and how it arrived, and what the remote reported
 * back about our stream.
 *
 * - Reception (A.1, A.3): extended highest sequence number with cycle
 *   counting (a jump of more than MAX_DROPOUT = 3000, or back more than
 *   MAX_MISORDER = 100, is a restart once confirmed by the next packet),
 *   packets expected and received, cumulative loss and the fraction lost
 *   over each report interval. No probation: the session only counts
 *   packets it already accepted (parsed, from the latched address).
 * - Interarrival jitter (A.8): J += (|D| − J) / 16 over transit times in
 *   timestamp units (8 per ms at 8 kHz).
 * - Round-trip time (§6.4.1): from a report block about our SSRC carrying
 *   LSR and DLSR, RTT = A − LSR − DLSR with A the report's arrival time
 *   (middle 32 bits of NTP, 1/65536 s).
 *
 * `snapshot()` is a plain object for logs and /metrics. Pure: times are
 * passed in (ms on the caller's clock).
 */
import { ntpFromMs, ntpMiddle, type ReportBlock, type SenderReport } from "./rtcp.js";

const RTP_SEQ_MOD = 0x10000;
const MAX_DROPOUT = 3000;
const MAX_MISORDER = 100;

export interface RtpStatsSnapshot {
  /** Our SSRC. */
  ssrc: number;
  /** The remote source's SSRC (undefined before its first packet). */
  remoteSsrc: number | undefined;
  sent: { packets: number; octets: number };
  received: { packets: number; octets: number };
  /**
   * Packets of the remote stream expected (from its sequence numbers) and
   * not received; 0 when duplicates make RFC 3550's figure negative (the
   * report blocks sent carry the signed figure).
   */
  cumulativeLost: number;
  /** Fraction of the remote stream lost over the last report interval (0..1). */
  fractionLost: number;
  /** Interarrival jitter of the remote stream, in ms. */
  jitterMs: number;
  /** What the remote last reported about our stream (undefined before its first report). */
  remote:
    | {
        fractionLost: number;
        cumulativeLost: number;
        jitterMs: number;
      }
    | undefined;
  /** Round-trip time from the last report that allowed one, in ms. */
  rttMs: number | undefined;
  /** Sender and receiver reports sent and received. */
  rtcp: { sent: number; received: number };
}

export class RtpStats {
  private readonly unitsPerMs: number;
  sentPackets = 0;
  sentOctets = 0;
  private receivedPackets = 0;
  private receivedOctets = 0;
  private remoteSsrc: number | undefined;
  // A.1 state.
  private maxSeq = 0;
  private cycles = 0;
  private baseSeq = 0;
  private badSeq = RTP_SEQ_MOD + 1;
  private received = 0;
  private expectedPrior = 0;
  private receivedPrior = 0;
  private lastFraction = 0;
  // A.8 state.
  private transit: number | undefined;
  private jitter = 0;
  // The last SR from the remote: its NTP middle 32 bits and when it came.
  private lastSr: { middle: number; atMs: number } | undefined;
  private remoteReport: ReportBlock | undefined;
  private rtt: number | undefined;
  private rtcpSent = 0;
  private rtcpReceived = 0;

  /** `ssrc` is ours; `clockRate` the RTP clock (8000 for G.711). */
  constructor(
    readonly ssrc: number,
    clockRate = 8000,
  ) {
    this.unitsPerMs = clockRate / 1000;
  }

  /** A packet we sent: its payload's bytes. */
  sent(payloadBytes: number): void {
    this.sentPackets++;
    this.sentOctets += payloadBytes;
  }

  /** A packet received from the remote source, at `arrivalMs`. */
  receivedPacket(
    ssrc: number,
    sequence: number,
    rtpTimestamp: number,
    payloadBytes: number,
    arrivalMs: number,
  ): void {
    this.receivedPackets++;
    this.receivedOctets += payloadBytes;
    if (ssrc !== this.remoteSsrc) {
      this.remoteSsrc = ssrc;
      this.initSequence(sequence);
      this.transit = undefined;
      this.jitter = 0;
      this.lastSr = undefined;
      this.received = 1;
    } else if (!this.updateSequence(sequence)) {
      return;
    }
    const transit = arrivalMs * this.unitsPerMs - rtpTimestamp;
    if (this.transit !== undefined) {
      let d = transit - this.transit;
      // Timestamps wrap at 2^32: take the nearest difference.
      if (d > 2 ** 31) d -= 2 ** 32;
      if (d < -(2 ** 31)) d += 2 ** 32;
      this.jitter += (Math.abs(d) - this.jitter) / 16;
    }
    this.transit = transit;
  }

  private initSequence(seq: number): void {
    this.baseSeq = seq;
    this.maxSeq = seq;
    this.badSeq = RTP_SEQ_MOD + 1;
    this.cycles = 0;
    this.received = 0;
    this.expectedPrior = 0;
    this.receivedPrior = 0;
  }

  /** A.1's update_seq: false when the packet is not counted (a jump not yet confirmed). */
  private updateSequence(seq: number): boolean {
    const delta = (seq - this.maxSeq + RTP_SEQ_MOD) % RTP_SEQ_MOD;
    if (delta < MAX_DROPOUT) {
      if (seq < this.maxSeq) this.cycles += RTP_SEQ_MOD;
      this.maxSeq = seq;
    } else if (delta <= RTP_SEQ_MOD - MAX_MISORDER) {
      if (seq === this.badSeq) {
        // Two sequential packets after a jump: the source restarted.
        this.initSequence(seq);
      } else {
        this.badSeq = (seq + 1) & (RTP_SEQ_MOD - 1);
        return false;
      }
    }
    // Otherwise a duplicate or a reordered packet: counted as received.
    this.received++;
    return true;
  }

  private get extendedMax(): number {
    return this.cycles + this.maxSeq;
  }

  private get expected(): number {
    return this.extendedMax - this.baseSeq + 1;
  }

  /**
   * The report block about the remote source for a report sent at `nowMs`
   * (undefined before its first packet). Starts a new loss interval.
   */
  reportBlock(nowMs: number): ReportBlock | undefined {
    if (this.remoteSsrc === undefined) return undefined;
    const expected = this.expected;
    const lost = expected - this.received;
    const expectedInterval = expected - this.expectedPrior;
    const receivedInterval = this.received - this.receivedPrior;
    this.expectedPrior = expected;
    this.receivedPrior = this.received;
    const lostInterval = expectedInterval - receivedInterval;
    this.lastFraction =
      expectedInterval === 0 || lostInterval <= 0 ? 0 : Math.floor((lostInterval * 256) / expectedInterval);
    if (this.lastFraction > 255) this.lastFraction = 255;
    const lsr = this.lastSr?.middle ?? 0;
    const dlsr = this.lastSr === undefined ? 0 : Math.round(((nowMs - this.lastSr.atMs) * 65536) / 1000);
    return {
      ssrc: this.remoteSsrc,
      fractionLost: this.lastFraction,
      cumulativeLost: Math.max(-0x800000, Math.min(0x7fffff, lost)),
      highestSequence: this.extendedMax >>> 0,
      jitter: Math.floor(this.jitter),
      lsr,
      dlsr: dlsr >>> 0,
    };
  }

  /** An SR we send at `nowMs` with `rtpTimestamp` matching that instant, carrying `reports`. */
  senderReport(nowMs: number, rtpTimestamp: number, reports: ReportBlock[]): SenderReport {
    this.rtcpSent++;
    return {
      type: "sr",
      ssrc: this.ssrc,
      ntp: ntpFromMs(nowMs),
      rtpTimestamp: rtpTimestamp >>> 0,
      packetCount: this.sentPackets >>> 0,
      octetCount: this.sentOctets >>> 0,
      reports,
    };
  }

  /** Counts a receiver report we send. */
  receiverReportSent(): void {
    this.rtcpSent++;
  }

  /** An SR from the remote, arrived at `arrivalMs`. */
  remoteSenderReport(sr: SenderReport, arrivalMs: number): void {
    this.rtcpReceived++;
    if (sr.ssrc === this.remoteSsrc || this.remoteSsrc === undefined) {
      this.lastSr = { middle: ntpMiddle(sr.ntp), atMs: arrivalMs };
    }
    this.remoteBlocks(sr.reports, arrivalMs);
  }

  /** An RR from the remote, arrived at `arrivalMs`. */
  remoteReceiverReport(reports: ReportBlock[], arrivalMs: number): void {
    this.rtcpReceived++;
    this.remoteBlocks(reports, arrivalMs);
  }

  private remoteBlocks(reports: ReportBlock[], arrivalMs: number): void {
    const ours = reports.find((b) => b.ssrc === this.ssrc);
    if (ours === undefined) return;
    this.remoteReport = ours;
    if (ours.lsr !== 0) {
      const a = ntpMiddle(ntpFromMs(arrivalMs));
      const rtt = (a - ours.lsr - ours.dlsr) >>> 0;
      // A negative result (clock steps, a bogus report) wraps to a huge value: ignore it.
      if (rtt < 0x80000000) this.rtt = (rtt * 1000) / 65536;
    }
  }

  snapshot(): RtpStatsSnapshot {
    const expected = this.remoteSsrc === undefined ? 0 : this.expected;
    const remote = this.remoteReport;
    return {
      ssrc: this.ssrc,
      remoteSsrc: this.remoteSsrc,
      sent: { packets: this.sentPackets, octets: this.sentOctets },
      received: { packets: this.receivedPackets, octets: this.receivedOctets },
      cumulativeLost: Math.max(0, expected - this.received),
      fractionLost: this.lastFraction / 256,
      jitterMs: this.jitter / this.unitsPerMs,
      remote:
        remote === undefined
          ? undefined
          : {
              fractionLost: remote.fractionLost / 256,
              cumulativeLost: remote.cumulativeLost,
              jitterMs: remote.jitter / this.unitsPerMs,
            },
      rttMs: this.rtt,
      rtcp: { sent: this.rtcpSent, received: this.rtcpReceived },
    };
  }
}
