/**
 * The frame clock on a ManualScheduler: boundaries at start + k frames
 * whatever the timers do. Late timers are made by a wrapper that adds a
 * chosen delay to every wait the clock asks for; a wake-up late by more
 * than a frame hands out the boundaries due, in order, in that one wake-up;
 * the next wake-up is aimed at the next boundary, so lateness never
 * accumulates. Also: early wake-ups, stopping, catching up at an end, and
 * a scaled clock (frames of fractional ms).
 */
import { describe, expect, it } from "vitest";
import { FrameClock, type FrameTimers, schedulerTimers } from "../../src/media/frame-clock.js";
import { ManualScheduler } from "../support/scheduler.js";

interface Handed {
  k: number;
  atMs: number;
  /** The clock when it was handed out. */
  nowMs: number;
  /** Which wake-up handed it out (0, 1, ...). */
  wake: number;
}

/**
 * Timers on `scheduler` whose waits come `lateMs(n, waitMs)` ms later than
 * asked (n counting the waits from 0, waitMs the wait asked, in ms of the
 * clock), counting the wake-ups; `timeScale` clock seconds per timer second.
 */
function lateTimers(
  scheduler: ManualScheduler,
  lateMs: (n: number, waitMs: number) => number,
  timeScale = 1,
) {
  let waits = 0;
  let wakes = 0;
  const timers: FrameTimers = {
    nowMs: () => scheduler.now().getTime(),
    after: (seconds, fn) =>
      scheduler.after(seconds * timeScale + lateMs(waits++, seconds * timeScale * 1000) / 1000, () => {
        wakes++;
        fn();
      }),
    timeScale,
  };
  return {
    timers,
    get wakes() {
      return wakes;
    },
  };
}

/** A clock on `timers` recording what it hands out and in which wake-up. */
function recorded(timers: FrameTimers, frameSeconds: number, wakes: () => number) {
  const handed: Handed[] = [];
  const clock = new FrameClock(timers, frameSeconds, (k, atMs) =>
    handed.push({ k, atMs, nowMs: timers.nowMs(), wake: wakes() }),
  );
  return { clock, handed };
}

const START = Date.parse("2026-01-01T00:00:00.000Z");

describe("FrameClock", () => {
  it("on time: boundary k at start + k frames, one per wake-up, none synchronously", async () => {
    const scheduler = new ManualScheduler();
    const late = lateTimers(scheduler, () => 0);
    const { clock, handed } = recorded(late.timers, 0.16, () => late.wakes);
    expect(clock.startMs).toBe(START);
    expect(clock.frameMs).toBe(160);
    expect(handed).toEqual([]);
    await scheduler.advance(0.159);
    expect(handed).toEqual([]);
    await scheduler.advance(0.001);
    expect(handed).toEqual([{ k: 1, atMs: START + 160, nowMs: START + 160, wake: 1 }]);
    await scheduler.advance(0.16 * 9);
    expect(handed.map((h) => h.k)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(handed.every((h) => h.atMs === START + h.k * 160 && h.nowMs === h.atMs)).toBe(true);
    expect(late.wakes).toBe(10);
    expect(clock.boundaries).toBe(10);
  });

  it("a wake-up late by more than a frame hands out every boundary due, in order, then aims at the next", async () => {
    const scheduler = new ManualScheduler();
    // The third wait comes 400 ms late (2.5 frames), the others on time.
    const late = lateTimers(scheduler, (n) => (n === 2 ? 400 : 0));
    const { handed } = recorded(late.timers, 0.16, () => late.wakes);
    await scheduler.advance(1.6);
    expect(handed.map((h) => h.k)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // Boundaries are where they belong, however late they were handed out.
    expect(handed.every((h) => h.atMs === START + h.k * 160)).toBe(true);
    // Boundary 3 (480 ms) was due at 480 and handed out at 880, with 4 and 5 (640, 800).
    const third = handed.filter((h) => h.wake === 3);
    expect(third.map((h) => [h.k, h.nowMs - START])).toEqual([
      [3, 880],
      [4, 880],
      [5, 880],
    ]);
    // The next wake-up is at boundary 6 (960), not 880 + 160.
    expect(handed.find((h) => h.k === 6)?.nowMs).toBe(START + 960);
    expect(late.wakes).toBe(8);
  });

  it("does not drift over many frames of late wake-ups: lateness never accumulates", async () => {
    const scheduler = new ManualScheduler();
    // 20 ms frames (RTP), every wait late by 0 to 46 ms (a fixed scattered sequence).
    const lateness = (n: number) => (n * 37) % 47;
    const late = lateTimers(scheduler, lateness);
    const { clock, handed } = recorded(late.timers, 0.02, () => late.wakes);
    await scheduler.advance(10_000 * 0.02 + 0.046);
    // By 200.046 s every boundary up to 200 s (10,000) was handed out, none after 200.046 s
    // (10,002 at 200.040 may still wait for its late wake-up): nothing lost, nothing extra.
    expect(handed.length).toBeGreaterThanOrEqual(10_000);
    expect(handed.length).toBeLessThanOrEqual(10_002);
    expect(clock.boundaries).toBe(handed.length);
    handed.forEach((h, i) => {
      expect(h.k).toBe(i + 1);
      expect(h.atMs).toBe(START + h.k * 20);
      // Handed out no earlier than due, and no later than the longest lateness allows.
      expect(h.nowMs).toBeGreaterThanOrEqual(h.atMs);
      expect(h.nowMs - h.atMs).toBeLessThanOrEqual(46);
    });
    // Late by up to 46 ms on 20 ms frames: some wake-ups carried more than one boundary.
    expect(late.wakes).toBeLessThan(10_000);
    expect(late.wakes).toBeGreaterThan(10_000 / 4);
  });

  it("a wake-up before the boundary hands out nothing and waits for it", async () => {
    const scheduler = new ManualScheduler();
    // A coarse timer: every wait of 2 ms or more comes back 1 ms early.
    const late = lateTimers(scheduler, (_n, waitMs) => (waitMs >= 2 ? -1 : 0));
    const { handed } = recorded(late.timers, 0.16, () => late.wakes);
    await scheduler.advance(0.16);
    expect(handed.map((h) => [h.k, h.nowMs - START])).toEqual([[1, 160]]);
    expect(late.wakes).toBe(2);
    await scheduler.advance(0.16 * 99);
    expect(handed.map((h) => h.nowMs - START)).toEqual(handed.map((h) => h.k * 160));
    expect(handed).toHaveLength(100);
    // Two wake-ups a boundary (the early one and the one on time), no more: it never spins.
    expect(late.wakes).toBe(200);
  });

  it("catchUp hands out the boundaries due by a time once; stop ends it, even from the callback", async () => {
    const scheduler = new ManualScheduler();
    const handed: number[] = [];
    const clock: FrameClock = new FrameClock(schedulerTimers(scheduler), 0.16, (k) => {
      handed.push(k);
      if (k === 7) clock.stop();
    });
    await scheduler.advance(0.2);
    expect(handed).toEqual([1]);
    // An end at 500 ms, before the next wake-up: boundaries 2 and 3 (320, 480) were due by then.
    clock.catchUp(START + 500);
    expect(handed).toEqual([1, 2, 3]);
    clock.catchUp(START + 500);
    clock.catchUp(START + 300);
    expect(handed).toEqual([1, 2, 3]);
    // Wake-ups go on from there: boundary 4 at 640.
    await scheduler.advance(0.44);
    expect(handed).toEqual([1, 2, 3, 4]);
    // Stopping inside the callback of boundary 7 stops a catch-up that was handing out 5 to 9.
    clock.catchUp(START + 9 * 160);
    expect(handed).toEqual([1, 2, 3, 4, 5, 6, 7]);
    await scheduler.advance(10);
    expect(handed).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(scheduler.pendingCount).toBe(0);
  });

  it("on a scaled clock a frame is frameSeconds × timeScale of the clock, boundaries on fractional ms", async () => {
    const scheduler = new ManualScheduler();
    // SIMULATOR_TIME_SCALE 0.01: a 0.16 s frame of timer time is 1.6 ms of the clock.
    const late = lateTimers(scheduler, () => 0, 0.01);
    const { clock, handed } = recorded(late.timers, 0.16, () => late.wakes);
    expect(clock.frameMs).toBeCloseTo(1.6, 12);
    await scheduler.advance(0.016);
    // 10 frames in 16 ms; each handed out at the first whole ms at or after its boundary.
    expect(handed.map((h) => h.k)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    for (const h of handed) {
      expect(h.atMs).toBeCloseTo(START + h.k * 1.6, 9);
      expect(h.nowMs).toBe(Math.ceil(h.atMs - 1e-9));
    }
  });

  it("refuses a frame or a time scale that is not a positive number", () => {
    const scheduler = new ManualScheduler();
    for (const frame of [0, -0.02, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new FrameClock(schedulerTimers(scheduler), frame, () => {})).toThrow(RangeError);
    }
    const timers = { ...schedulerTimers(scheduler), timeScale: 0 };
    expect(() => new FrameClock(timers, 0.02, () => {})).toThrow(RangeError);
    expect(scheduler.pendingCount).toBe(0);
  });
});
