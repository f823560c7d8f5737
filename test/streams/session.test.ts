/**
 * A stream session bridged with a leg of the real carrier simulator on a
 * ManualScheduler: how input audio is buffered (one minute at most, `clear`
 * first), played a frame at a time into the leg's audio (what recordings
 * hold), reported played out, and what ends a stream.
 */
import { describe, expect, it } from "vitest";
import type { CarrierEvents } from "../../src/telephony/carrier.js";
import { SimulatorCarrier, type SimulatorLeg } from "../../src/telephony/simulator/carrier.js";
import { longestPrefixMatch, type Route, validateRoute } from "../../src/telephony/simulator/routes.js";
import { MAX_BUFFERED_SAMPLES, parseStreamName } from "../../src/voice/streams/domain.js";
import { StreamRegistry } from "../../src/voice/streams/registry.js";
import { type StreamResponse, StreamSession } from "../../src/voice/streams/session.js";
import { ManualScheduler } from "../support/scheduler.js";

const RATE = 8000;
const FRAME = 1280;
const NO_EVENTS: CarrierEvents = { ringing: () => {}, answered: () => {}, ended: () => {} };

const silentRoute: Route = {
  id: "r1",
  createTime: new Date(0),
  ...validateRoute({
    prefix: "",
    outcome: undefined,
    ringSeconds: undefined,
    talkSeconds: 600,
    audio: "SILENCE",
    digits: "",
    errorCode: "",
    errorMessage: "",
  }),
};

async function setup() {
  const scheduler = new ManualScheduler();
  const carrier = new SimulatorCarrier(
    { resolve: async (to) => longestPrefixMatch([silentRoute], to) },
    scheduler,
  );
  const leg = (await carrier.receiveCall(
    { callId: "c1", to: "+61491570156", from: "+61255500001" },
    NO_EVENTS,
  )) as SimulatorLeg;
  leg.answer();
  await scheduler.advance(0);
  const session = new StreamSession(
    parseStreamName("projects/p/streams/s1", "setup.stream"),
    "mulaw",
    scheduler,
  );
  const responses: StreamResponse[] = [];
  const reading = (async () => {
    for await (const r of session.responses) responses.push(r);
  })();
  return { scheduler, leg, session, responses, reading };
}

/** A constant "audio" of `n` samples of `value`. */
const level = (n: number, value: number) => new Int16Array(n).fill(value);

describe("StreamSession", () => {
  it("plays input from the next frame on, clears before adding, and reports the buffer played out", async () => {
    const { scheduler, leg, session, responses } = await setup();
    const start = scheduler.now().getTime();
    const bridged = session.bridge("projects/p/calls/c1", leg);
    session.input(level(3 * FRAME, 1000), false);
    await scheduler.advance(0.16); // frame 1 of 1000s starts playing
    session.input(level(FRAME, 2000), true); // drops the two frames left
    await scheduler.advance(0.16 * 3);
    const capture = leg.timeline.render(start, scheduler.now().getTime()).channels[0]!;
    expect([...capture.subarray(0, FRAME)].every((s) => s === 0)).toBe(true);
    expect([...capture.subarray(FRAME, 2 * FRAME)].every((s) => s === 1000)).toBe(true);
    expect([...capture.subarray(2 * FRAME, 3 * FRAME)].every((s) => s === 2000)).toBe(true);
    expect([...capture.subarray(3 * FRAME)].every((s) => s === 0)).toBe(true);
    await Promise.resolve();
    const kinds = responses.map((r) => r.event?.case);
    expect(kinds[0]).toBe("callConnected");
    // Played out at the boundary after the last frame (after 3 frames).
    expect(kinds.filter((k) => k === "inputAudioBufferEmpty")).toHaveLength(1);
    expect(kinds.indexOf("inputAudioBufferEmpty")).toBe(4);
    session.end("client");
    expect(await bridged).toEqual({ endedBy: "client", parameters: {} });
  });

  it("keeps at most one minute of input, before and after the call connects", async () => {
    const { scheduler, leg, session } = await setup();
    session.input(level(MAX_BUFFERED_SAMPLES - 100, 1), false);
    session.input(level(1000, 2), false); // 100 kept
    session.input(level(1000, 3), false); // none kept
    const start = scheduler.now().getTime();
    void session.bridge("projects/p/calls/c1", leg);
    await scheduler.advance(61);
    const capture = leg.timeline.render(start, scheduler.now().getTime()).channels[0]!;
    const heard = capture.subarray(FRAME, FRAME + MAX_BUFFERED_SAMPLES);
    expect(heard.filter((s) => s === 1).length).toBe(MAX_BUFFERED_SAMPLES - 100);
    expect(heard.filter((s) => s === 2).length).toBe(100);
    expect(capture.filter((s) => s === 3).length).toBe(0);
    session.end("client");
  });

  it("ends with the call (hangup) after the audio up to the end", async () => {
    const { scheduler, leg, session, responses, reading } = await setup();
    const bridged = session.bridge("projects/p/calls/c1", leg);
    await scheduler.advance(0.5);
    leg.hangUp();
    expect(await bridged).toMatchObject({ endedBy: "hangup" });
    await reading;
    const samples = responses.reduce(
      (n, r) => n + (r.event?.case === "outputAudio" ? r.event.value.audio!.length : 0),
      0,
    );
    expect(samples).toBe(0.5 * RATE);
  });

  it("merges request parameters, a later value replacing an earlier one", async () => {
    const { session, leg } = await setup();
    session.updateParameters({ a: "1", b: "2" });
    session.updateParameters({ b: "3" });
    const bridged = session.bridge("projects/p/calls/c1", leg);
    session.end("client");
    expect((await bridged).parameters).toEqual({ a: "1", b: "3" });
  });
});

describe("StreamRegistry", () => {
  it("hands a stream opened later to the call waiting for it, and times out on call time", async () => {
    const scheduler = new ManualScheduler();
    const registry = new StreamRegistry(scheduler);
    const never = new Promise<void>(() => {});
    const waiting = registry.claim("projects/p/streams/late", 5, never);
    await scheduler.advance(4);
    const session = new StreamSession(parseStreamName("projects/p/streams/late", "s"), "alaw", scheduler);
    registry.add(session);
    expect(await waiting).toEqual({ ok: true, session });
    expect(session.state).toBe("claimed");
    const other = await registry.claim("projects/p/streams/late", 5, never);
    expect(other).toMatchObject({ ok: false });
    const missing = registry.claim("projects/p/streams/none", 2, never);
    await scheduler.advance(2);
    expect(await missing).toMatchObject({ ok: false, reason: expect.stringContaining("within 2 seconds") });
    session.end("client");
    expect(registry.size).toBe(0);
  });
});
