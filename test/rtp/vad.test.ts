/**
 * The voice activity detector on generated frames: levels in dBFS, speech
 * starting after the attack, lasting through the hangover, silence counted
 * from the last loud frame, clicks and quiet noise ignored.
 */
import { describe, expect, it } from "vitest";
import { levelDbfs, VoiceActivityDetector } from "../../src/rtp/vad.js";

/** A 20 ms frame of a 300 Hz sine at `dbfs` RMS. */
function frame(dbfs: number): Int16Array {
  const amp = 32768 * 10 ** (dbfs / 20) * Math.SQRT2;
  return Int16Array.from({ length: 160 }, (_, i) =>
    Math.round(amp * Math.sin((2 * Math.PI * 300 * i) / 8000)),
  );
}
const quiet = () => new Int16Array(160);

describe("levelDbfs", () => {
  it("measures RMS against full scale", () => {
    expect(levelDbfs(new Int16Array(160).fill(-32768))).toBeCloseTo(0, 5);
    expect(levelDbfs(frame(-20))).toBeCloseTo(-20, 1);
    expect(levelDbfs(quiet())).toBe(-120);
    expect(levelDbfs(new Int16Array(0))).toBe(-120);
  });
});

describe("VoiceActivityDetector", () => {
  it("starts speech after 40 ms loud, keeps it through 300 ms of hangover, counts silence from the last loud frame", () => {
    const vad = new VoiceActivityDetector();
    const run = (frames: Int16Array[]) => frames.map((f) => vad.push(f));
    const before = run([quiet(), quiet()]);
    expect(before.map((a) => [a.speech, a.silenceMs])).toEqual([
      [false, 20],
      [false, 40],
    ]);
    const talk = run([frame(-25), frame(-25), frame(-25)]);
    expect(talk.map((a) => a.speech)).toEqual([false, true, true]);
    expect(talk.map((a) => a.silenceMs)).toEqual([60, 0, 0]);
    const pause = run(Array.from({ length: 16 }, quiet));
    expect(pause.map((a) => a.speech)).toEqual([...Array(14).fill(true), false, false]);
    expect(pause.at(-1)!.silenceMs).toBe(320);
    expect(pause.at(-1)!.heardSpeech).toBe(true);
  });

  it("ignores a click and noise under the threshold", () => {
    const vad = new VoiceActivityDetector();
    const results = [frame(-10), quiet(), frame(-45), frame(-45), frame(-45)].map((f) => vad.push(f));
    expect(results.some((r) => r.speech)).toBe(false);
    expect(results.at(-1)).toMatchObject({ heardSpeech: false, silenceMs: 100 });
  });

  it("takes threshold, attack and hangover from options", () => {
    const vad = new VoiceActivityDetector({ thresholdDbfs: -50, attackMs: 20, hangoverMs: 40 });
    expect(vad.push(frame(-45)).speech).toBe(true);
    expect([quiet(), quiet(), quiet()].map((f) => vad.push(f).speech)).toEqual([true, false, false]);
    expect(() => new VoiceActivityDetector({ hangoverMs: -1 })).toThrow(/hangoverMs/);
  });
});
