/**
 * The pacing clock on a ManualScheduler: one timer for many streams, every
 * stream asked once per 20 ms boundary, a late wake-up sending the frames
 * due, the clock running only while streams are registered, a throwing
 * stream not stopping the others, and the spacing histogram.
 */
import { describe, expect, it } from "vitest";
import type { FrameTimers } from "../../src/media/frame-clock.js";
import { MsHistogram, type PacedStream, Pacer, realTimers } from "../../src/rtp/pacer.js";
import { ManualScheduler } from "../support/scheduler.js";

/** Timers on `scheduler` whose n-th wait comes `lateMs(n)` ms late. */
function timersOn(scheduler: ManualScheduler, lateMs: (n: number) => number = () => 0): FrameTimers {
  let n = 0;
  return {
    nowMs: () => scheduler.now().getTime(),
    after: (seconds, fn) => scheduler.after(seconds + lateMs(n++) / 1000, fn),
    timeScale: 1,
  };
}

/** A stream recording when it sent what. */
function recorder(nowMs: () => number) {
  let k = 0;
  const sent: Array<{ frame: number; atMs: number }> = [];
  const stream: PacedStream = {
    nextFrame: () => Uint8Array.of(k++ & 0xff),
    send: (packet) => sent.push({ frame: packet[0]!, atMs: nowMs() }),
  };
  return { stream, sent };
}

describe("Pacer", () => {
  it("drives many streams from one timer, one frame each per 20 ms", async () => {
    const scheduler = new ManualScheduler();
    const pacer = new Pacer(timersOn(scheduler));
    const start = scheduler.now().getTime();
    const streams = Array.from({ length: 50 }, () => recorder(() => scheduler.now().getTime()));
    for (const s of streams) pacer.add(s.stream);
    expect(scheduler.pendingCount).toBe(1);
    await scheduler.advance(1);
    expect(scheduler.pendingCount).toBe(1);
    for (const s of streams) {
      expect(s.sent).toHaveLength(50);
      expect(s.sent.map((x) => x.atMs - start)).toEqual(Array.from({ length: 50 }, (_, i) => (i + 1) * 20));
    }
    const stats = pacer.stats();
    expect(stats).toMatchObject({ streams: 50, ticks: 50, sent: 2500, errors: 0 });
    expect(stats.spacing).toMatchObject({ count: 49, p50Ms: 20.5, p99Ms: 20.5, maxMs: 20 });
    expect(stats.lateness.maxMs).toBe(0);
  });

  it("sends the frames due when a wake-up is late, without drift", async () => {
    const scheduler = new ManualScheduler();
    // The 5th wait comes 45 ms late.
    const pacer = new Pacer(timersOn(scheduler, (n) => (n === 4 ? 45 : 0)));
    const start = scheduler.now().getTime();
    const r = recorder(() => scheduler.now().getTime());
    pacer.add(r.stream);
    await scheduler.advance(0.2);
    expect(r.sent.map((x) => x.frame)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Boundaries 5, 6 and 7 (100, 120, 140 ms) all go out at 145 ms; then back on the grid.
    expect(r.sent.map((x) => x.atMs - start)).toEqual([20, 40, 60, 80, 145, 145, 145, 160, 180, 200]);
    const spacing = pacer.stats().spacing;
    expect(spacing.maxMs).toBe(65);
    expect(spacing.buckets).toEqual([
      [0.5, 2],
      [15.5, 1],
      [20.5, 5],
      [65.5, 1],
    ]);
    expect(pacer.stats().lateness.maxMs).toBe(45);
  });

  it("runs its timer only while streams are registered", async () => {
    const scheduler = new ManualScheduler();
    const pacer = new Pacer(timersOn(scheduler));
    const a = recorder(() => scheduler.now().getTime());
    const b = recorder(() => scheduler.now().getTime());
    const removeA = pacer.add(a.stream);
    await scheduler.advance(0.05);
    const removeB = pacer.add(b.stream);
    await scheduler.advance(0.05);
    expect(a.sent).toHaveLength(5);
    expect(b.sent).toHaveLength(3); // joined at 50 ms: boundaries 60, 80, 100
    removeA();
    removeA();
    expect(pacer.running).toBe(true);
    removeB();
    expect(pacer.running).toBe(false);
    expect(scheduler.pendingCount).toBe(0);
    await scheduler.advance(0.1);
    expect(a.sent).toHaveLength(5);
  });

  it("keeps sending for the others when a stream throws, and sends nothing for undefined", async () => {
    const scheduler = new ManualScheduler();
    const errors: unknown[] = [];
    const pacer = new Pacer(timersOn(scheduler), { onError: (e) => errors.push(e) });
    const good = recorder(() => scheduler.now().getTime());
    let calls = 0;
    pacer.add({
      nextFrame: () => {
        throw new Error(`broken ${++calls}`);
      },
      send: () => {},
    });
    pacer.add({ nextFrame: () => undefined, send: () => expect.fail("nothing to send") });
    pacer.add(good.stream);
    await scheduler.advance(0.1);
    expect(good.sent).toHaveLength(5);
    expect(errors.map((e) => (e as Error).message)).toEqual([
      "broken 1",
      "broken 2",
      "broken 3",
      "broken 4",
      "broken 5",
    ]);
    expect(pacer.stats()).toMatchObject({ sent: 5, errors: 5 });
  });

  it("hands out a due boundary when polled, before its late timer wakes, and not twice", async () => {
    const scheduler = new ManualScheduler();
    // Every wait comes 15 ms late: a loop busy with I/O.
    const pacer = new Pacer(timersOn(scheduler, () => 15));
    const start = scheduler.now().getTime();
    const polled = recorder(() => scheduler.now().getTime());
    pacer.add(polled.stream);
    for (let i = 0; i < 10; i++) {
      await scheduler.advance(0.02);
      pacer.poll(); // a packet arrives just as each boundary falls
      pacer.poll();
    }
    expect(polled.sent.map((x) => x.atMs - start)).toEqual(
      Array.from({ length: 10 }, (_, i) => (i + 1) * 20),
    );
    expect(polled.sent.map((x) => x.frame)).toEqual(Array.from({ length: 10 }, (_, i) => i));
    pacer.stop();

    // The same timers unpolled: every frame 15 ms late or more.
    const late = new Pacer(timersOn(scheduler, () => 15));
    const from = scheduler.now().getTime();
    const unpolled = recorder(() => scheduler.now().getTime());
    late.add(unpolled.stream);
    await scheduler.advance(0.2);
    expect(Math.min(...unpolled.sent.map((x, i) => x.atMs - from - (i + 1) * 20))).toBeGreaterThanOrEqual(15);
    // Polling a stopped or idle pacer does nothing.
    late.stop();
    const before = unpolled.sent.length;
    await scheduler.advance(0.1);
    late.poll();
    expect(unpolled.sent.length).toBe(before);
  });

  it("paces on real timers too (one timer, frames keep coming)", async () => {
    const pacer = new Pacer(realTimers());
    let frames = 0;
    const done = new Promise<void>((resolve) => {
      pacer.add({
        nextFrame: () => Uint8Array.of(1),
        send: () => {
          if (++frames === 10) resolve();
        },
      });
    });
    await done;
    pacer.stop();
    expect(pacer.running).toBe(false);
    expect(pacer.stats().spacing.count).toBeGreaterThanOrEqual(9);
  });
});

describe("MsHistogram", () => {
  it("gives percentiles as bucket upper edges", () => {
    const h = new MsHistogram();
    for (let i = 0; i < 98; i++) h.record(20.1);
    h.record(23.2);
    h.record(250);
    expect(h.percentile(50)).toBe(20.5);
    expect(h.percentile(99)).toBe(23.5);
    expect(h.percentile(100)).toBe(250);
    expect(h.snapshot()).toMatchObject({ count: 100, maxMs: 250 });
    expect(new MsHistogram().percentile(99)).toBe(0);
  });
});
