/**
 * The carrier simulator's audio: captures (what was said and played, the
 * remote party, bridges, the leg's end), recordCaller and each way it ends,
 * determinism, and the seekable signal generators the timeline relies on.
 */
import { describe, expect, it } from "vitest";
import { seedFrom, speechLike, speechLikeWindow, tone } from "../../src/recordings/audio/signal.js";
import { isSilent, silentFrames } from "../../src/recordings/audio/silence.js";
import type { CarrierEvents, RecordCallerResult } from "../../src/telephony/carrier.js";
import { SimulatorCarrier, type SimulatorLeg } from "../../src/telephony/simulator/carrier.js";
import { SAMPLE_RATE, soundOfUri, subtract } from "../../src/telephony/simulator/media.js";
import {
  longestPrefixMatch,
  type Route,
  type RouteInput,
  type RouteSource,
  validateRoute,
} from "../../src/telephony/simulator/routes.js";
import { ManualScheduler } from "../support/scheduler.js";

const RATE = SAMPLE_RATE;

const BLANK: RouteInput = {
  prefix: "",
  outcome: undefined,
  ringSeconds: undefined,
  talkSeconds: undefined,
  audio: undefined,
  digits: "",
  errorCode: "",
  errorMessage: "",
};

let seq = 0;
function route(input: Partial<RouteInput>): Route {
  return { id: `r${seq++}`, createTime: new Date(0), ...validateRoute({ ...BLANK, ...input }) };
}

const NO_EVENTS: CarrierEvents = { ringing: () => {}, answered: () => {}, ended: () => {} };

/** Callers by number: +61255500xx are silent, +61255501xx speak; talk 600 s unless said. */
const ROUTES = [
  route({ prefix: "+6125550", audio: "SILENCE", talkSeconds: 600 }),
  route({ prefix: "+6125551", audio: "SPEECH", talkSeconds: 600 }),
];

function simulator(routes: Route[] = ROUTES) {
  const scheduler = new ManualScheduler();
  const source: RouteSource = { resolve: async (to) => longestPrefixMatch(routes, to) };
  const carrier = new SimulatorCarrier(source, scheduler);
  /** An incoming call from `from`, answered (state answered on return). */
  const answered = async (callId: string, from: string) => {
    const leg = (await carrier.receiveCall({ callId, to: "+61491570156", from }, NO_EVENTS)) as SimulatorLeg;
    leg.answer();
    await scheduler.advance(0);
    return leg;
  };
  return { scheduler, carrier, answered };
}

/** Samples from `from` to `to` seconds into the channel. */
const span = (channel: Int16Array, from: number, to: number) => channel.subarray(from * RATE, to * RATE);
const zeros = (channel: Int16Array) => channel.every((s) => s === 0);
const rms = (channel: Int16Array) => Math.sqrt(channel.reduce((sum, s) => sum + s * s, 0) / channel.length);
/** Longest run of silent 20 ms frames, in seconds. */
function longestSilence(channel: Int16Array): number {
  let run = 0;
  let best = 0;
  for (const silent of silentFrames([channel], RATE)) {
    run = silent ? run + 1 : 0;
    best = Math.max(best, run);
  }
  return best * 0.02;
}

describe("capture", () => {
  it("an unbridged leg: one channel, a Say then silence, exactly duration * 8000 samples", async () => {
    const { scheduler, answered } = await simulator();
    const leg = await answered("c1", "+61255500001");
    await scheduler.advance(1);
    const start = scheduler.now();
    const capture = leg.capture();
    const said = leg.say("one two three four five"); // 2 s
    await scheduler.advance(2);
    expect(await said).toEqual({ completed: true });
    await scheduler.advance(3); // the markup's Pause
    const audio = capture.stop();
    expect(audio.sampleRate).toBe(8000);
    expect(audio.startTime).toEqual(start);
    expect(audio.channels).toHaveLength(1);
    expect(audio.channels[0]!.length).toBe(5 * 8000);
    expect(audio.durationSeconds).toBe(5);
    const [mono] = audio.channels as [Int16Array];
    expect(isSilent([span(mono, 0, 2)], RATE)).toBe(false);
    expect(longestSilence(span(mono, 0, 2))).toBeLessThan(0.5);
    expect(zeros(span(mono, 2, 5))).toBe(true);
    // stop() is idempotent: the same audio, whenever called.
    await scheduler.advance(10);
    expect(capture.stop()).toBe(audio);
  });

  it("plays tones (440 Hz, 1000 Hz for tone:beep) at level 0.3 and silence: as zeros", async () => {
    const { scheduler, answered } = await simulator();
    const leg = await answered("c1", "+61255500001");
    const capture = leg.capture();
    void leg.play({ uri: "https://example.com/hold.mp3", durationSeconds: 1 });
    await scheduler.advance(1);
    void leg.play({ uri: "silence:", durationSeconds: 1 });
    await scheduler.advance(1);
    void leg.play({ uri: "tone:beep", durationSeconds: 0.5 });
    await scheduler.advance(0.5);
    const [mono] = capture.stop().channels as [Int16Array];
    expect(mono.length).toBe(2.5 * 8000);
    expect(rms(span(mono, 0, 1))).toBeCloseTo((0.3 * 32767) / Math.SQRT2, -1);
    expect(zeros(span(mono, 1, 2))).toBe(true);
    const crossings = (c: Int16Array) =>
      c.reduce((n, s, i) => n + (i > 0 && c[i - 1]! < 0 && s >= 0 ? 1 : 0), 0);
    expect(crossings(span(mono, 0, 1))).toBeGreaterThanOrEqual(439);
    expect(crossings(span(mono, 0, 1))).toBeLessThanOrEqual(441);
    expect(crossings(span(mono, 2, 2.5))).toBeGreaterThanOrEqual(499);
    expect(crossings(span(mono, 2, 2.5))).toBeLessThanOrEqual(501);
    expect(soundOfUri("silence:")).toEqual({ kind: "silence" });
  });

  it("a SPEECH remote party talks from the answer on, never pausing a second; zeros before the answer", async () => {
    const { scheduler, carrier } = await simulator();
    const leg = (await carrier.receiveCall(
      { callId: "c1", to: "+61491570156", from: "+61255510001" },
      NO_EVENTS,
    )) as SimulatorLeg;
    const capture = leg.capture();
    await scheduler.advance(2);
    leg.answer();
    await scheduler.advance(20);
    const audio = capture.stop();
    expect(audio.channels).toHaveLength(1);
    const [mono] = audio.channels as [Int16Array];
    expect(mono.length).toBe(22 * 8000);
    expect(zeros(span(mono, 0, 2))).toBe(true);
    expect(isSilent([span(mono, 2, 3)], RATE)).toBe(false);
    expect(longestSilence(span(mono, 2, 22))).toBeLessThan(1);
  });

  it("what is played mixes with the remote party on channel 0, clipped to int16", async () => {
    const { scheduler, answered } = await simulator();
    const leg = await answered("c1", "+61255510001");
    const remoteOnly = leg.capture();
    await scheduler.advance(1);
    const [remote] = remoteOnly.stop().channels as [Int16Array];
    const { answered: again, scheduler: s2 } = await simulator();
    const same = await again("c1", "+61255510001");
    const mixed = same.capture();
    void same.play({ uri: "u", durationSeconds: 1 });
    await s2.advance(1);
    const [mix] = mixed.stop().channels as [Int16Array];
    const beep = tone({ frequency: 440, sampleRate: RATE, level: 0.3 }, 0, RATE);
    for (let i = 0; i < RATE; i += 97) {
      expect(mix[i]).toBe(Math.max(-32768, Math.min(32767, remote[i]! + beep[i]!)));
    }
  });

  it("across a bridge: two channels, channel 1 the peer's remote party only while bridged", async () => {
    const { scheduler, answered } = await simulator([
      route({ prefix: "+6125550", audio: "SILENCE", talkSeconds: 600 }),
      route({ prefix: "+6125551", audio: "SPEECH", talkSeconds: 5 }),
    ]);
    const a = await answered("a", "+61255500001");
    const capture = a.capture();
    void a.play({ uri: "u", durationSeconds: 1 }); // heard on channel 0
    await scheduler.advance(2);
    const b = await answered("b", "+61255510001"); // answered at 2 s, hangs up at 7 s
    a.bridge(b);
    const peer = b.capture();
    void a.play({ uri: "u", durationSeconds: 1 }); // while bridged: not on channel 0
    await scheduler.advance(6);
    expect(a.bridgedWith).toBeUndefined();
    const audio = capture.stop();
    expect(audio.channels).toHaveLength(2);
    const [own, other] = audio.channels as [Int16Array, Int16Array];
    expect(own.length).toBe(8 * 8000);
    expect(other.length).toBe(8 * 8000);
    expect(isSilent([span(own, 0, 1)], RATE)).toBe(false);
    expect(zeros(span(own, 1, 8))).toBe(true);
    expect(zeros(span(other, 0, 2))).toBe(true);
    expect(isSilent([span(other, 2, 3)], RATE)).toBe(false);
    expect(zeros(span(other, 7, 8))).toBe(true);
    // Channel 1 while bridged is exactly what b's remote party said.
    const bAudio = peer.stop();
    expect(bAudio.durationSeconds).toBe(5);
    expect(span(other, 2, 7)).toEqual(bAudio.channels[0]);
    // b's capture: its remote party on 0, a's (silent) party on 1.
    expect(bAudio.channels).toHaveLength(2);
    expect(zeros(bAudio.channels[1]!)).toBe(true);
  });

  it("one channel when the capture window does not meet a bridge", async () => {
    const { scheduler, answered } = await simulator();
    const a = await answered("a", "+61255500001");
    const b = await answered("b", "+61255510001");
    const before = a.capture();
    await scheduler.advance(1);
    expect(before.stop().channels).toHaveLength(1);
    a.bridge(b);
    const during = a.capture();
    expect(during.stop().channels).toHaveLength(2); // bridged at its (instant) start
    await scheduler.advance(1);
    b.hangUp();
    const after = a.capture();
    await scheduler.advance(1);
    expect(after.stop().channels).toHaveLength(1);
  });

  it("stopped after the leg ended, stops at the end; on an ended leg, captures nothing", async () => {
    const { scheduler, answered } = await simulator([route({ prefix: "+61", talkSeconds: 4 })]);
    const leg = await answered("c1", "+61255510001");
    await scheduler.advance(1);
    const capture = leg.capture();
    await scheduler.advance(10);
    expect(leg.state).toBe("ended");
    const audio = capture.stop();
    expect(audio.durationSeconds).toBe(3);
    expect(audio.channels[0]!.length).toBe(3 * 8000);
    expect(isSilent([span(audio.channels[0]!, 2, 3)], RATE)).toBe(false);
    const late = leg.capture();
    await scheduler.advance(1);
    expect(late.stop().channels[0]!.length).toBe(0);
  });

  it("a say cut short by a hang-up stops at the hang-up", async () => {
    const { scheduler, answered } = await simulator();
    const leg = await answered("c1", "+61255500001");
    const capture = leg.capture();
    const said = leg.say("a long sentence of many many many words to say"); // 4 s
    await scheduler.advance(1);
    leg.hangUp();
    expect(await said).toEqual({ completed: false });
    await scheduler.advance(5);
    const audio = capture.stop();
    expect(audio.durationSeconds).toBe(1);
  });

  it("is deterministic: the same call id gives the same samples, another id others", async () => {
    async function run(callId: string) {
      const { scheduler, answered } = await simulator();
      const a = await answered(callId, "+61255510001");
      const b = await answered(`${callId}-b`, "+61255510002");
      const capture = a.capture();
      void a.say("hello there");
      await scheduler.advance(1);
      a.bridge(b);
      await scheduler.advance(2);
      return capture.stop().channels;
    }
    const first = await run("same");
    expect(first).toHaveLength(2);
    expect(await run("same")).toEqual(first);
    expect((await run("other"))[0]).not.toEqual(first[0]);
  });

  it("renders only the window asked: the last second of a day-long call", async () => {
    const { scheduler, answered } = await simulator([route({ prefix: "+61", talkSeconds: 86_400 })]);
    const leg = await answered("c1", "+61255510001");
    await scheduler.advance(86_000);
    const capture = leg.capture();
    await scheduler.advance(1);
    const audio = capture.stop();
    expect(audio.channels[0]!.length).toBe(8000);
    // the same samples as the unbounded signal at that offset
    expect(audio.channels[0]!.subarray(0, 10)).toEqual(
      speechLikeWindow(
        { seed: seedFrom(`${leg.callId}:remote`), sampleRate: RATE, level: 0.5 },
        86_000 * RATE,
        10,
      ),
    );
  });
});

describe("recordCaller", () => {
  async function record(
    routeInput: Partial<RouteInput>,
    options: Partial<Parameters<SimulatorLeg["recordCaller"]>[0]>,
  ) {
    const { scheduler, answered } = await simulator([
      route({ prefix: "+61", talkSeconds: 600, ...routeInput }),
    ]);
    const leg = await answered("c1", "+61255510001");
    const start = scheduler.now();
    let doneAt: number | undefined;
    const result = leg
      .recordCaller({ maxSeconds: 10, silenceTimeoutSeconds: 3, stopKey: "", ...options })
      .then((r) => {
        doneAt = scheduler.elapsed(start);
        return r;
      });
    return { scheduler, leg, result, at: () => doneAt };
  }
  const samples = (r: RecordCallerResult) => r.audio.channels[0]!.length;

  it("max-duration: a SPEECH party is recorded until maxSeconds (never silent for long)", async () => {
    const { scheduler, result, at } = await record({}, { maxSeconds: 4, silenceTimeoutSeconds: 1 });
    await scheduler.advance(100);
    const r = await result;
    expect(r.endedBy).toBe("max-duration");
    expect(at()).toBe(4);
    expect(r.audio.channels).toHaveLength(1);
    expect(samples(r)).toBe(4 * 8000);
    expect(r.audio.durationSeconds).toBe(4);
    expect(isSilent(r.audio.channels, RATE)).toBe(false);
  });

  it("silence: a SILENCE party ends it after silenceTimeoutSeconds, with zeros", async () => {
    const { scheduler, result, at } = await record({ audio: "SILENCE" }, { silenceTimeoutSeconds: 2.5 });
    await scheduler.advance(100);
    const r = await result;
    expect(r.endedBy).toBe("silence");
    expect(at()).toBe(2.5);
    expect(samples(r)).toBe(2.5 * 8000);
    expect(zeros(r.audio.channels[0]!)).toBe(true);
  });

  it("a silence timeout of 0, or not before maxSeconds, leaves max-duration", async () => {
    const off = await record({ audio: "SILENCE" }, { silenceTimeoutSeconds: 0, maxSeconds: 6 });
    await off.scheduler.advance(100);
    expect((await off.result).endedBy).toBe("max-duration");
    const tie = await record({ audio: "SILENCE" }, { silenceTimeoutSeconds: 6, maxSeconds: 6 });
    await tie.scheduler.advance(100);
    expect((await tie.result).endedBy).toBe("max-duration");
    expect(tie.at()).toBe(6);
  });

  it("stop-key: the party presses its keys one every 0.5 s, dropping others, until the stop key", async () => {
    const { scheduler, leg, result, at } = await record({ digits: "12#34" }, { stopKey: "#" });
    await scheduler.advance(100);
    const r = await result;
    expect(r.endedBy).toBe("stop-key");
    expect(at()).toBe(1.5);
    expect(samples(r)).toBe(1.5 * 8000);
    // "12" were consumed; the rest is left for the next input.
    const digits = leg.collectDigits({ numDigits: 0, finishOnKey: "", timeoutSeconds: 1 });
    await scheduler.advance(5);
    expect(await digits).toBe("34");
  });

  it("without a stop key nobody presses anything; without the stop key among the keys, they are all dropped", async () => {
    const none = await record({ digits: "5#" }, { stopKey: "", maxSeconds: 3 });
    await none.scheduler.advance(100);
    expect((await none.result).endedBy).toBe("max-duration");
    const keep = none.leg.collectDigits({ numDigits: 2, finishOnKey: "", timeoutSeconds: 1 });
    await none.scheduler.advance(5);
    expect(await keep).toBe("5#");

    const other = await record({ digits: "123" }, { stopKey: "*", maxSeconds: 3 });
    await other.scheduler.advance(100);
    expect((await other.result).endedBy).toBe("max-duration");
    const left = other.leg.collectDigits({ numDigits: 1, finishOnKey: "", timeoutSeconds: 1 });
    await other.scheduler.advance(5);
    expect(await left).toBe("");
  });

  it("hangup: the remote party hanging up first ends it with the audio until then", async () => {
    const { scheduler, leg, result, at } = await record({ talkSeconds: 2 }, {});
    await scheduler.advance(100);
    const r = await result;
    expect(r.endedBy).toBe("hangup");
    expect(at()).toBe(2);
    expect(samples(r)).toBe(2 * 8000);
    expect(leg.state).toBe("ended");
    expect(scheduler.pendingCount).toBe(0);
  });

  it("hangup: our hang-up cancels it at once, leaving no timers", async () => {
    const { scheduler, leg, result } = await record({ digits: "1234" }, { stopKey: "#" });
    await scheduler.advance(1.2);
    leg.hangUp();
    const r = await result;
    expect(r.endedBy).toBe("hangup");
    expect(r.audio.durationSeconds).toBe(1.2);
    expect(scheduler.pendingCount).toBe(0);
  });

  it("records the remote party only, not what is played meanwhile", async () => {
    const { scheduler, leg, result } = await record(
      { audio: "SILENCE" },
      { maxSeconds: 2, silenceTimeoutSeconds: 0 },
    );
    void leg.say("hello hello hello");
    await scheduler.advance(5);
    expect(zeros((await result).audio.channels[0]!)).toBe(true);
  });

  it("on a leg not answered resolves at once with no audio; a second recording at a time is refused", async () => {
    const { scheduler, carrier } = await simulator();
    const ringing = await carrier.receiveCall({ callId: "r", to: "+61491570156", from: "" }, NO_EVENTS);
    const r = await ringing.recordCaller({ maxSeconds: 5, silenceTimeoutSeconds: 5, stopKey: "" });
    expect(r.endedBy).toBe("hangup");
    expect(r.audio.channels).toEqual([new Int16Array(0)]);
    expect(r.audio.startTime).toEqual(scheduler.now());

    const { leg, result, scheduler: s } = await record({}, { maxSeconds: 2 });
    await expect(leg.recordCaller({ maxSeconds: 2, silenceTimeoutSeconds: 0, stopKey: "" })).rejects.toThrow(
      /in progress/,
    );
    await s.advance(2);
    expect((await result).endedBy).toBe("max-duration");
    const again = leg.recordCaller({ maxSeconds: 1, silenceTimeoutSeconds: 0, stopKey: "" });
    await s.advance(1);
    expect(samples(await again)).toBe(8000);
  });

  it("a recording's audio equals the capture of the same window (same remote signal)", async () => {
    const { scheduler, answered } = await simulator();
    const leg = await answered("c1", "+61255510001");
    await scheduler.advance(3);
    const capture = leg.capture();
    const recorded = leg.recordCaller({ maxSeconds: 2, silenceTimeoutSeconds: 0, stopKey: "" });
    await scheduler.advance(2);
    expect((await recorded).audio.channels).toEqual(capture.stop().channels);
  });
});

describe("media timeline helpers", () => {
  it("subtract removes holes from a span", () => {
    expect(subtract({ startMs: 0, endMs: 10 }, [])).toEqual([{ startMs: 0, endMs: 10 }]);
    expect(
      subtract({ startMs: 0, endMs: 10 }, [
        { startMs: 2, endMs: 4 },
        { startMs: 3, endMs: 5 },
        { startMs: 8, endMs: Number.POSITIVE_INFINITY },
      ]),
    ).toEqual([
      { startMs: 0, endMs: 2 },
      { startMs: 5, endMs: 8 },
    ]);
    expect(subtract({ startMs: 0, endMs: 10 }, [{ startMs: -1, endMs: 11 }])).toEqual([]);
  });

  it("speechLikeWindow seeks: any window equals the same samples of a longer render", () => {
    const whole = speechLikeWindow({ seed: 9, sampleRate: RATE }, 0, 60_000);
    for (const [start, length] of [
      [0, 10],
      [12_345, 20_000],
      [59_999, 1],
    ] as const) {
      expect(speechLikeWindow({ seed: 9, sampleRate: RATE }, start, length)).toEqual(
        whole.subarray(start, start + length),
      );
    }
    // speechLike is the bounded signal: its tail fades out.
    const bounded = speechLike({ seed: 9, durationMs: 5000, sampleRate: RATE });
    expect(speechLikeWindow({ seed: 9, sampleRate: RATE, totalLength: 40_000 }, 0, 40_000)).toEqual(bounded);
    expect(bounded.subarray(0, 30_000)).toEqual(whole.subarray(0, 30_000));
  });

  it("tone windows are continuous", () => {
    const options = { frequency: 440, sampleRate: RATE, level: 0.3 };
    const whole = tone(options, 0, 1000);
    expect(tone(options, 400, 600)).toEqual(whole.subarray(400));
    expect(Math.max(...whole)).toBeLessThanOrEqual(Math.round(0.3 * 32767));
  });
});
