/**
 * Recording audio: the WAV writer (checked with a parser of the test's
 * own), MP3 encoding (decoded by mpg123), the synthetic signal and silence
 * detection.
 */
import { describe, expect, it } from "vitest";
import { encodeMp3 } from "../../src/recordings/audio/mp3.js";
import { silence, speechLike } from "../../src/recordings/audio/signal.js";
import { isSilent, silentFrames, trimSilence } from "../../src/recordings/audio/silence.js";
import { encodeWav, WAV_HEADER_BYTES } from "../../src/recordings/audio/wav.js";
import { decodeMp3Frames, parseWav, probeMp3 } from "./audio.js";

const RATE = 8000;
/** Samples of one MPEG-2.5 layer III frame at 8 kHz. */
const MP3_FRAME = 576;
/** LAME's encoder delay plus the MP3 decoder delay, in samples. */
const LAME_DELAY = 576 + 529;

describe("WAV writer", () => {
  it("writes a 44-byte PCM 16-bit header whose sample count matches the duration (mono)", () => {
    const samples = speechLike({ seed: 7, durationMs: 2500, sampleRate: RATE });
    const wav = encodeWav([samples], RATE);
    const info = parseWav(wav);
    expect(info).toMatchObject({
      format: 1,
      channels: 1,
      sampleRate: 8000,
      byteRate: 16000,
      blockAlign: 2,
      bitsPerSample: 16,
      dataBytes: 2500 * 8 * 2,
      frames: 20000,
    });
    expect(wav.length).toBe(WAV_HEADER_BYTES + 40000);
    expect(info.firstChannel).toEqual(samples);
  });

  it("interleaves two channels", () => {
    const left = speechLike({ seed: 1, durationMs: 1000, sampleRate: RATE });
    const right = speechLike({ seed: 2, durationMs: 1000, sampleRate: RATE });
    const wav = encodeWav([left, right], RATE);
    const info = parseWav(wav);
    expect(info).toMatchObject({ channels: 2, blockAlign: 4, byteRate: 32000, frames: 8000 });
    expect(info.firstChannel).toEqual(left);
    expect(wav.readInt16LE(WAV_HEADER_BYTES + 2)).toBe(right[0]);
  });
});

describe("MP3 encoding", () => {
  it.each([1, 2])("decodes (mpg123) to the same length within a frame, %i channel(s)", async (channels) => {
    const signal = Array.from({ length: channels }, (_, i) =>
      speechLike({ seed: 10 + i, durationMs: 3000, sampleRate: RATE }),
    );
    const mp3 = encodeMp3(signal, RATE);
    const probe = probeMp3(mp3);
    expect(probe).toMatchObject({ codec: "mp3", sampleRate: 8000, channels });
    const decoded = await decodeMp3Frames(mp3, RATE);
    expect(decoded).toBe(probe.frames * MP3_FRAME); // every frame decoded
    // The stream carries no LAME/Xing tag, so the decoder also returns LAME's
    // fixed delay (576 + 529 samples) and the padding of the last frame.
    const padding = decoded - 24000 - LAME_DELAY;
    expect(padding).toBeGreaterThanOrEqual(0);
    expect(padding).toBeLessThan(MP3_FRAME);
  });

  it("is refused by the frame reader and the decoder when corrupt", async () => {
    const mp3 = encodeMp3([speechLike({ seed: 3, durationMs: 500, sampleRate: RATE })], RATE);
    const corrupt = Buffer.from(mp3);
    corrupt.fill(0x55, 280, 300); // over the second frame header (frames are 288 bytes)
    expect(() => probeMp3(corrupt)).toThrow();
    expect(() => probeMp3(Buffer.from("not an mp3 at all"))).toThrow();
  });
});

describe("synthetic signal", () => {
  it("is deterministic from the seed, speech-like with pauses, and silence is zeros", () => {
    const a = speechLike({ seed: 42, durationMs: 5000, sampleRate: RATE });
    expect(speechLike({ seed: 42, durationMs: 5000, sampleRate: RATE })).toEqual(a);
    expect(speechLike({ seed: 43, durationMs: 5000, sampleRate: RATE })).not.toEqual(a);
    const frames = silentFrames([a], RATE);
    expect(frames.filter((s) => !s).length).toBeGreaterThan(frames.length / 2); // mostly talk
    expect(frames.some((s) => s)).toBe(true); // with pauses
    expect(silence(500, RATE)).toEqual(new Int16Array(4000));
  });
});

describe("silence detection", () => {
  it("finds all-zero and very quiet audio silent, speech not", () => {
    expect(isSilent([silence(2000, RATE)], RATE)).toBe(true);
    const hiss = Int16Array.from({ length: 8000 }, (_, i) => (i % 2 === 0 ? 20 : -20));
    expect(isSilent([hiss, silence(1000, RATE)], RATE)).toBe(true);
    expect(isSilent([speechLike({ seed: 3, durationMs: 1000, sampleRate: RATE })], RATE)).toBe(false);
    expect(isSilent([new Int16Array(0)], RATE)).toBe(true);
  });

  it("trims leading and trailing silence on 20 ms frames, keeping inner pauses", () => {
    const speech = speechLike({ seed: 5, durationMs: 2000, sampleRate: RATE });
    const padded = Int16Array.from([...silence(1000, RATE), ...speech, ...silence(1500, RATE)]);
    const [trimmed] = trimSilence([padded], RATE);
    // speechLike starts with a burst; it may end inside a pause
    expect(trimmed!.length).toBeLessThanOrEqual(speech.length + 160);
    expect(trimmed!.length).toBeGreaterThan(speech.length / 2);
    expect(isSilent([trimmed!.subarray(0, 160)], RATE)).toBe(false);
    expect(trimSilence([silence(100, RATE)], RATE)[0]!.length).toBe(0);
  });
});
