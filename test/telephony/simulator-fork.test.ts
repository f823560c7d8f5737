/**
 * The carrier simulator's media fork (the Stream action) frame by frame:
 * - on real timers at scale 1 with the event loop held busy between frames
 *   (a few ms after every frame, 400 ms once): every output frame but the
 *   last is exactly 1280 samples (0.16 s), the frames that came due while
 *   the loop was held go out together, whole, and the output is the remote
 *   party's audio from the fork's start to the leg's end, no more, no less,
 *   no sample twice; the input plays a whole frame from each boundary;
 * - on a scaled test scheduler (SIMULATOR_TIME_SCALE 0.01, late timers):
 *   12.8-sample frames go out as 13 and 12 on fixed sample boundaries, the
 *   total equal to the time that passed.
 */
import { describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import type { CarrierEvents, ForkEvents } from "../../src/telephony/carrier.js";
import { RealScheduler, type Scheduler } from "../../src/telephony/scheduler.js";
import { SimulatorCarrier, type SimulatorLeg } from "../../src/telephony/simulator/carrier.js";
import type { SimulatorFork } from "../../src/telephony/simulator/fork.js";
import {
  longestPrefixMatch,
  type Route,
  type RouteSource,
  validateRoute,
} from "../../src/telephony/simulator/routes.js";
import { ManualScheduler } from "../support/scheduler.js";

const FRAME_SECONDS = 0.16;
const FRAME = 1280;

const SPEAKER: Route = {
  id: "r-speech",
  createTime: new Date(0),
  ...validateRoute({
    prefix: "+6125551",
    outcome: undefined,
    ringSeconds: undefined,
    talkSeconds: 2,
    audio: "SPEECH",
    digits: "",
    errorCode: "",
    errorMessage: "",
  }),
};
const ROUTES: RouteSource = { resolve: async (to) => longestPrefixMatch([SPEAKER], to) };

/** Holds the event loop for `ms` of wall-clock time. */
function busyWait(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

function concat(chunks: Int16Array[]): Int16Array {
  const out = new Int16Array(chunks.reduce((n, c) => n + c.length, 0));
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}

interface Run {
  leg: SimulatorLeg;
  fork: SimulatorFork;
  chunks: Int16Array[];
  /** For each chunk, the wake-up (timer callback) that delivered it. */
  batches: number[];
  drained: number;
  ended: Promise<void>;
}

/**
 * An incoming call from a speaking caller (talk 2 s) answered on `scheduler`,
 * forked as it is answered, `input` queued to play; `onChunk` runs after
 * each output frame is recorded (with its index).
 */
async function forkedCall(
  scheduler: Scheduler,
  input: Int16Array,
  onChunk: (index: number) => void = () => {},
): Promise<Run> {
  const carrier = new SimulatorCarrier(ROUTES, scheduler);
  let resolveEnded: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    resolveEnded = resolve;
  });
  let batch = 0;
  let batchOpen = false;
  const run = { chunks: [], batches: [], drained: 0, ended } as unknown as Run;
  const forkEvents: ForkEvents = {
    audio: (samples) => {
      run.chunks.push(samples.slice());
      run.batches.push(batch);
      // Chunks of one timer callback share a batch; the next callback opens another.
      if (!batchOpen) {
        batchOpen = true;
        queueMicrotask(() => {
          batch++;
          batchOpen = false;
        });
      }
      onChunk(run.chunks.length - 1);
    },
    drained: () => {
      run.drained++;
    },
    ended: () => resolveEnded(),
  };
  const events: CarrierEvents = {
    ringing: () => {},
    answered: () => {
      run.fork = run.leg.fork({ frameSeconds: FRAME_SECONDS }, forkEvents);
      run.fork.play(input);
    },
    ended: () => {},
  };
  run.leg = (await carrier.receiveCall(
    { callId: `fork-${Math.random()}`, to: "+61491570156", from: "+61255510001" },
    events,
  )) as SimulatorLeg;
  run.leg.answer();
  return run;
}

/** Samples 1, 2, 3, ... (never 0), so that where they land can be checked. */
function ramp(n: number): Int16Array {
  return Int16Array.from({ length: n }, (_, i) => (i % 30000) + 1);
}

describe("a media fork", () => {
  it("on real timers at scale 1 with a busy event loop: whole frames, late ones together, the audio equal to the call time", async () => {
    const input = ramp(4000);
    // A few ms held after every frame, and 400 ms (2.5 frames) after the third.
    const run = await forkedCall(new RealScheduler(systemClock, 1), input, (i) =>
      busyWait(i === 2 ? 400 : [3, 7, 11, 5][i % 4]!),
    );
    await run.ended;
    const { leg, fork, chunks } = run;
    const endedMs = leg.timeline.endedMs!;
    expect(endedMs).toBeGreaterThan(fork.startMs);

    // Every chunk but the last is one frame; the last is at most one.
    expect(chunks.length).toBeGreaterThanOrEqual(12);
    expect(chunks.slice(0, -1).map((c) => c.length)).toEqual(chunks.slice(0, -1).map(() => FRAME));
    expect(chunks.at(-1)!.length).toBeGreaterThan(0);
    expect(chunks.at(-1)!.length).toBeLessThanOrEqual(FRAME);
    // The frames due while the loop was held 400 ms went out in one wake-up.
    const sizes = new Map<number, number>();
    for (const b of run.batches) sizes.set(b, (sizes.get(b) ?? 0) + 1);
    expect(Math.max(...sizes.values())).toBeGreaterThanOrEqual(2);

    // The audio is the call time from the fork's start to the end, sample for sample.
    const output = concat(chunks);
    expect(output.length).toBe(Math.round((endedMs - fork.startMs) * 8));
    const remote = leg.timeline.renderRemote(fork.startMs, endedMs).channels[0]!;
    expect(remote.length).toBe(output.length);
    expect(output.some((s) => s !== 0)).toBe(true);
    expect(Buffer.from(output.buffer).equals(Buffer.from(remote.buffer))).toBe(true);

    // The input played a whole frame from each boundary, in order, from the first on.
    const played = leg.timeline.played.filter((p) => p.sound.kind === "samples");
    expect(played.map((p) => p.startMs - fork.startMs)).toEqual([160, 320, 480, 640]);
    const pieces = played.map((p) => (p.sound.kind === "samples" ? p.sound.samples : new Int16Array()));
    expect(pieces.map((p) => p.length)).toEqual([FRAME, FRAME, FRAME, 4000 - 3 * FRAME]);
    expect(Buffer.from(concat(pieces).buffer).equals(Buffer.from(input.buffer))).toBe(true);
    expect(run.drained).toBe(1);
  });

  it("on a scaled clock (0.01, late timers): 12.8-sample frames as 13 and 12 on fixed boundaries, the total exact", async () => {
    const manual = new ManualScheduler();
    const timeScale = 0.01;
    // Call time runs 100 times faster than the clock; every timer comes 3 ms of the clock late.
    const scaled: Scheduler = {
      now: () => manual.now(),
      after: (seconds, fn) => manual.after(seconds * timeScale + 0.003, fn),
      timeScale,
    };
    const input = ramp(100);
    const run = await forkedCall(scaled, input);
    await manual.advance(0.05);
    await run.ended;
    const { leg, fork, chunks } = run;
    const endedMs = leg.timeline.endedMs!;
    // Frame k ends at sample round(12.8 k) from the fork's start.
    const boundaries = [0];
    while (boundaries.length <= chunks.length) boundaries.push(Math.round(12.8 * boundaries.length));
    const total = Math.round((endedMs - fork.startMs) * 8);
    const expected = boundaries.slice(1, -1).map((b, i) => b - boundaries[i]!);
    expected.push(total - boundaries[chunks.length - 1]!);
    expect(chunks.map((c) => c.length)).toEqual(expected);
    expect(new Set(expected.slice(0, -1))).toEqual(new Set([12, 13]));
    expect(concat(chunks).length).toBe(total);
    expect(concat(chunks)).toEqual(leg.timeline.renderRemote(fork.startMs, endedMs).channels[0]);
    // Input: from boundary k (k = 1, ...), the next frame's worth of samples, until none are left.
    const frames: number[] = [];
    for (let k = 1, left = input.length; left > 0; k++) {
      const n = Math.min(left, Math.round(12.8 * (k + 1)) - Math.round(12.8 * k));
      frames.push(n);
      left -= n;
    }
    expect(frames).toEqual([13, 12, 13, 13, 13, 13, 12, 11]);
    const played = leg.timeline.played.filter((p) => p.sound.kind === "samples");
    expect(played.map((p) => (p.sound.kind === "samples" ? p.sound.samples.length : 0))).toEqual(frames);
    expect(played.map((p) => (p.startMs - fork.startMs) * 8)).toEqual(
      frames.map((_, i) => Math.round(12.8 * (i + 1))),
    );
  });
});
