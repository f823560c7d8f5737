/**
 * `npx tsx bench/rtp.ts [calls] [seconds]`: the RTP media layer alone under
 * load. This process opens `calls` RtpSessions (default 400) on one Pacer;
 * a child process (this file with `--peers`) plays the remote end of every
 * call on raw UDP sockets: one 20 ms G.711 packet per call per frame, and
 * it counts what the sessions send back. Over the measured `seconds`
 * (default 20, after 2 s of warm-up) it prints the issue #28 targets that
 * concern media and which hold:
 *
 * - this process's CPU per call-second (user + system, process.cpuUsage) ≤ 2 ms;
 * - outgoing packet spacing p99 (the pacer's histogram) within 20 ± 3 ms;
 * - 0 packets lost on loopback, both ways (sessions' loss counters; the
 *   peers' count of sequence gaps);
 * - memory per call (RSS growth after opening the sessions / calls) ≤ 250 KB.
 *
 * A benchmark, not a test: it asserts nothing. On a shared machine the
 * figures move with whatever else runs.
 */
import { fork } from "node:child_process";
import dgram from "node:dgram";
import { Pacer, realTimers } from "../src/rtp/pacer.js";
import { RtpSession } from "../src/rtp/session.js";

const PORT_MIN = 30000;
const PORT_MAX = 39999;

if (process.argv.includes("--peers")) {
  await peers();
} else {
  await main();
}

async function main(): Promise<void> {
  const calls = Number(process.argv[2] ?? 400);
  const seconds = Number(process.argv[3] ?? 20);
  const child = fork(new URL(import.meta.url).pathname, ["--peers", String(calls)], {
    execArgv: ["--import", "tsx"],
  });
  const peerPorts = await new Promise<number[]>((resolve) => {
    child.once("message", (m) => resolve(m as number[]));
  });
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const pacer = new Pacer(realTimers());
  const sessions: RtpSession[] = [];
  for (let i = 0; i < calls; i++) {
    sessions.push(
      await RtpSession.open({
        address: "127.0.0.1",
        portMin: PORT_MIN,
        portMax: PORT_MAX,
        codec: i % 2 === 0 ? "PCMU" : "PCMA",
        telephoneEventPayloadType: 101,
        remote: { address: "127.0.0.1", port: peerPorts[i]! },
        pacer,
        events: { audio: () => {} },
      }),
    );
  }
  child.send({ ports: sessions.map((s) => s.localPort) });
  await sleep(2000);
  const rssAfter = process.memoryUsage().rss;
  const before = sessions.map((s) => s.stats());
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const spacingBefore = pacer.stats().spacing;
  child.send({ measure: true });
  await sleep(seconds * 1000);
  const cpu = process.cpuUsage(cpu0);
  const elapsed = (performance.now() - t0) / 1000;
  const after = sessions.map((s) => s.stats());
  const peerReport = new Promise<{ received: number; gaps: number }>((resolve) => {
    child.once("message", (m) => resolve(m as { received: number; gaps: number }));
  });
  child.send({ report: true });
  const fromPeers = await peerReport;
  const pacerStats = pacer.stats();
  await Promise.all(sessions.map((s) => s.close()));
  child.kill();

  const cpuMsPerCallSecond = (cpu.user + cpu.system) / 1000 / (calls * elapsed);
  const received = after.reduce((n, s, i) => n + s.received.packets - before[i]!.received.packets, 0);
  const sent = after.reduce((n, s, i) => n + s.sent.packets - before[i]!.sent.packets, 0);
  const lostIn = after.reduce((n, s) => n + s.cumulativeLost + s.jitterBuffer.late, 0);
  const memoryKb = (rssAfter - rssBefore) / 1024 / calls;
  const window = windowBuckets(spacingBefore.buckets, pacerStats.spacing.buckets);
  const p99 = percentile(window, 99);
  const rows: Array<[string, string, boolean]> = [
    [`CPU per call-second ≤ 2 ms`, `${cpuMsPerCallSecond.toFixed(3)} ms`, cpuMsPerCallSecond <= 2],
    [`outgoing spacing p99 within 20 ± 3 ms`, `${p99} ms (a 0.5 ms bucket's upper edge)`, p99 <= 23.5],
    [`0 packets lost in (sessions)`, `${lostIn} of ${received}`, lostIn === 0],
    [
      `0 packets lost out (peers' sequence gaps)`,
      `${fromPeers.gaps} of ${fromPeers.received}`,
      fromPeers.gaps === 0,
    ],
    [`memory per call ≤ 250 KB`, `${memoryKb.toFixed(1)} KB`, memoryKb <= 250],
  ];
  console.log(
    `RTP media: ${calls} calls for ${elapsed.toFixed(1)} s; ${sent} packets sent, ${received} received`,
  );
  const count = window.reduce((n, [, c]) => n + c, 0);
  console.log(
    `pacer spacing over the window: ${count} measured, p50 ${percentile(window, 50)} ms, p99 ${p99} ms, ` +
      `largest ${window.at(-1)?.[0]} ms`,
  );
  for (const [target, value, holds] of rows)
    console.log(`${holds ? "holds " : "MISSED"}  ${target}: ${value}`);
}

/** The histogram buckets ([upper edge ms, count]) added between two snapshots. */
function windowBuckets(
  before: Array<[number, number]>,
  after: Array<[number, number]>,
): Array<[number, number]> {
  const earlier = new Map(before);
  return after
    .map(([edge, c]): [number, number] => [edge, c - (earlier.get(edge) ?? 0)])
    .filter(([, c]) => c > 0);
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

/** The child: one socket per call, sending a packet per call every 20 ms and counting what comes back. */
async function peers(): Promise<void> {
  const calls = Number(process.argv[process.argv.indexOf("--peers") + 1]);
  const sockets: dgram.Socket[] = [];
  for (let i = 0; i < calls; i++) {
    const socket = dgram.createSocket("udp4");
    await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
    sockets.push(socket);
  }
  let measuring = false;
  let received = 0;
  let gaps = 0;
  const lastSeq = new Int32Array(calls).fill(-1);
  sockets.forEach((socket, i) => {
    socket.on("message", (msg) => {
      // Audio only: telephone-events aside, and RTCP meant for port + 1 that lands on a neighbour's socket.
      if (msg.length !== 172 || msg[0] !== 0x80 || ((msg[1]! & 0x7f) !== 0 && (msg[1]! & 0x7f) !== 8)) return;
      const seq = msg.readUInt16BE(2);
      if (measuring) {
        received++;
        if (lastSeq[i]! >= 0) gaps += (seq - lastSeq[i]! - 1 + 0x10000) & 0xffff;
      }
      lastSeq[i] = seq;
    });
  });
  process.send!(sockets.map((s) => s.address().port));
  const { ports } = await nextMessage<{ ports: number[] }>();
  const packets = ports.map((_, i) => {
    const b = Buffer.alloc(172, 0xff);
    b[0] = 0x80;
    b[1] = i % 2 === 0 ? 0 : 8;
    b.writeUInt32BE(0x1000 + i, 8);
    return b;
  });
  let k = 0;
  const start = performance.now();
  const tick = () => {
    // Fixed boundaries, as the pacer does, so the peers do not drift either.
    while (performance.now() - start >= (k + 1) * 20) {
      k++;
      ports.forEach((port, i) => {
        const b = packets[i]!;
        b.writeUInt16BE(k & 0xffff, 2);
        b.writeUInt32BE((k * 160) >>> 0, 4);
        sockets[i]!.send(b, port, "127.0.0.1");
      });
    }
    setTimeout(tick, Math.max(0, start + (k + 1) * 20 - performance.now()));
  };
  tick();
  process.on("message", (m: { measure?: boolean; report?: boolean }) => {
    if (m.measure) {
      measuring = true;
      lastSeq.fill(-1);
    }
    if (m.report) process.send!({ received, gaps });
  });
}

function nextMessage<T>(): Promise<T> {
  return new Promise((resolve) => process.once("message", (m) => resolve(m as T)));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
