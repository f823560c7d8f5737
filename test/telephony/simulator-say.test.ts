/**
 * `say` and `play` on a simulator with a speech engine (on a
 * ManualScheduler): a say lasts exactly as long as the engine's audio and a
 * capture of the leg holds that audio; a play of decoded samples plays them;
 * language and voice reach the engine; a hang-up while the engine works ends
 * the say not completed; an engine failure rejects with its SpeechError. The
 * engine here is the real eSpeak NG one behind the cache.
 */
import { afterAll, describe, expect, it } from "vitest";
import { CachedSpeech } from "../../src/media/speech/cache.js";
import { type SpeechEngine, SpeechError, type SpeechOptions } from "../../src/media/speech/engine.js";
import { EspeakEngine } from "../../src/media/speech/espeak.js";
import type { CarrierEvents } from "../../src/telephony/carrier.js";
import { SimulatorCarrier, type SimulatorLeg } from "../../src/telephony/simulator/carrier.js";
import { longestPrefixMatch, type Route, validateRoute } from "../../src/telephony/simulator/routes.js";
import { ManualScheduler, settle } from "../support/scheduler.js";

const ROUTE: Route = {
  id: "r",
  createTime: new Date(0),
  ...validateRoute({
    prefix: "",
    outcome: undefined,
    ringSeconds: 0,
    talkSeconds: 600,
    audio: "SILENCE",
    digits: "",
    errorCode: "",
    errorMessage: "",
  }),
};

const events: CarrierEvents = { ringing() {}, answered() {}, ended() {} };

async function answeredLeg(speech: SpeechEngine) {
  const scheduler = new ManualScheduler();
  const carrier = new SimulatorCarrier(
    { resolve: async (to) => longestPrefixMatch([ROUTE], to) },
    scheduler,
    {
      speech,
    },
  );
  const leg = (await carrier.placeCall(
    { callId: "c1", to: "+61491570156", from: "+61255501234", timeoutSeconds: 60 },
    events,
  )) as SimulatorLeg;
  await scheduler.advance(0.2);
  expect(leg.state).toBe("answered");
  return { scheduler, leg };
}

const espeak = new CachedSpeech(new EspeakEngine(500));
afterAll(() => espeak.close());

describe("simulator say with a speech engine", () => {
  it("lasts as long as the engine's audio, and the leg's capture holds that audio", async () => {
    expect(ROUTE.audio).toBe("SILENCE");
    const { scheduler, leg } = await answeredLeg(espeak);
    const text = "Your call is important to us.";
    const spoken = await espeak.synthesize(text, { language: "en-GB" });
    const capture = leg.capture();
    const start = scheduler.now().getTime();
    let doneAt: number | undefined;
    void leg.say(text, { language: "en-GB" }).then((r) => {
      expect(r.completed).toBe(true);
      doneAt = scheduler.now().getTime();
    });
    await settle();
    await scheduler.advance(10);
    expect(doneAt! - start).toBe(Math.round((spoken.length * 1000) / 8000));
    const audio = capture.stop();
    const heard = audio.channels[0]!;
    expect(Buffer.from(heard.slice(0, spoken.length).buffer).equals(Buffer.from(spoken.buffer))).toBe(true);
    expect(heard.subarray(spoken.length).every((s) => s === 0)).toBe(true);
    // What was said is known too, for the simulator's transcriber.
    expect(audio.speech).toEqual([
      { channel: 0, offsetMs: 0, durationMs: (spoken.length * 1000) / 8000, text },
    ]);
  });

  it("plays decoded samples as they are", async () => {
    const { scheduler, leg } = await answeredLeg(espeak);
    const samples = Int16Array.from({ length: 4000 }, (_, i) => (i % 40) * 100 - 2000);
    const capture = leg.capture();
    const played = leg.play({ uri: "http://example.com/a.wav", durationSeconds: 0.5, samples });
    await scheduler.advance(1);
    expect(await played).toEqual({ completed: true });
    const heard = capture.stop().channels[0]!;
    expect([...heard.subarray(0, 4000)]).toEqual([...samples]);
  });

  it("passes language and voice to the engine; a hang-up while it works ends the say not completed", async () => {
    const asked: string[] = [];
    let release: (() => void) | undefined;
    const slow: SpeechEngine = {
      synthesize: (text: string, options: SpeechOptions = {}) => {
        asked.push(`${text}|${options.language}|${options.voice}`);
        return new Promise((resolve) => {
          release = () => resolve(new Int16Array(800));
        });
      },
      close: async () => {},
    };
    const { leg } = await answeredLeg(slow);
    const said = leg.say("hola", { language: "es-ES", voice: "woman" });
    await settle();
    expect(asked).toEqual(["hola|es-ES|woman"]);
    leg.hangUp();
    release!();
    expect(await said).toEqual({ completed: false });
  });

  it("an engine failure rejects the say with its SpeechError", async () => {
    const failing: SpeechEngine = {
      synthesize: async () => {
        throw new SpeechError("speech synthesis failed: no voice");
      },
      close: async () => {},
    };
    const { leg } = await answeredLeg(failing);
    await expect(leg.say("hello")).rejects.toBeInstanceOf(SpeechError);
  });
});
