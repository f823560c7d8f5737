/**
 * The carrier simulator's calls on a manual scheduler: each outcome's event
 * sequence and timing, the caller's timeout, hang-up, media and digits —
 * plus one short run on real timers with a tiny time scale.
 */
import { describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import type { CallEnd, CarrierCallRequest, CarrierEvents } from "../../src/telephony/carrier.js";
import { RealScheduler } from "../../src/telephony/scheduler.js";
import { SimulatorCarrier, type SimulatorLeg, speechSeconds } from "../../src/telephony/simulator/carrier.js";
import {
  DEFAULT_ROUTE,
  longestPrefixMatch,
  type Route,
  type RouteInput,
  type RouteSource,
  validateRoute,
} from "../../src/telephony/simulator/routes.js";
import { ManualScheduler } from "../support/scheduler.js";

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

/** Routes held in memory, matched like the database does. */
function memoryRoutes(...routes: Route[]): RouteSource {
  return { resolve: async (to) => longestPrefixMatch(routes, to) };
}

interface Recorded {
  event: string;
  at: number;
  end?: CallEnd;
}

function recorder(scheduler: ManualScheduler | RealScheduler, start: () => Date) {
  const events: Recorded[] = [];
  const at = () => (scheduler.now().getTime() - start().getTime()) / 1000;
  const callbacks: CarrierEvents = {
    ringing: () => events.push({ event: "ringing", at: at() }),
    answered: (media) => events.push({ event: `answered:${media.remoteAudio}`, at: at() }),
    ended: (end) => events.push({ event: `ended:${end.cause}`, at: at(), end }),
  };
  return { events, callbacks };
}

const CALL: CarrierCallRequest = {
  callId: "c1",
  to: "+61491570156",
  from: "+61255501234",
  timeoutSeconds: 60,
};

async function place(routes: Route[], request: Partial<CarrierCallRequest> = {}) {
  const scheduler = new ManualScheduler();
  const carrier = new SimulatorCarrier(memoryRoutes(...routes), scheduler, { setupSeconds: 0.1 });
  const t0 = scheduler.now();
  const rec = recorder(scheduler, () => t0);
  const leg = (await carrier.placeCall({ ...CALL, ...request }, rec.callbacks)) as SimulatorLeg;
  return { scheduler, leg, events: rec.events };
}

const timeline = (events: Recorded[]) => events.map((e) => [e.event, e.at]);

describe("SimulatorCarrier", () => {
  describe("receiveCall", () => {
    async function receive(routes: Route[], from = "+61255501234") {
      const scheduler = new ManualScheduler();
      const carrier = new SimulatorCarrier(memoryRoutes(...routes), scheduler);
      const t0 = scheduler.now();
      const rec = recorder(scheduler, () => t0);
      const leg = (await carrier.receiveCall(
        { callId: "in1", to: "+61491570156", from },
        rec.callbacks,
      )) as SimulatorLeg;
      return { scheduler, carrier, leg, events: rec.events, callbacks: rec.callbacks };
    }

    it("returns the leg ringing, without events, and waits for the engine indefinitely", async () => {
      const { scheduler, leg, events } = await receive([route({ prefix: "+6125550", ringSeconds: 1 })]);
      expect(leg.state).toBe("ringing");
      expect(leg.remoteAudio).toBeUndefined();
      await scheduler.advance(3600);
      expect(events).toEqual([]);
      expect(leg.state).toBe("ringing");
      expect(scheduler.pendingCount).toBe(0);
    });

    it("answer(): answered on the next scheduler turn, the caller behaving as the route of its number", async () => {
      const { scheduler, leg, events } = await receive([
        route({ prefix: "+6125550", talkSeconds: 7, audio: "SILENCE", digits: "9" }),
      ]);
      await scheduler.advance(2);
      leg.answer();
      expect(events).toEqual([]);
      expect(leg.state).toBe("ringing");
      await scheduler.advance(0);
      expect(leg.state).toBe("answered");
      expect(
        await Promise.all([
          leg.collectDigits({ numDigits: 1, finishOnKey: "", timeoutSeconds: 5 }),
          scheduler.advance(1),
        ]).then(([d]) => d),
      ).toBe("9");
      await scheduler.advance(100);
      expect(timeline(events)).toEqual([
        ["answered:silence", 2],
        ["ended:remote-hangup", 9],
      ]);
    });

    it("a withheld caller takes the default route; the route's outcome does not apply", async () => {
      const hidden = await receive([route({ prefix: "+61", outcome: "BUSY" })], "");
      expect(hidden.leg.route).toBe(DEFAULT_ROUTE);
      const busyRoute = await receive([route({ prefix: "+61", outcome: "BUSY", talkSeconds: 4 })]);
      busyRoute.leg.answer();
      await busyRoute.scheduler.advance(10);
      expect(timeline(busyRoute.events)).toEqual([
        ["answered:speech", 0],
        ["ended:remote-hangup", 4],
      ]);
    });

    it("reject(busy) and reject(rejected) end the call at once with the default codes", async () => {
      const busy = await receive([]);
      busy.leg.reject("busy");
      expect(busy.leg.state).toBe("ended");
      expect(busy.events.map((e) => e.end)).toEqual([
        { cause: "busy", errorCode: "BUSY", errorMessage: "The called party is busy" },
      ]);
      const rejected = await receive([
        route({ prefix: "+61", outcome: "REJECT", errorCode: "X", errorMessage: "y" }),
      ]);
      await rejected.scheduler.advance(1);
      rejected.leg.reject("rejected");
      expect(timeline(rejected.events)).toEqual([["ended:rejected", 1]]);
      expect(rejected.events[0]!.end).toEqual({
        cause: "rejected",
        errorCode: "REJECTED",
        errorMessage: "The called party rejected the call",
      });
      await rejected.scheduler.advance(100);
      expect(rejected.events).toHaveLength(1);
    });

    it("hangUp() while ringing, or between answer() and the answer, ends local-hangup and nothing follows", async () => {
      const ringing = await receive([]);
      ringing.leg.hangUp();
      expect(timeline(ringing.events)).toEqual([["ended:local-hangup", 0]]);
      const answering = await receive([]);
      answering.leg.answer();
      answering.leg.hangUp();
      await answering.scheduler.advance(100);
      expect(timeline(answering.events)).toEqual([["ended:local-hangup", 0]]);
      expect(answering.scheduler.pendingCount).toBe(0);
    });

    it("answer() and reject() throw unless the incoming leg is ringing and not yet answered", async () => {
      const { scheduler, leg } = await receive([]);
      leg.answer();
      expect(() => leg.answer()).toThrow(/already being answered/);
      expect(() => leg.reject("busy")).toThrow(/already being answered/);
      await scheduler.advance(0);
      expect(() => leg.answer()).toThrow(/answered/);
      expect(() => leg.reject("rejected")).toThrow(/answered/);
      leg.hangUp();
      expect(() => leg.answer()).toThrow(/ended/);
      expect(() => leg.reject("busy")).toThrow(/ended/);
    });

    it("answer() and reject() throw on an outgoing leg, even ringing", async () => {
      const { scheduler, leg } = await place([route({ ringSeconds: 10 })]);
      await scheduler.advance(1);
      expect(leg.state).toBe("ringing");
      expect(() => leg.answer()).toThrow(/outgoing/);
      expect(() => leg.reject("busy")).toThrow(/outgoing/);
      expect(leg.state).toBe("ringing");
    });
  });

  it("answers on the default route: rings 2 s after setup, talks 30 s, speech", async () => {
    const { scheduler, leg, events } = await place([]);
    expect(leg.route).toBe(DEFAULT_ROUTE);
    expect(leg.state).toBe("setup");
    await scheduler.advance(1000);
    expect(timeline(events)).toEqual([
      ["ringing", 0.1],
      ["answered:speech", 2.1],
      ["ended:remote-hangup", 32.1],
    ]);
    expect(events[2]!.end).toEqual({ cause: "remote-hangup" });
    expect(leg.state).toBe("ended");
    expect(scheduler.pendingCount).toBe(0);
  });

  it("fires nothing before time moves, and each event at its time", async () => {
    const { scheduler, leg, events } = await place([
      route({ ringSeconds: 5, talkSeconds: 10, audio: "SILENCE" }),
    ]);
    await scheduler.advance(0.099);
    expect(events).toEqual([]);
    await scheduler.advance(0.001);
    expect(timeline(events)).toEqual([["ringing", 0.1]]);
    expect(leg.state).toBe("ringing");
    await scheduler.advance(4.999);
    expect(events).toHaveLength(1);
    await scheduler.advance(0.001);
    expect(leg.state).toBe("answered");
    expect(leg.remoteAudio).toBe("silence");
    await scheduler.advance(10);
    expect(timeline(events)).toEqual([
      ["ringing", 0.1],
      ["answered:silence", 5.1],
      ["ended:remote-hangup", 15.1],
    ]);
  });

  it("BUSY ends busy after setup without ringing, with the default code", async () => {
    const { scheduler, events } = await place([route({ outcome: "BUSY" })]);
    await scheduler.advance(100);
    expect(timeline(events)).toEqual([["ended:busy", 0.1]]);
    expect(events[0]!.end).toEqual({
      cause: "busy",
      errorCode: "BUSY",
      errorMessage: "The called party is busy",
    });
  });

  it("REJECT rings ring_seconds and then ends rejected", async () => {
    const { scheduler, events } = await place([route({ outcome: "REJECT", ringSeconds: 3 })]);
    await scheduler.advance(100);
    expect(timeline(events)).toEqual([
      ["ringing", 0.1],
      ["ended:rejected", 3.1],
    ]);
    expect(events[1]!.end?.errorCode).toBe("REJECTED");
  });

  it("NO_ANSWER rings until the caller's timeout, counted from placing the call", async () => {
    const { scheduler, events } = await place([route({ outcome: "NO_ANSWER" })], { timeoutSeconds: 25 });
    await scheduler.advance(1000);
    expect(timeline(events)).toEqual([
      ["ringing", 0.1],
      ["ended:no-answer", 25],
    ]);
    expect(events[1]!.end).toEqual({
      cause: "no-answer",
      errorCode: "NO_ANSWER",
      errorMessage: "The called party did not answer in time",
    });
  });

  it("ANSWER rings out as no-answer when the caller's timeout comes first", async () => {
    const { scheduler, events } = await place([route({ ringSeconds: 40 })], { timeoutSeconds: 30 });
    await scheduler.advance(1000);
    expect(timeline(events)).toEqual([
      ["ringing", 0.1],
      ["ended:no-answer", 30],
    ]);
    expect(events[1]!.end?.errorCode).toBe("NO_ANSWER");
  });

  it("the timeout no longer applies once answered", async () => {
    const { scheduler, events } = await place([route({ ringSeconds: 1, talkSeconds: 120 })], {
      timeoutSeconds: 5,
    });
    await scheduler.advance(1000);
    expect(timeline(events).at(-1)).toEqual(["ended:remote-hangup", 121.1]);
  });

  it("FAIL ends failed after setup with the route's code and message", async () => {
    const { scheduler, events } = await place([
      route({ outcome: "FAIL", errorCode: "SIP_503", errorMessage: "Service unavailable" }),
    ]);
    await scheduler.advance(10);
    expect(timeline(events)).toEqual([["ended:failed", 0.1]]);
    expect(events[0]!.end).toEqual({
      cause: "failed",
      errorCode: "SIP_503",
      errorMessage: "Service unavailable",
    });
  });

  it("FAIL without a code carries CARRIER_ERROR", async () => {
    const { scheduler, events } = await place([route({ outcome: "FAIL" })]);
    await scheduler.advance(10);
    expect(events[0]!.end).toEqual({
      cause: "failed",
      errorCode: "CARRIER_ERROR",
      errorMessage: "The network could not deliver the call",
    });
  });

  it("takes the route of the longest matching prefix", async () => {
    const routes = [
      route({ prefix: "+61", outcome: "BUSY" }),
      route({ prefix: "+6149157", outcome: "FAIL" }),
      route({ prefix: "+614", outcome: "REJECT" }),
    ];
    expect((await place(routes, { to: "+61491570156" })).leg.route.outcome).toBe("FAIL");
    expect((await place(routes, { to: "+61400000000" })).leg.route.outcome).toBe("REJECT");
    expect((await place(routes, { to: "+61255501234" })).leg.route.outcome).toBe("BUSY");
    expect((await place(routes, { to: "+14155550100" })).leg.route).toBe(DEFAULT_ROUTE);
    const withCatchAll = [...routes, route({ prefix: "", outcome: "NO_ANSWER" })];
    expect((await place(withCatchAll, { to: "+14155550100" })).leg.route.outcome).toBe("NO_ANSWER");
    expect((await place(withCatchAll, { to: "sip:alice@example.com" })).leg.route.outcome).toBe("NO_ANSWER");
  });

  it("hangUp while ringing ends local-hangup at once and cancels every pending timer", async () => {
    const { scheduler, leg, events } = await place([route({ ringSeconds: 10 })]);
    await scheduler.advance(1);
    leg.hangUp();
    leg.hangUp();
    expect(timeline(events)).toEqual([
      ["ringing", 0.1],
      ["ended:local-hangup", 1],
    ]);
    expect(scheduler.pendingCount).toBe(0);
    await scheduler.advance(1000);
    expect(events).toHaveLength(2);
  });

  it("hangUp after answer stops the remote hang-up and interrupts media", async () => {
    const { scheduler, leg, events } = await place([route({ ringSeconds: 0 })]);
    await scheduler.advance(0.1);
    expect(leg.state).toBe("answered");
    const playing = leg.play({ uri: "https://example.com/a.wav", durationSeconds: 20 });
    await scheduler.advance(5);
    leg.hangUp();
    expect(await playing).toEqual({ completed: false });
    expect(scheduler.pendingCount).toBe(0);
    await scheduler.advance(100);
    expect(timeline(events)).toEqual([
      ["ringing", 0.1],
      ["answered:speech", 0.1],
      ["ended:local-hangup", 5.1],
    ]);
  });

  it("play and say take their duration of call time", async () => {
    const { scheduler, leg } = await place([route({ ringSeconds: 0, talkSeconds: 600 })]);
    await scheduler.advance(0.1);
    const start = scheduler.now();
    let played: number | undefined;
    void leg.play({ uri: "u", durationSeconds: 7 }).then(() => {
      played = scheduler.elapsed(start);
    });
    await scheduler.advance(10);
    expect(played).toBe(7);
    const text = "Hello, thank you for calling Switchboard";
    expect(speechSeconds(text)).toBeCloseTo(2.4);
    expect(speechSeconds("")).toBe(0.5);
    const said = leg.say(text);
    await scheduler.advance(3);
    expect(await said).toEqual({ completed: true });
  });

  it("media on a leg that is not answered resolves at once, not completed", async () => {
    const { leg } = await place([route({})]);
    expect(await leg.play({ uri: "u", durationSeconds: 1 })).toEqual({ completed: false });
    expect(await leg.collectDigits({ numDigits: 1, finishOnKey: "", timeoutSeconds: 5 })).toBe("");
  });

  it("an ongoing playback ends with the remote party hanging up", async () => {
    const { scheduler, leg } = await place([route({ ringSeconds: 0, talkSeconds: 3 })]);
    await scheduler.advance(0.1);
    const playing = leg.play({ uri: "u", durationSeconds: 10 });
    await scheduler.advance(10);
    expect(await playing).toEqual({ completed: false });
    expect(leg.state).toBe("ended");
  });

  describe("collectDigits", () => {
    async function answered(digits: string, talkSeconds = 600) {
      const placed = await place([route({ ringSeconds: 0, talkSeconds, digits })]);
      await placed.scheduler.advance(0.1);
      return placed;
    }

    it("returns the route's keys up to numDigits, one every 0.5 s, and keeps the rest for the next input", async () => {
      const { scheduler, leg } = await answered("1234#");
      const start = scheduler.now();
      let firstAt: number | undefined;
      const first = leg.collectDigits({ numDigits: 2, finishOnKey: "#", timeoutSeconds: 5 }).then((d) => {
        firstAt = scheduler.elapsed(start);
        return d;
      });
      await scheduler.advance(1);
      expect(await first).toBe("12");
      expect(firstAt).toBe(1);
      const second = leg.collectDigits({ numDigits: 0, finishOnKey: "#", timeoutSeconds: 5 });
      await scheduler.advance(1.5);
      expect(await second).toBe("34");
    });

    it("stops at finishOnKey, which is not returned", async () => {
      const { scheduler, leg } = await answered("42#99");
      const got = leg.collectDigits({ numDigits: 10, finishOnKey: "#", timeoutSeconds: 5 });
      await scheduler.advance(1.5);
      expect(await got).toBe("42");
    });

    it("returns what was pressed once the keys run out and the timeout passes", async () => {
      const { scheduler, leg } = await answered("7");
      const start = scheduler.now();
      let doneAt: number | undefined;
      const got = leg.collectDigits({ numDigits: 4, finishOnKey: "#", timeoutSeconds: 5 }).then((d) => {
        doneAt = scheduler.elapsed(start);
        return d;
      });
      await scheduler.advance(10);
      expect(await got).toBe("7");
      expect(doneAt).toBe(5.5);
    });

    it("returns an empty string after the timeout when the remote party presses nothing", async () => {
      const { scheduler, leg } = await answered("");
      const got = leg.collectDigits({ numDigits: 1, finishOnKey: "", timeoutSeconds: 3 });
      await scheduler.advance(3);
      expect(await got).toBe("");
    });

    it("treats # as a digit when it is not the finish key", async () => {
      const { scheduler, leg } = await answered("1#2*");
      const got = leg.collectDigits({ numDigits: 4, finishOnKey: "", timeoutSeconds: 5 });
      await scheduler.advance(2);
      expect(await got).toBe("1#2*");
    });

    it("returns the keys pressed so far when the remote party hangs up", async () => {
      const { scheduler, leg } = await answered("123456", 2);
      const got = leg.collectDigits({ numDigits: 6, finishOnKey: "", timeoutSeconds: 5 });
      await scheduler.advance(5);
      expect(await got).toBe("123");
    });

    it("refuses a second collection while one is in progress", async () => {
      const { scheduler, leg } = await answered("1");
      const first = leg.collectDigits({ numDigits: 1, finishOnKey: "", timeoutSeconds: 5 });
      await expect(leg.collectDigits({ numDigits: 1, finishOnKey: "", timeoutSeconds: 5 })).rejects.toThrow(
        /in progress/,
      );
      await scheduler.advance(1);
      expect(await first).toBe("1");
    });
  });

  describe("bridge", () => {
    it("bridges two answered legs and unbridges both when one ends", async () => {
      const scheduler = new ManualScheduler();
      const carrier = new SimulatorCarrier(
        memoryRoutes(route({ ringSeconds: 0, talkSeconds: 60 })),
        scheduler,
      );
      const rec = recorder(scheduler, () => scheduler.now());
      const a = (await carrier.placeCall({ ...CALL, callId: "a" }, rec.callbacks)) as SimulatorLeg;
      const b = (await carrier.placeCall({ ...CALL, callId: "b" }, rec.callbacks)) as SimulatorLeg;
      expect(() => a.bridge(b)).toThrow(/answered/);
      await scheduler.advance(1);
      expect(() => a.bridge(a)).toThrow(/itself/);
      a.bridge(b);
      expect(a.bridgedWith).toBe(b);
      expect(b.bridgedWith).toBe(a);
      b.hangUp();
      expect(a.bridgedWith).toBeUndefined();
      expect(b.bridgedWith).toBeUndefined();
      expect(a.state).toBe("answered");
      const other = new SimulatorCarrier(memoryRoutes(), scheduler);
      const c = await other.placeCall({ ...CALL, callId: "c" }, rec.callbacks);
      expect(() => a.bridge(c)).toThrow(/same simulator/);
    });
  });

  describe("on real timers", () => {
    it("applies the time scale: a 32-second call runs in milliseconds, events in order", async () => {
      const scheduler = new RealScheduler(systemClock, 0.0005);
      const carrier = new SimulatorCarrier(memoryRoutes(), scheduler);
      const rec = recorder(scheduler, () => new Date());
      const wallStart = Date.now();
      const ended = new Promise<void>((resolve) => {
        const { ended: onEnded } = rec.callbacks;
        rec.callbacks.ended = (end) => {
          onEnded(end);
          resolve();
        };
      });
      await carrier.placeCall(CALL, rec.callbacks);
      await ended;
      expect(rec.events.map((e) => e.event)).toEqual(["ringing", "answered:speech", "ended:remote-hangup"]);
      // 32.1 s of call time at 0.0005 is 16 ms; allow a slow machine plenty.
      expect(Date.now() - wallStart).toBeLessThan(5000);
    });

    it("refuses a time scale that is not a positive number", () => {
      expect(() => new RealScheduler(systemClock, 0)).toThrow(RangeError);
      expect(() => new RealScheduler(systemClock, Number.NaN)).toThrow(RangeError);
    });
  });
});
