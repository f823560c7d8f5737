/**
 * Speech synthesis (src/media/speech/): the eSpeak NG engine on its worker
 * thread speaks a phrase as plausible 8 kHz speech (length, energy, energy
 * in the telephone band, a voice's pitch), honours Language and Voice, starts
 * lazily and stops when idle; the cache answers a repeated prompt without
 * the engine; and the voice choice follows docs/voiceml.md.
 */
import { afterAll, describe, expect, it } from "vitest";
import { CachedSpeech } from "../../src/media/speech/cache.js";
import type { SpeechEngine, SpeechOptions } from "../../src/media/speech/engine.js";
import { EspeakEngine } from "../../src/media/speech/espeak.js";
import { chooseVoice } from "../../src/media/speech/espeak-voices.js";
import { bandEnergy, pitchHz, rms } from "./signal-measures.js";

/** Lengths within 1% (the same words in the same voice). */
function sameLength(a: Int16Array, b: Int16Array): boolean {
  return Math.abs(a.length - b.length) <= b.length * 0.01;
}

const PHRASE = "Thank you for calling. Please leave a message after the tone.";

describe("eSpeak NG engine", () => {
  const engine = new EspeakEngine(200);
  afterAll(() => engine.close());

  it("starts its thread only when first asked", async () => {
    expect(engine.running).toBe(false);
    expect(engine.starts).toBe(0);
    const audio = await engine.synthesize("hello");
    expect(audio.length).toBeGreaterThan(0);
    expect(engine.starts).toBe(1);
  });

  it("speaks a phrase as 8 kHz speech: a plausible length, loud, in the telephone band", async () => {
    const audio = await engine.synthesize(PHRASE);
    const seconds = audio.length / 8000;
    // 11 words at eSpeak's 175 words a minute: about 4 s.
    expect(seconds).toBeGreaterThan(2);
    expect(seconds).toBeLessThan(8);
    expect(rms(audio)).toBeGreaterThan(1000);
    // Speech, not noise: most energy between 100 Hz and 3400 Hz, a voice's pitch.
    const inBand = bandEnergy(audio, 8000, 100, 3400);
    const all = bandEnergy(audio, 8000, 0, 4000);
    expect(inBand / all).toBeGreaterThan(0.9);
    const pitch = pitchHz(audio, 8000);
    expect(pitch).toBeGreaterThan(70);
    expect(pitch).toBeLessThan(300);
  });

  it("honours the language: French differs from English for the same text, and is French-length", async () => {
    const text = "Bonjour, merci de votre appel.";
    const en = await engine.synthesize(text, { language: "en-US" });
    const fr = await engine.synthesize(text, { language: "fr-FR" });
    const frCa = await engine.synthesize(text, { language: "fr-CA" });
    // eSpeak NG's output varies a little from run to run (not bit-exact), its
    // length hardly at all: English and French readings differ by ~15%.
    expect(Math.abs(fr.length - en.length) / en.length).toBeGreaterThan(0.05);
    // fr-CA has no voice of its own: French (the primary subtag).
    expect(sameLength(frCa, fr)).toBe(true);
    // An unknown language is the default, American English.
    const xx = await engine.synthesize(text, { language: "xx-YY" });
    expect(sameLength(xx, en)).toBe(true);
  });

  it("honours the voice: a woman's voice is higher than the default", async () => {
    const man = await engine.synthesize(PHRASE);
    const woman = await engine.synthesize(PHRASE, { voice: "woman" });
    expect(pitchHz(woman, 8000)).toBeGreaterThan(pitchHz(man, 8000) * 1.15);
    const unknown = await engine.synthesize(PHRASE, { voice: "Polly.Joanna" });
    expect(sameLength(unknown, man)).toBe(true);
    expect(pitchHz(unknown, 8000)).toBeLessThan(pitchHz(woman, 8000));
  });

  it("stops its thread when idle and starts again on the next request", async () => {
    await engine.synthesize("one");
    const started = engine.starts;
    await expect.poll(() => engine.running, { timeout: 10_000 }).toBe(false);
    await engine.synthesize("two");
    expect(engine.starts).toBe(started + 1);
  });

  it("answers requests made at once, each with its own audio", async () => {
    const [a, b, c] = await Promise.all([
      engine.synthesize("one"),
      engine.synthesize("one two three four five six"),
      engine.synthesize("one"),
    ]);
    expect(b!.length).toBeGreaterThan(a!.length * 2);
    expect(sameLength(c!, a!)).toBe(true);
  });
});

/** An engine that counts its calls: a tone whose length is the text's. */
class CountingEngine implements SpeechEngine {
  calls: string[] = [];
  async synthesize(text: string, options: SpeechOptions = {}): Promise<Int16Array> {
    this.calls.push(`${text}|${options.voice ?? ""}|${options.language ?? ""}`);
    return new Int16Array(text.length * 100).fill(1000);
  }
  async close(): Promise<void> {}
}

describe("CachedSpeech", () => {
  it("serves a repeated prompt from the cache; voice and language are part of the key", async () => {
    const inner = new CountingEngine();
    const cache = new CachedSpeech(inner);
    const first = await cache.synthesize("hello", { language: "en-US" });
    const again = await cache.synthesize("hello", { language: "en-US" });
    expect(again).toBe(first);
    await cache.synthesize("hello", { language: "fr-FR" });
    await cache.synthesize("hello", { language: "en-US", voice: "woman" });
    expect(inner.calls).toEqual(["hello||en-US", "hello||fr-FR", "hello|woman|en-US"]);
    expect(cache.hits).toBe(1);
    expect(cache.misses).toBe(3);
  });

  it("shares one synthesis between concurrent requests for the same prompt", async () => {
    const inner = new CountingEngine();
    const cache = new CachedSpeech(inner);
    const [a, b] = await Promise.all([cache.synthesize("same"), cache.synthesize("same")]);
    expect(a).toBe(b);
    expect(inner.calls).toHaveLength(1);
  });

  it("settles once no synthesis is in flight, failed ones included", async () => {
    const releases: Array<(ok: boolean) => void> = [];
    const slow: SpeechEngine = {
      synthesize: (text) =>
        new Promise<Int16Array>((resolve, reject) =>
          releases.push((ok) => (ok ? resolve(new Int16Array(text.length)) : reject(new Error("no voice")))),
        ),
      close: async () => {},
    };
    const cache = new CachedSpeech(slow);
    await cache.settled(); // nothing in flight
    const a = cache.synthesize("first");
    const b = cache.synthesize("second").catch((e: unknown) => e);
    let settled = false;
    const done = cache.settled().then(() => {
      settled = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    releases[0]!(true);
    await a;
    await new Promise((r) => setImmediate(r));
    expect(settled, "one synthesis still in flight").toBe(false);
    releases[1]!(false);
    await done;
    expect(await b).toBeInstanceOf(Error);
  });

  it("is bounded: the least recently used prompts go first", async () => {
    const inner = new CountingEngine();
    const cache = new CachedSpeech(inner, 1000); // 10 characters of CountingEngine audio
    await cache.synthesize("aaaa"); // 400
    await cache.synthesize("bbbb"); // 400
    await cache.synthesize("aaaa"); // hit: a is now the most recent
    await cache.synthesize("cccc"); // 400: b goes
    expect(cache.size).toBe(2);
    await cache.synthesize("aaaa");
    await cache.synthesize("bbbb");
    expect(inner.calls.map((c) => c.split("|")[0])).toEqual(["aaaa", "bbbb", "cccc", "bbbb"]);
  });

  it("with the real engine, a repeated prompt costs the engine nothing", async () => {
    const engine = new EspeakEngine(100);
    const cache = new CachedSpeech(engine);
    try {
      const a = await cache.synthesize(PHRASE);
      const b = await cache.synthesize(PHRASE);
      expect(b).toBe(a);
      expect(cache.misses).toBe(1);
    } finally {
      await cache.close();
    }
  });
});

describe("voice choice (docs/voiceml.md)", () => {
  const voices = [
    { identifier: "gmw/en-029", languages: ["en-029", "en"] },
    { identifier: "gmw/en", languages: ["en-gb", "en"] },
    { identifier: "gmw/en-US", languages: ["en-us", "en"] },
    { identifier: "roa/fr", languages: ["fr-fr", "fr"] },
    { identifier: "roa/fr-BE", languages: ["fr-be", "fr"] },
    { identifier: "roa/pt-BR", languages: ["pt-br", "pt"] },
    { identifier: "roa/pt", languages: ["pt", "pt-pt"] },
  ];
  it.each([
    [undefined, undefined, "gmw/en-US"],
    ["en-GB", undefined, "gmw/en"],
    ["EN-us", undefined, "gmw/en-US"],
    ["en", undefined, "gmw/en-US"],
    ["en-AU", undefined, "gmw/en-US"],
    ["fr-CA", undefined, "roa/fr"],
    ["fr-BE", undefined, "roa/fr-BE"],
    ["pt", undefined, "roa/pt"],
    ["pt-BR", "woman", "roa/pt-BR+f3"],
    ["zz", "female", "gmw/en-US+f3"],
    [undefined, "man", "gmw/en-US"],
    [undefined, "m7", "gmw/en-US+m7"],
    [undefined, "Polly.Joanna", "gmw/en-US"],
  ])("language %s, voice %s: %s", (language, voice, expected) => {
    expect(chooseVoice(voices, language, voice)).toBe(expected);
  });
});
