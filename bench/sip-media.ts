/**
 * The media run of `npm run bench:sip`: `calls` concurrent SIP calls into a
 * PROGRAMMABLE domain whose handler answers `<Play>` of a long WAV then
 * nothing more, each with bidirectional G.711 RTP (the service plays the
 * file, the callers send 20 ms packets) for `seconds`. The callers are a
 * child process of their own (bench/sip-media-peers.ts). Measured over the
 * window once every call is up (after 2 s of settling):
 * - the server's CPU (/proc/<pid>/stat) per call-second;
 * - the spacing of the service's packets as the callers receive them (p99);
 * - packets lost on loopback: sequence gaps the callers see (service →
 *   callers), and the kernel's drop counters of the server's UDP sockets
 *   (callers → service: datagrams that arrived and the server did not read
 *   in time) and of the callers' own;
 * - server memory per call: VmRSS at the window's end minus VmRSS before
 *   the calls, divided by the calls.
 */
import { fork } from "node:child_process";
import { join } from "node:path";
import type { Child } from "./children.js";
import { ROOT } from "./children.js";
import { captureSpacing } from "./sip-media-capture.js";
import { type PeersReport, udpDrops } from "./sip-media-peers.js";

export interface MediaResult {
  calls: number;
  established: number;
  failedSetups: number;
  /** Measured window (wall), s. */
  seconds: number;
  serverCpuMsPerCallSecond: number;
  /**
   * Spacing of the service's packets, ms (bucket upper edges, 0.25 ms): by
   * the kernel's timestamps of a loopback capture (`spacingSource`
   * "capture") when dumpcap could capture, else as the callers' event loop
   * saw them ("callers").
   */
  spacingSource: "capture" | "callers";
  /** Why there is no capture, or what it saw beside the callers' view. */
  spacingNote: string;
  spacingP1: number;
  spacingP50: number;
  spacingP99: number;
  spacingMax: number;
  spacingCount: number;
  received: number;
  sent: number;
  /** Service → callers: sequence gaps. */
  lostOut: number;
  /** Callers → service: kernel drops on the server's UDP sockets over the window. */
  droppedAtServer: number;
  /** Kernel drops on the callers' sockets (their own reading falling behind). */
  droppedAtCallers: number;
  endedEarly: number;
  /** The callers' own event-loop delay while measuring (p99, max; ms). */
  callersLoopDelayP99Ms: number;
  callersLoopDelayMaxMs: number;
  rssBeforeBytes: number;
  rssAfterBytes: number;
  memoryKbPerCall: number;
}

/** The WAV the handler serves for `<Play>`: `seconds` of a quiet 440 Hz tone, 8 kHz 16-bit mono. */
export function playWav(seconds: number): Buffer {
  const frames = seconds * 8000;
  const wav = Buffer.alloc(44 + frames * 2);
  wav.write("RIFF", 0, "ascii");
  wav.writeUInt32LE(36 + frames * 2, 4);
  wav.write("WAVEfmt ", 8, "ascii");
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20);
  wav.writeUInt16LE(1, 22);
  wav.writeUInt32LE(8000, 24);
  wav.writeUInt32LE(16000, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write("data", 36, "ascii");
  wav.writeUInt32LE(frames * 2, 40);
  for (let i = 0; i < frames; i++) {
    wav.writeInt16LE(Math.round(4000 * Math.sin((2 * Math.PI * 440 * i) / 8000)), 44 + i * 2);
  }
  return wav;
}

/** The upper edge of the bucket holding the p-th percentile. */
function percentile(buckets: Array<[number, number]>, p: number): number {
  const total = buckets.reduce((n, [, c]) => n + c, 0);
  let seen = 0;
  for (const [edge, c] of buckets) {
    seen += c;
    if (seen >= Math.ceil((p / 100) * total)) return edge;
  }
  return 0;
}

export async function runMedia(
  server: Child,
  options: {
    sipPort: number;
    fqdn: string;
    calls: number;
    seconds: number;
    perSecond: number;
    /** Scratch directory (the capture file). */
    dir: string;
  },
  log: (line: string) => void,
): Promise<MediaResult> {
  const rssBefore = server.rssBytes() ?? Number.NaN;
  const peers = fork(join(ROOT, "bench", "sip-media-peers.ts"), ["--peers"], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const next = <T>() =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the media callers exited (${code})`));
      peers.once("exit", onExit);
      peers.once("message", (m) => {
        peers.off("exit", onExit);
        resolve(m as T);
      });
    });
  try {
    log(`media: ${options.calls} calls at ${options.perSecond}/s, each with G.711 both ways ...`);
    const up = next<{
      established: number;
      failed: number;
      failures: Record<string, number>;
      ports: number[];
    }>();
    peers.send({
      start: {
        sipPort: options.sipPort,
        fqdn: options.fqdn,
        calls: options.calls,
        perSecond: options.perSecond,
      },
    });
    const { established, failed, failures, ports } = await up;
    if (failed > 0) {
      log(`media: failed setups: ${JSON.stringify(failures)}`);
      const error = server.takeLoggedError();
      if (error !== undefined) log(`media: the server's last error: ${error}`);
    }
    log(
      `media: ${established} calls up (${failed} failed); settling 2 s, then measuring ${options.seconds} s ...`,
    );
    await new Promise((r) => setTimeout(r, 2000));
    const drops0 = udpDrops(server.pid);
    const cpu0 = server.cpuMs() ?? Number.NaN;
    const t0 = performance.now();
    peers.send({ measure: true });
    // A capture of up to 10 s from the window's middle (kernel timestamps).
    const captureSeconds = Math.max(1, Math.min(10, Math.floor(options.seconds / 3)));
    const capture = new Promise((r) => setTimeout(r, ((options.seconds - captureSeconds) / 2) * 1000)).then(
      () => captureSpacing(options.dir, new Set(ports), captureSeconds),
    );
    await new Promise((r) => setTimeout(r, options.seconds * 1000));
    const cpuMs = (server.cpuMs() ?? Number.NaN) - cpu0;
    const wallMs = performance.now() - t0;
    const rssAfter = server.rssBytes() ?? Number.NaN;
    const droppedAtServer = udpDrops(server.pid) - drops0;
    const reported = next<PeersReport>();
    peers.send({ report: true });
    const report = await reported;
    const hungUp = next<{ hungUp: true }>();
    peers.send({ hangup: true });
    await hungUp;
    const captured = await capture;
    const callersView = `callers' event loop: p1 ${percentile(report.spacing, 1)} ms, p50 ${percentile(report.spacing, 50)} ms, p99 ${percentile(report.spacing, 99)} ms`;
    const useCapture = !("error" in captured) && captured.packets > 0;
    const spacing = useCapture ? captured.spacing : report.spacing;
    const spacingNote =
      "error" in captured
        ? `no capture (${captured.error}); ${callersView}`
        : `dumpcap on lo for ${captured.seconds} s: ${captured.packets} packets, ${captured.gaps} sequence gaps, ${captured.captureDropped ?? "?"} dropped by the capture; ${callersView}`;
    const spacingCount = spacing.reduce((n, [, c]) => n + c, 0);
    return {
      calls: options.calls,
      established,
      failedSetups: failed,
      seconds: wallMs / 1000,
      serverCpuMsPerCallSecond: cpuMs / Math.max(1, established) / (wallMs / 1000),
      spacingSource: useCapture ? "capture" : "callers",
      spacingNote,
      spacingP1: percentile(spacing, 1),
      spacingP50: percentile(spacing, 50),
      spacingP99: percentile(spacing, 99),
      spacingMax: spacing.at(-1)?.[0] ?? 0,
      spacingCount,
      received: report.received,
      sent: report.sent,
      lostOut: report.gaps,
      droppedAtServer,
      droppedAtCallers: report.kernelDrops,
      endedEarly: report.endedEarly,
      callersLoopDelayP99Ms: report.loopDelayP99Ms,
      callersLoopDelayMaxMs: report.loopDelayMaxMs,
      rssBeforeBytes: rssBefore,
      rssAfterBytes: rssAfter,
      memoryKbPerCall: (rssAfter - rssBefore) / 1024 / Math.max(1, established),
    };
  } finally {
    peers.kill();
  }
}
