/**
 * The jitter buffer frame by frame: each pushed frame is filled with a
 * marker value so the played order can be read back. Reordering, loss
 * (repeat once, then silence), sequence wrap, duplicates, late packets,
 * an SSRC change, a sequence jump, overflow, and going back to buffering
 * after running dry.
 */
import { describe, expect, it } from "vitest";
import { JitterBuffer, type PlayedFrame } from "../../src/rtp/jitter-buffer.js";

const frame = (v: number) => new Int16Array(160).fill(v);
/** What a popped frame holds: its marker value, or "-" for silence. */
const value = (f: PlayedFrame) => (f.kind === "silence" ? "-" : f.samples[0]!);
const popN = (jb: JitterBuffer, n: number) => Array.from({ length: n }, () => value(jb.pop()));

describe("JitterBuffer", () => {
  it("waits for 60 ms of frames, then plays in order", () => {
    const jb = new JitterBuffer();
    expect(jb.depthFrames).toBe(3);
    expect(value(jb.pop())).toBe("-");
    jb.push(1, 10, frame(10));
    expect(value(jb.pop())).toBe("-");
    jb.push(1, 11, frame(11));
    expect(value(jb.pop())).toBe("-");
    jb.push(1, 12, frame(12));
    expect(popN(jb, 4)).toEqual([10, 11, 12, "-"]);
    expect(jb.counters).toMatchObject({ received: 3, played: 3, lost: 0, late: 0, reordered: 0 });
  });

  it("starts with fewer frames once the first has waited the depth", () => {
    const jb = new JitterBuffer();
    jb.push(1, 0, frame(1));
    expect(popN(jb, 4)).toEqual(["-", "-", "-", 1]);
  });

  it("reorders, including a frame earlier than the first received", () => {
    const jb = new JitterBuffer();
    for (const s of [5, 3, 4, 7, 6]) jb.push(1, s, frame(s));
    expect(popN(jb, 6)).toEqual([3, 4, 5, 6, 7, "-"]);
    expect(jb.counters.reordered).toBe(3);
    expect(jb.counters.lost).toBe(0);
  });

  it("conceals a lost frame with the previous one, then silence", () => {
    const jb = new JitterBuffer();
    for (const s of [0, 1, 3, 6, 7]) jb.push(1, s, frame(s + 100));
    const played = [jb.pop(), jb.pop(), jb.pop(), jb.pop(), jb.pop(), jb.pop(), jb.pop(), jb.pop()];
    expect(played.map(value)).toEqual([100, 101, 101, 103, 103, 0, 106, 107]);
    expect(played.map((f) => f.kind)).toEqual([
      "audio",
      "audio",
      "concealed",
      "audio",
      "concealed",
      "concealed",
      "audio",
      "audio",
    ]);
    expect(played.map((f) => f.sequence)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(jb.counters.lost).toBe(3);
  });

  it("plays silence, not loss, for packets without audio (telephone-events)", () => {
    const jb = new JitterBuffer();
    jb.push(1, 0, frame(10));
    for (const s of [1, 2, 3]) jb.pushEmpty(1, s);
    jb.push(1, 4, frame(14));
    const played = [jb.pop(), jb.pop(), jb.pop(), jb.pop(), jb.pop()];
    expect(played.map(value)).toEqual([10, "-", "-", "-", 14]);
    expect(played.map((f) => f.sequence)).toEqual([0, 1, 2, 3, 4]);
    expect(jb.counters).toMatchObject({ lost: 0, played: 2, underruns: 0 });
  });

  it("survives the sequence wrap, reordered across it", () => {
    const jb = new JitterBuffer();
    for (const s of [65533, 65534, 0, 65535, 1, 2]) jb.push(1, s, frame(s === 65535 ? -1 : s % 100));
    expect(popN(jb, 6)).toEqual([33, 34, -1, 0, 1, 2]);
    expect(jb.counters).toMatchObject({ lost: 0, reordered: 1, resyncs: 0 });
  });

  it("counts duplicates (buffered or played) and late frames, and drops them", () => {
    const jb = new JitterBuffer();
    for (const s of [0, 0, 2, 3, 4]) jb.push(1, s, frame(s));
    expect(popN(jb, 2)).toEqual([0, 0]); // 1 concealed with 0 repeated
    jb.push(1, 0, frame(99)); // played already
    jb.push(1, 1, frame(99)); // its turn has passed
    expect(popN(jb, 4)).toEqual([2, 3, 4, "-"]);
    expect(jb.counters).toMatchObject({ duplicate: 2, late: 1, lost: 1, played: 4 });
  });

  it("re-syncs on a new SSRC", () => {
    const jb = new JitterBuffer();
    for (const s of [0, 1, 2, 3]) jb.push(1, s, frame(s));
    expect(popN(jb, 2)).toEqual([0, 1]);
    for (const s of [40000, 40001, 40002]) jb.push(2, s, frame(s - 40000 + 50));
    expect(popN(jb, 4)).toEqual([50, 51, 52, "-"]);
    expect(jb.counters.resyncs).toBe(1);
    expect(jb.counters.late).toBe(0);
  });

  it("re-syncs on a sequence jump of more than 100 frames once the next packet confirms it", () => {
    const jb = new JitterBuffer();
    for (const s of [0, 1, 2]) jb.push(1, s, frame(s));
    expect(popN(jb, 3)).toEqual([0, 1, 2]);
    for (const s of [30000, 30001, 30002, 30003]) jb.push(1, s, frame(s % 100));
    expect(popN(jb, 3)).toEqual([1, 2, 3]);
    expect(jb.counters).toMatchObject({ resyncs: 1, strays: 1, lost: 0, late: 0 });
  });

  it("drops a lone stray packet far from the stream and plays on", () => {
    const jb = new JitterBuffer();
    for (const s of [0, 1, 2]) jb.push(1, s, frame(s));
    jb.push(1, 40000, frame(99));
    for (const s of [3, 4]) jb.push(1, s, frame(s));
    jb.push(1, 20000, frame(99));
    jb.push(1, 5, frame(5));
    expect(popN(jb, 7)).toEqual([0, 1, 2, 3, 4, 5, "-"]);
    expect(jb.counters).toMatchObject({ resyncs: 0, strays: 2, lost: 0 });
  });

  it("drops the oldest frames past maxMs (default 4 × depth)", () => {
    const jb = new JitterBuffer();
    expect(jb.maxFrames).toBe(12);
    for (let s = 0; s < 20; s++) jb.push(1, s, frame(s));
    expect(jb.size).toBe(12);
    expect(jb.counters.overflow).toBe(8);
    expect(popN(jb, 2)).toEqual([8, 9]);
  });

  it("goes back to buffering after running dry", () => {
    const jb = new JitterBuffer();
    for (const s of [0, 1, 2]) jb.push(1, s, frame(s));
    expect(popN(jb, 4)).toEqual([0, 1, 2, "-"]);
    jb.push(1, 3, frame(3));
    expect(popN(jb, 1)).toEqual(["-"]);
    jb.push(1, 4, frame(4));
    jb.push(1, 5, frame(5));
    expect(popN(jb, 4)).toEqual([3, 4, 5, "-"]);
    expect(jb.counters.lost).toBe(0);
  });

  it("takes its depth from options", () => {
    const jb = new JitterBuffer({ depthMs: 20, maxMs: 40 });
    expect(jb.depthFrames).toBe(1);
    jb.push(1, 0, frame(7));
    expect(popN(jb, 1)).toEqual([7]);
    expect(() => new JitterBuffer({ depthMs: 0 })).toThrow(/depthMs/);
  });
});

describe("JitterBuffer custody (frames handed back to `release`)", () => {
  it("hands back every frame exactly once, and never one it still holds or may conceal with", () => {
    const released: Int16Array[] = [];
    const jb = new JitterBuffer({ release: (f) => released.push(f) });
    const pushed: Int16Array[] = [];
    const push = (ssrc: number, seq: number) => {
      const f = frame(seq);
      pushed.push(f);
      jb.push(ssrc, seq, f);
      return f;
    };
    // Playing frames: each is handed back once the next one is played (the last stays for concealment).
    for (const s of [1, 2, 3]) push(7, s);
    expect(popN(jb, 3)).toEqual([1, 2, 3]);
    expect(released.map((f) => f[0])).toEqual([1, 2]);
    // A duplicate of a played frame, a late one and a duplicate of a buffered one: not kept, handed back at once.
    const dupPlayed = push(7, 2);
    push(7, 5);
    const dupBuffered = push(7, 5);
    expect(released.at(-2)).toBe(dupPlayed);
    expect(released.at(-1)).toBe(dupBuffered);
    // Frame 4 is lost: 3 (still held) conceals it, and is not handed back yet.
    expect(value(jb.pop())).toBe(3);
    expect(released.filter((f) => f[0] === 3)).toHaveLength(0);
    expect(value(jb.pop())).toBe(5);
    expect(released.filter((f) => f[0] === 3)).toHaveLength(1);
    // A stray far off: handed back.
    const stray = push(7, 5000);
    expect(released.at(-1)).toBe(stray);
    // Overflow drops the oldest buffered frames: handed back.
    for (let s = 6; s < 6 + jb.maxFrames + 2; s++) push(7, s);
    expect(jb.counters.overflow).toBe(2);
    // A new SSRC: everything buffered, and the last played, handed back.
    push(8, 100);
    const held = new Set([...pushed].filter((f) => !released.includes(f)));
    expect(held.size).toBe(1); // only the new stream's first frame
    expect([...held][0]![0]).toBe(100);
    // No frame was handed back twice.
    expect(new Set(released).size).toBe(released.length);
  });

  it("does not hand back the shared empty frame of a telephone-event packet", () => {
    const released: Int16Array[] = [];
    const jb = new JitterBuffer({ release: (f) => released.push(f) });
    jb.pushEmpty(1, 1);
    jb.pushEmpty(1, 1);
    jb.push(2, 1, frame(1));
    expect(released).toHaveLength(0);
  });
});
