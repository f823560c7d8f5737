/**
 * What the simulator says was said in its audio (CapturedAudio.speech):
 * the remote party's words (said, paused 0.5 s, said again), `say` texts,
 * channels of bridged captures, and words cut by the capture's window — and
 * that the audio holds speech exactly where the speech says.
 */
import { describe, expect, it } from "vitest";
import { LegMedia, SAMPLE_RATE, WORDS_PAUSE_MS } from "../../src/telephony/simulator/media.js";

const at = (ms: number) => Math.round((ms * SAMPLE_RATE) / 1000);

describe("simulated speech", () => {
  it("a party with words says them from the answer, pauses, and again; the audio is silent in the pauses", () => {
    const leg = new LegMedia("c1", "SPEECH", "book a table");
    leg.answer(1000);
    leg.end(5000);
    const audio = leg.render(1000, 5000);
    // 3 words: 1.2 s; a saying every 1.7 s: at 0, 1.7, 3.4 — cut at 4.0, where only "book"
    // ([3.4, 3.8)) has its middle inside ("a" has its middle at 4.0).
    expect(audio.speech).toEqual([
      { channel: 0, offsetMs: 0, durationMs: 1200, text: "book a table" },
      { channel: 0, offsetMs: 1200 + WORDS_PAUSE_MS, durationMs: 1200, text: "book a table" },
      { channel: 0, offsetMs: 3400, durationMs: 400, text: "book" },
    ]);
    const samples = audio.channels[0]!;
    expect(samples.subarray(at(1200), at(1700)).every((s) => s === 0)).toBe(true);
    expect(samples.subarray(at(0), at(1200)).some((s) => Math.abs(s) > 1000)).toBe(true);
    expect(samples.subarray(at(1700), at(2900)).some((s) => Math.abs(s) > 1000)).toBe(true);
  });

  it("a party without words is speech nobody can transcribe; says are on the channel they are heard on", () => {
    const caller = new LegMedia("c2", "SPEECH");
    const agent = new LegMedia("c3", "SPEECH", "hello there");
    caller.answer(0);
    agent.answer(2000);
    caller.say(100, 1.6, "Welcome to the  restaurant");
    caller.bridge(agent, 2000);
    caller.say(2500, 0.5, "not heard by the caller: bridged");
    caller.end(4000);
    const audio = caller.render(0, 4000);
    expect(audio.channels).toHaveLength(2);
    expect(audio.speech).toEqual([
      { channel: 0, offsetMs: 100, durationMs: 1600, text: "Welcome to the restaurant" },
      { channel: 1, offsetMs: 2000, durationMs: 800, text: "hello there" },
      { channel: 1, offsetMs: 3300, durationMs: 700, text: "hello there" },
    ]);
  });

  it("a capture that starts mid-saying keeps the words whose middle is inside it", () => {
    const leg = new LegMedia("c4", "SPEECH", "one two three four");
    leg.answer(0);
    // "one" [0, 400), "two" [400, 800), "three" [800, 1200), "four" [1200, 1600): in [500, 1300)
    // the middles of "two" and "three" are; the stretch is clipped to the window's start.
    expect(leg.renderRemote(500, 1300).speech).toEqual([
      { channel: 0, offsetMs: 0, durationMs: 700, text: "two three" },
    ]);
  });
});
