/**
 * The far end of `npm run bench:sip`'s media run, in a process of its own
 * (forked by bench/sip-media.ts, so the load is generated outside the
 * server and outside the bench's own process): N callers on raw sockets
 * with literal SIP (one UDP socket for signalling) and one RTP socket per
 * call. Each call: INVITE with a PCMU/PCMA offer, 200 → ACK, then a 20 ms
 * G.711 packet every 20 ms (one timer for all calls, fixed boundaries, so
 * the load does not drift), answering the service's BYE with 200.
 *
 * While measuring it counts, per call, the service's audio packets: the
 * spacing between consecutive ones (sequence n then n+1), as a histogram
 * of 0.25 ms buckets, and the sequence gaps (packets lost on the way out of
 * the service). Its sockets' kernel drop counters (/proc/net/udp) tell what
 * it failed to read itself.
 *
 * Parent ↔ child messages: {start} → {established, failed}; {measure} →
 * (counters reset); {report} → Report; {hangup} → BYEs sent, then {hungUp}.
 */
import { randomBytes } from "node:crypto";
import dgram from "node:dgram";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";

export interface StartMessage {
  start: { sipPort: number; fqdn: string; calls: number; perSecond: number };
}

export interface PeersReport {
  calls: number;
  /** Audio packets from the service while measuring. */
  received: number;
  /** Sequence gaps while measuring (service → peers). */
  gaps: number;
  /** Packets the peers sent while measuring. */
  sent: number;
  /** Spacing histogram: [upper edge ms, count], 0.25 ms buckets. */
  spacing: Array<[number, number]>;
  /** Kernel drops on the peers' sockets (/proc/net/udp), since they opened. */
  kernelDrops: number;
  /** Calls the service hung up before the end. */
  endedEarly: number;
  /** This process's event-loop delay while measuring (ms): how late its own reading could be. */
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

interface Call {
  callId: string;
  tag: string;
  branch: string;
  rtp: dgram.Socket;
  remote: { address: string; port: number } | undefined;
  toHeader: string | undefined;
  contact: string | undefined;
  payloadType: number;
  packet: Buffer;
  lastSeq: number;
  lastAt: number;
  ended: boolean;
  answered: boolean;
}

const BUCKET_MS = 0.25;
const BUCKETS = 800; // up to 200 ms

/** Kernel drop counters of this process's UDP sockets (/proc/net/udp's last column). */
export function udpDrops(pid: number | "self"): number {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m !== null) inodes.add(m[1]!);
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    return Number.NaN;
  }
  let drops = 0;
  for (const file of ["udp", "udp6"]) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${file}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 13) continue;
      if (inodes.has(cols[9]!)) drops += Number(cols[cols.length - 1]);
    }
  }
  return drops;
}

if (process.send !== undefined && process.argv.includes("--peers")) await run();

async function run(): Promise<void> {
  const { start } = await next<StartMessage>();
  const sip = dgram.createSocket("udp4");
  await new Promise<void>((resolve) => sip.bind(0, "127.0.0.1", resolve));
  sip.setRecvBufferSize?.(8 * 1024 * 1024);
  const local = sip.address().port;
  const calls: Call[] = [];
  const byId = new Map<string, Call>();
  let measuring = false;
  let received = 0;
  let gaps = 0;
  let sent = 0;
  let endedEarly = 0;
  const histogram = new Float64Array(BUCKETS + 1);
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  const service = { address: "127.0.0.1", port: start.sipPort };
  let answeredCount = 0;
  let failed = 0;
  const failures: Record<string, number> = {};
  let onAllSettled: (() => void) | undefined;
  const settle = () => {
    if (answeredCount + failed === start.calls) onAllSettled?.();
  };

  const sendSip = (text: string) => sip.send(text, service.port, service.address);

  sip.on("message", (data) => {
    const text = data.toString();
    const callId = /\r\nCall-ID:\s*(.+)\r\n/i.exec(text)?.[1]?.trim() ?? "";
    const call = byId.get(callId);
    if (call === undefined) return;
    const status = /^SIP\/2\.0 (\d{3})/.exec(text);
    if (status !== null) {
      const code = Number(status[1]);
      const cseq = /\r\nCSeq:\s*\d+ (\w+)/i.exec(text)?.[1];
      if (cseq !== "INVITE" || code < 200 || call.answered || call.ended) return;
      if (code >= 300) {
        call.ended = true;
        const reason = text.slice(8, text.indexOf("\r\n"));
        failures[reason] = (failures[reason] ?? 0) + 1;
        failed++;
        settle();
        return;
      }
      call.answered = true;
      call.toHeader = /\r\nTo:\s*(.+)\r\n/i.exec(text)?.[1]?.trim();
      call.contact = /\r\nContact:\s*<([^>]+)>/i.exec(text)?.[1];
      const body = text.slice(text.indexOf("\r\n\r\n") + 4);
      const address = /c=IN IP4 (\S+)/.exec(body)?.[1] ?? "127.0.0.1";
      const media = /m=audio (\d+) RTP\/AVP (\d+)/.exec(body);
      call.remote = { address, port: Number(media?.[1] ?? 0) };
      call.payloadType = Number(media?.[2] ?? 0);
      call.packet[1] = call.payloadType;
      call.packet.fill(call.payloadType === 8 ? 0xd5 : 0xff, 12);
      sendSip(
        [
          `ACK ${call.contact ?? `sip:bench@${start.fqdn}`} SIP/2.0`,
          `Via: SIP/2.0/UDP 127.0.0.1:${local};rport;branch=z9hG4bK${randomBytes(6).toString("hex")}`,
          "Max-Forwards: 70",
          `From: <sip:peer@127.0.0.1:${local}>;tag=${call.tag}`,
          `To: ${call.toHeader}`,
          `Call-ID: ${call.callId}`,
          "CSeq: 1 ACK",
          "Content-Length: 0",
          "",
          "",
        ].join("\r\n"),
      );
      answeredCount++;
      settle();
      return;
    }
    if (text.startsWith("BYE ")) {
      const via = text.match(/\r\nVia:[^\r]*/gi)?.map((v) => v.slice(2)) ?? [];
      const head = (name: string) => new RegExp(`\\r\\n(${name}:[^\\r]*)`, "i").exec(text)?.[1] ?? "";
      sendSip(
        [
          "SIP/2.0 200 OK",
          ...via,
          head("From"),
          head("To"),
          head("Call-ID"),
          head("CSeq"),
          "Content-Length: 0",
          "",
          "",
        ].join("\r\n"),
      );
      if (!call.ended) {
        call.ended = true;
        if (measuring) endedEarly++;
      }
    }
  });

  const offer = (call: Call) => {
    const rtpPort = call.rtp.address().port;
    const sdp = [
      "v=0",
      `o=- ${rtpPort} 1 IN IP4 127.0.0.1`,
      "s=-",
      "c=IN IP4 127.0.0.1",
      "t=0 0",
      `m=audio ${rtpPort} RTP/AVP 0 8 101`,
      "a=rtpmap:0 PCMU/8000",
      "a=rtpmap:8 PCMA/8000",
      "a=rtpmap:101 telephone-event/8000",
      "a=fmtp:101 0-15",
      "a=ptime:20",
      "a=sendrecv",
      "",
    ].join("\r\n");
    return [
      `INVITE sip:bench@${start.fqdn} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${local};rport;branch=${call.branch}`,
      "Max-Forwards: 70",
      `From: <sip:peer@127.0.0.1:${local}>;tag=${call.tag}`,
      `To: <sip:bench@${start.fqdn}>`,
      `Call-ID: ${call.callId}`,
      "CSeq: 1 INVITE",
      `Contact: <sip:peer@127.0.0.1:${local}>`,
      "Content-Type: application/sdp",
      `Content-Length: ${Buffer.byteLength(sdp)}`,
      "",
      sdp,
    ].join("\r\n");
  };

  // Open every call's RTP socket first.
  for (let i = 0; i < start.calls; i++) {
    const rtp = dgram.createSocket("udp4");
    await new Promise<void>((resolve) => rtp.bind(0, "127.0.0.1", resolve));
    const packet = Buffer.alloc(172, 0xff);
    packet[0] = 0x80;
    packet.writeUInt32BE((0x10000 + i) >>> 0, 8);
    const call: Call = {
      callId: `${randomBytes(8).toString("hex")}@bench-media`,
      tag: randomBytes(4).toString("hex"),
      branch: `z9hG4bK${randomBytes(6).toString("hex")}`,
      rtp,
      remote: undefined,
      toHeader: undefined,
      contact: undefined,
      payloadType: 0,
      packet,
      lastSeq: -1,
      lastAt: 0,
      ended: false,
      answered: false,
    };
    rtp.on("message", (msg) => {
      // Audio only (RFC 4733 events and RTCP aside).
      if (msg.length < 12 || msg[0]! >> 6 !== 2) return;
      const pt = msg[1]! & 0x7f;
      if (pt !== 0 && pt !== 8) return;
      const at = performance.now();
      const seq = msg.readUInt16BE(2);
      if (measuring) {
        received++;
        if (call.lastSeq >= 0) {
          const step = (seq - call.lastSeq + 0x10000) & 0xffff;
          if (step === 1) {
            const bucket = Math.min(BUCKETS, Math.ceil((at - call.lastAt) / BUCKET_MS));
            histogram[bucket] = histogram[bucket]! + 1;
          } else if (step > 1 && step < 0x8000) {
            gaps += step - 1;
          }
        }
      }
      call.lastSeq = seq;
      call.lastAt = at;
    });
    calls.push(call);
    byId.set(call.callId, call);
  }

  // Call at `perSecond`, INVITEs retransmitted (500 ms, doubling) until answered.
  const settled = new Promise<void>((resolve) => {
    onAllSettled = resolve;
  });
  const gapMs = 1000 / start.perSecond;
  calls.forEach((call, i) => {
    setTimeout(() => {
      let wait = 500;
      const send = () => {
        if (call.answered || call.ended) return;
        if (wait > 8000) {
          call.ended = true;
          failures["no final answer"] = (failures["no final answer"] ?? 0) + 1;
          failed++;
          settle();
          return;
        }
        sendSip(offer(call));
        setTimeout(send, wait);
        wait *= 2;
      };
      send();
    }, i * gapMs);
  });

  // One clock for every call's packets.
  let k = 0;
  const t0 = performance.now();
  let running = true;
  const tick = () => {
    if (!running) return;
    while (performance.now() - t0 >= (k + 1) * 20) {
      k++;
      for (const call of calls) {
        if (!call.answered || call.ended || call.remote === undefined) continue;
        const b = call.packet;
        b.writeUInt16BE(k & 0xffff, 2);
        b.writeUInt32BE((k * 160) >>> 0, 4);
        call.rtp.send(b, call.remote.port, call.remote.address);
        if (measuring) sent++;
      }
    }
    setTimeout(tick, Math.max(0, t0 + (k + 1) * 20 - performance.now()));
  };
  tick();

  await settled;
  process.send!({
    established: answeredCount,
    failed,
    failures,
    ports: calls.filter((c) => c.answered && !c.ended).map((c) => c.rtp.address().port),
  });

  process.on("message", (m: { measure?: boolean; report?: boolean; hangup?: boolean }) => {
    if (m.measure) {
      measuring = true;
      received = 0;
      gaps = 0;
      sent = 0;
      histogram.fill(0);
      for (const c of calls) c.lastSeq = -1;
      loopDelay.reset();
      loopDelay.enable();
    }
    if (m.report) {
      measuring = false;
      loopDelay.disable();
      const spacing: Array<[number, number]> = [];
      histogram.forEach((c, i) => {
        if (c > 0) spacing.push([i * BUCKET_MS, c]);
      });
      const report: PeersReport = {
        calls: start.calls,
        received,
        gaps,
        sent,
        spacing,
        kernelDrops: udpDrops("self"),
        endedEarly,
        loopDelayP99Ms: loopDelay.percentile(99) / 1e6,
        loopDelayMaxMs: loopDelay.max / 1e6,
      };
      process.send!(report);
    }
    if (m.hangup) {
      running = false;
      let cseq = 2;
      for (const call of calls) {
        if (call.ended || !call.answered) continue;
        call.ended = true;
        sendSip(
          [
            `BYE ${call.contact ?? `sip:bench@${start.fqdn}`} SIP/2.0`,
            `Via: SIP/2.0/UDP 127.0.0.1:${local};rport;branch=z9hG4bK${randomBytes(6).toString("hex")}`,
            "Max-Forwards: 70",
            `From: <sip:peer@127.0.0.1:${local}>;tag=${call.tag}`,
            `To: ${call.toHeader}`,
            `Call-ID: ${call.callId}`,
            `CSeq: ${cseq++} BYE`,
            "Content-Length: 0",
            "",
            "",
          ].join("\r\n"),
        );
      }
      setTimeout(() => {
        process.send!({ hungUp: true });
      }, 2000);
    }
  });
}

function next<T>(): Promise<T> {
  return new Promise((resolve) => process.once("message", (m) => resolve(m as T)));
}
