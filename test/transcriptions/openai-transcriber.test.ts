/**
 * The OpenAI-compatible transcriber against a stub HTTP server on
 * 127.0.0.1 that checks what it receives (a multipart body with the WAV of
 * each channel, model, language, response_format, the bearer key) and
 * answers verbose_json segments; errors reject.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OpenAiTranscriber } from "../../src/transcriptions/openai-transcriber.js";

interface Received {
  auth: string | undefined;
  fields: Record<string, string>;
  file: Buffer;
}

let server: Server;
let url: string;
const received: Received[] = [];
let answer: (n: number) => [number, string] = () => [200, "{}"];

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    // Parsed with the platform's own multipart reader (a Request over the received bytes).
    const form = await new Request("http://x/", {
      method: "POST",
      headers: { "content-type": req.headers["content-type"]! },
      body: Buffer.concat(chunks),
    }).formData();
    const fields: Record<string, string> = {};
    let file = Buffer.alloc(0);
    for (const [k, v] of form.entries()) {
      if (typeof v === "string") fields[k] = v;
      else file = Buffer.from(await v.arrayBuffer());
    }
    received.push({ auth: req.headers.authorization, fields, file });
    const [status, body] = answer(received.length - 1);
    res.statusCode = status;
    res.setHeader("content-type", "application/json");
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/audio/transcriptions`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("OpenAiTranscriber", () => {
  it("sends each channel as a WAV with the fields, and turns segments into utterances", async () => {
    received.length = 0;
    answer = (n) => [
      200,
      JSON.stringify({
        text: "x",
        segments: [
          { start: 0.5, end: 1.25, text: ` hello from channel ${n} ` },
          { start: 2, end: 2.5, text: "  " },
        ],
      }),
    ];
    const left = Int16Array.from({ length: 8000 }, (_, i) => i % 100);
    const right = Int16Array.from({ length: 8000 }, (_, i) => -(i % 50));
    const t = new OpenAiTranscriber({ url, apiKey: "sk-test", model: "whisper-large-v3", language: "en" });
    const got = await t.transcribe({ channels: [left, right], sampleRate: 8000, speech: undefined });
    expect(got).toEqual([
      { channel: 0, offsetMs: 500, durationMs: 750, text: "hello from channel 0" },
      { channel: 1, offsetMs: 500, durationMs: 750, text: "hello from channel 1" },
    ]);
    expect(received).toHaveLength(2);
    for (const [i, r] of received.entries()) {
      expect(r.auth).toBe("Bearer sk-test");
      expect(r.fields).toEqual({
        model: "whisper-large-v3",
        language: "en",
        response_format: "verbose_json",
      });
      // A RIFF/WAVE PCM 16-bit mono 8 kHz file holding the channel's samples.
      expect(r.file.toString("ascii", 0, 4)).toBe("RIFF");
      expect(r.file.readUInt16LE(22)).toBe(1);
      expect(r.file.readUInt32LE(24)).toBe(8000);
      const data = r.file.subarray(r.file.indexOf("data") + 8);
      const samples = new Int16Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length));
      expect([...samples]).toEqual([...(i === 0 ? left : right)]);
    }
  });

  it("rejects on an error status or an answer without segments", async () => {
    const t = new OpenAiTranscriber({ url });
    answer = () => [500, '{"error":"boom"}'];
    await expect(
      t.transcribe({ channels: [new Int16Array(80)], sampleRate: 8000, speech: undefined }),
    ).rejects.toThrow(/HTTP 500/);
    answer = () => [200, '{"text":"no segments"}'];
    await expect(
      t.transcribe({ channels: [new Int16Array(80)], sampleRate: 8000, speech: undefined }),
    ).rejects.toThrow(/no segments/);
    received.length = 0;
    answer = () => [200, '{"segments":[]}'];
    await t.transcribe({ channels: [new Int16Array(80)], sampleRate: 8000, speech: undefined });
    expect(received[0]!.auth).toBeUndefined();
    expect(received[0]!.fields).toEqual({ model: "whisper-1", response_format: "verbose_json" });
  });

  it("rejects with a clear message when the recognizer cannot be reached or answers garbage", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const gone = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/v1/audio/transcriptions`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const audio = { channels: [new Int16Array(80)], sampleRate: 8000, speech: undefined };
    await expect(new OpenAiTranscriber({ url: gone }).transcribe(audio)).rejects.toThrow(
      /could not be reached/,
    );
    const t = new OpenAiTranscriber({ url });
    for (const [body, reason] of [
      ["{not json", /not JSON/],
      ["null", /no segments/],
      ["[1,2]", /no segments/],
    ] as const) {
      answer = () => [200, body];
      await expect(t.transcribe(audio)).rejects.toThrow(reason);
    }
    // Entries that are not segments are skipped, not a crash.
    answer = () => [
      200,
      '{"segments":[null,7,{"start":"x","end":1,"text":"bad start"},{"start":0,"end":0.5,"text":"ok"}]}',
    ];
    expect(await t.transcribe(audio)).toEqual([{ channel: 0, offsetMs: 0, durationMs: 500, text: "ok" }]);
  });
});
