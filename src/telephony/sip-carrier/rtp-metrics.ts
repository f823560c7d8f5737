/**
 * The SIP calls' RTP figures in /metrics, recorded once per call as it ends
 * (low cardinality: no call ids, only a direction or a source label):
 * - switchboard_rtp_packets_total{direction="sent"|"received"}
 * - switchboard_rtp_packets_lost_total: packets of the peers' streams never received
 * - switchboard_rtp_calls_total: calls whose media ran (answered)
 * - switchboard_rtp_timeouts_total: calls ended by RTP_TIMEOUT_SECONDS
 * - switchboard_rtp_call_jitter_ms{source="local"|"remote"}: each call's last
 *   interarrival jitter, as we measured the peer's stream (local) and as the
 *   peer's RTCP reported ours (remote; calls without a report are not counted)
 * - switchboard_rtp_call_loss_ratio{source="local"|"remote"}: each call's
 *   loss (lost / expected over the call; remote: the last reported fraction)
 */
import { Counter, Histogram } from "prom-client";
import { registry } from "../../observability/metrics.js";
import type { RtpSessionStats } from "../../rtp/session.js";

const packets = new Counter({
  name: "switchboard_rtp_packets_total",
  help: "RTP packets of SIP calls, by direction (counted as each call ends)",
  labelNames: ["direction"],
  registers: [registry],
});

const lost = new Counter({
  name: "switchboard_rtp_packets_lost_total",
  help: "RTP packets the peers of SIP calls sent that never arrived (counted as each call ends)",
  registers: [registry],
});

const callsWithMedia = new Counter({
  name: "switchboard_rtp_calls_total",
  help: "SIP calls whose RTP ran (answered), counted as each ends",
  registers: [registry],
});

const timeouts = new Counter({
  name: "switchboard_rtp_timeouts_total",
  help: "SIP calls hung up because no RTP came for RTP_TIMEOUT_SECONDS",
  registers: [registry],
});

const jitter = new Histogram({
  name: "switchboard_rtp_call_jitter_ms",
  help: "Each SIP call's RTP interarrival jitter at its end: of the peer's stream (local) and of ours as the peer's RTCP reported it (remote)",
  labelNames: ["source"],
  buckets: [1, 2, 5, 10, 20, 40, 80, 160, 320],
  registers: [registry],
});

const loss = new Histogram({
  name: "switchboard_rtp_call_loss_ratio",
  help: "Each SIP call's RTP loss (0..1): of the peer's stream over the call (local), and the last fraction the peer's RTCP reported of ours (remote)",
  labelNames: ["source"],
  buckets: [0, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1],
  registers: [registry],
});

/** One call's figures, at its end. */
export function recordCallRtp(s: RtpSessionStats): void {
  callsWithMedia.inc();
  packets.inc({ direction: "sent" }, s.sent.packets);
  packets.inc({ direction: "received" }, s.received.packets);
  lost.inc(s.cumulativeLost);
  jitter.observe({ source: "local" }, s.jitterMs);
  const expected = s.received.packets + s.cumulativeLost;
  loss.observe({ source: "local" }, expected === 0 ? 0 : s.cumulativeLost / expected);
  if (s.remote !== undefined) {
    jitter.observe({ source: "remote" }, s.remote.jitterMs);
    loss.observe({ source: "remote" }, s.remote.fractionLost);
  }
}

export function recordRtpTimeout(): void {
  timeouts.inc();
}
