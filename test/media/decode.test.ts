/**
 * Decoding `<Play>` files (src/media/decode): WAV files written here (an
 * independent writer) in every encoding the reader takes — PCM 8/16/24/32,
 * float 32/64, μ-law, A-law, WAVE_FORMAT_EXTENSIBLE — at several rates, mono
 * and stereo, and MP3 (LAME via lamejs), all come out as 8000 Hz mono PCM
 * holding the tone that was written, at its level and length. Bad data says
 * what is wrong.
 */
import { describe, expect, it } from "vitest";
import { AudioDecodeError, decodeForCall } from "../../src/media/decode/index.js";
import { encodeMp3 } from "../../src/recordings/audio/mp3.js";
import { bandEnergy, rms, sine } from "./signal-measures.js";

type Encoding = "pcm8" | "pcm16" | "pcm24" | "pcm32" | "float32" | "float64" | "mulaw" | "alaw";

const FORMAT: Record<Encoding, [number, number]> = {
  pcm8: [1, 8],
  pcm16: [1, 16],
  pcm24: [1, 24],
  pcm32: [1, 32],
  float32: [3, 32],
  float64: [3, 64],
  mulaw: [7, 8],
  alaw: [6, 8],
};

/** G.711 μ-law of a 16-bit sample (ITU-T G.711, bias 0x84). */
function mulaw(sample: number): number {
  const sign = sample < 0 ? 0x80 : 0;
  let v = Math.min(32635, Math.abs(sample)) + 0x84;
  let exponent = 7;
  for (let mask = 0x4000; (v & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (v >> (exponent + 3)) & 0x0f;
  v = ~(sign | (exponent << 4) | mantissa);
  return v & 0xff;
}

/** G.711 A-law of a 16-bit sample. */
function alaw(sample: number): number {
  const sign = sample >= 0 ? 0x80 : 0;
  const v = Math.min(32767, Math.abs(sample)) >> 3;
  let out: number;
  if (v < 32) out = v >> 1;
  else {
    let exponent = 1;
    while (v >> (exponent + 4) > 1 && exponent < 7) exponent++;
    out = (exponent << 4) | ((v >> exponent) & 0x0f);
  }
  return (out | sign) ^ 0x55;
}

/** A WAV file of `channels` (int16 samples) in `encoding`, optionally WAVE_FORMAT_EXTENSIBLE, with a LIST chunk first. */
function wav(channels: Int16Array[], rate: number, encoding: Encoding, extensible = false): Buffer {
  const [format, bits] = FORMAT[encoding];
  const frames = channels[0]!.length;
  const bytesPer = bits / 8;
  const data = Buffer.alloc(frames * channels.length * bytesPer);
  let at = 0;
  for (let f = 0; f < frames; f++) {
    for (const ch of channels) {
      const s = ch[f]!;
      switch (encoding) {
        case "pcm8":
          data.writeUInt8(Math.round(s / 256) + 128, at);
          break;
        case "pcm16":
          data.writeInt16LE(s, at);
          break;
        case "pcm24":
          data.writeIntLE(s * 256, at, 3);
          break;
        case "pcm32":
          data.writeInt32LE(s * 65536, at);
          break;
        case "float32":
          data.writeFloatLE(s / 32768, at);
          break;
        case "float64":
          data.writeDoubleLE(s / 32768, at);
          break;
        case "mulaw":
          data.writeUInt8(mulaw(s), at);
          break;
        case "alaw":
          data.writeUInt8(alaw(s), at);
          break;
      }
      at += bytesPer;
    }
  }
  const fmt = Buffer.alloc(extensible ? 40 : 16);
  fmt.writeUInt16LE(extensible ? 0xfffe : format, 0);
  fmt.writeUInt16LE(channels.length, 2);
  fmt.writeUInt32LE(rate, 4);
  fmt.writeUInt32LE(rate * channels.length * bytesPer, 8);
  fmt.writeUInt16LE(channels.length * bytesPer, 12);
  fmt.writeUInt16LE(bits, 14);
  if (extensible) {
    fmt.writeUInt16LE(22, 16);
    fmt.writeUInt16LE(bits, 18);
    fmt.writeUInt32LE(0, 20);
    // KSDATAFORMAT_SUBTYPE_*: the format code, then the fixed GUID tail.
    fmt.writeUInt16LE(format, 24);
    Buffer.from("000000001000800000aa00389b71", "hex").copy(fmt, 26);
  }
  const chunk = (id: string, body: Buffer) => {
    const head = Buffer.alloc(8);
    head.write(id, 0, "ascii");
    head.writeUInt32LE(body.length, 4);
    return Buffer.concat([head, body, Buffer.alloc(body.length % 2)]);
  };
  const body = Buffer.concat([
    Buffer.from("WAVE"),
    chunk("LIST", Buffer.from("INFOISFT\u0005\u0000\u0000\u0000test\u0000")),
    chunk("fmt ", fmt),
    chunk("data", data),
  ]);
  const riff = Buffer.alloc(8);
  riff.write("RIFF", 0, "ascii");
  riff.writeUInt32LE(body.length, 4);
  return Buffer.concat([riff, body]);
}

/** The middle 80% of `s`. */
const middle = (s: Int16Array) => s.subarray(Math.floor(s.length * 0.1), Math.floor(s.length * 0.9));

/** `s` is `seconds` of 8 kHz audio holding a `hz` tone of RMS `level` (of a 0.5 sine: 0.354 * 32767). */
function expectTone(s: Int16Array, seconds: number, hz: number, tolerance = 0.05): void {
  expect(Math.abs(s.length - seconds * 8000)).toBeLessThanOrEqual(1);
  const m = middle(s);
  expect(rms(m) / (0.5 * 32767 * Math.SQRT1_2)).toBeGreaterThan(1 - tolerance);
  expect(rms(m) / (0.5 * 32767 * Math.SQRT1_2)).toBeLessThan(1 + tolerance);
  expect(bandEnergy(m, 8000, hz - 100, hz + 100) / bandEnergy(m, 8000, 0, 4000)).toBeGreaterThan(0.97);
}

describe("WAV", () => {
  it.each(Object.keys(FORMAT) as Encoding[])("%s at 8000 Hz mono", async (encoding) => {
    const out = await decodeForCall(wav([sine(440, 8000, 1)], 8000, encoding), "audio/wav");
    // G.711 and 8-bit PCM are lossy: a few percent.
    expectTone(out, 1, 440, encoding === "pcm8" || encoding === "mulaw" || encoding === "alaw" ? 0.06 : 0.01);
  });

  it.each([
    [44100, "pcm16"],
    [48000, "float32"],
    [22050, "pcm24"],
    [16000, "pcm16"],
    [11025, "pcm8"],
  ] as const)("%i Hz %s stereo (extensible), mixed to mono and resampled", async (rate, encoding) => {
    const left = sine(700, rate, 0.5);
    const out = await decodeForCall(wav([left, left], rate, encoding, true));
    expectTone(out, 0.5, 700, encoding === "pcm8" ? 0.06 : 0.02);
  });

  it("a 5 kHz tone at 44.1 kHz is filtered out, not aliased into the call band", async () => {
    const out = await decodeForCall(wav([sine(5000, 44100, 0.5)], 44100, "pcm16"));
    expect(rms(middle(out))).toBeLessThan(200);
  });

  it("a data chunk longer than the file (a WAV written while streaming) is read to the end", async () => {
    const file = wav([sine(440, 8000, 1)], 8000, "pcm16");
    const dataAt = file.indexOf("data");
    file.writeUInt32LE(0xffffffff, dataAt + 4);
    const out = await decodeForCall(file);
    expectTone(out, 1, 440, 0.01);
  });

  it.each([
    ["ADPCM (format 2)", (f: Buffer) => f.writeUInt16LE(2, f.indexOf("fmt ") + 8), /format 2/],
    ["no data chunk", (f: Buffer) => f.write("junk", f.indexOf("data"), "ascii"), /without a data chunk/],
    ["no fmt chunk", (f: Buffer) => f.write("junk", f.indexOf("fmt "), "ascii"), /data chunk before its fmt/],
    ["0 channels", (f: Buffer) => f.writeUInt16LE(0, f.indexOf("fmt ") + 10), /0 channels/],
  ] as const)("%s is an AudioDecodeError saying so", async (_, spoil, message) => {
    const file = wav([sine(440, 8000, 0.1)], 8000, "pcm16");
    spoil(file);
    await expect(decodeForCall(file)).rejects.toThrow(message);
    await expect(decodeForCall(file)).rejects.toBeInstanceOf(AudioDecodeError);
  });
});

describe("MP3", () => {
  it.each([
    [8000, 1, 32],
    [22050, 1, 64],
    [44100, 2, 128],
  ])(
    "%i Hz, %i channel(s), %i kbps: the tone, at its length within the codec's padding",
    async (rate, channelCount, kbps) => {
      const tone = sine(440, rate, 2);
      const file = encodeMp3(
        Array.from({ length: channelCount }, () => tone),
        rate,
        kbps,
      );
      const out = await decodeForCall(file, "audio/mpeg");
      // MP3 adds the encoder's delay and pads the last frame (at most ~0.15 s here).
      expect(out.length).toBeGreaterThanOrEqual(2 * 8000);
      expect(out.length).toBeLessThan(2.2 * 8000);
      const m = out.subarray(4000, 12000);
      expect(rms(m) / (0.5 * 32767 * Math.SQRT1_2)).toBeGreaterThan(0.9);
      expect(rms(m) / (0.5 * 32767 * Math.SQRT1_2)).toBeLessThan(1.1);
      expect(bandEnergy(m, 8000, 340, 540) / bandEnergy(m, 8000, 0, 4000)).toBeGreaterThan(0.95);
    },
  );
});

describe("not audio", () => {
  it.each([
    ["empty", Buffer.alloc(0), "audio/wav", /empty/],
    ["HTML", Buffer.from("<html><body>hi</body></html>"), "text/html", /not WAV or MP3 audio \(text\/html\)/],
    [
      "noise labelled MP3",
      Buffer.from(Array.from({ length: 4000 }, (_, i) => (i * 7919) % 251)),
      "audio/mpeg",
      /no MP3 audio/,
    ],
    ["OGG", Buffer.from("OggS\0\u0002\0\0\0\0\0\0\0\0"), "audio/ogg", /not WAV or MP3/],
  ])("%s is an AudioDecodeError", async (_, bytes, type, message) => {
    await expect(decodeForCall(bytes, type)).rejects.toThrow(message);
  });
});
