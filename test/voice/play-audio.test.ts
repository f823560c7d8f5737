/**
 * `<Play>` audio (src/voice/calls/play-audio.ts) against a real HTTP server
 * on 127.0.0.1: WAV and MP3 decoded to 8 kHz, cached per URI as the
 * response's caching headers say (max-age, no-store, no-cache, Expires, the
 * heuristic), revalidated with ETag / Last-Modified (304 keeps the audio,
 * 200 replaces it), bounded in size (least recently used out), concurrent
 * loads sharing one fetch; and what cannot be played is a PlayAudioError.
 * Freshness runs on a clock the test moves.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { encodeMp3 } from "../../src/recordings/audio/mp3.js";
import { encodeWav } from "../../src/recordings/audio/wav.js";
import { HEURISTIC_FRESH_SECONDS, PlayAudio, PlayAudioError } from "../../src/voice/calls/play-audio.js";
import { sine } from "../media/signal-measures.js";

interface Served {
  status?: number;
  type?: string;
  body: Buffer;
  headers?: Record<string, string>;
}

let server: Server;
let base: string;
const files = new Map<string, Served>();
const seen: { path: string; headers: IncomingMessage["headers"] }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ path: req.url!, headers: req.headers });
    const file = files.get(req.url!);
    if (file === undefined) {
      res.statusCode = 404;
      res.end("no");
      return;
    }
    const etag = file.headers?.etag;
    const lastModified = file.headers?.["last-modified"];
    for (const [k, v] of Object.entries(file.headers ?? {})) res.setHeader(k, v);
    if (
      (etag !== undefined && req.headers["if-none-match"] === etag) ||
      (etag === undefined && lastModified !== undefined && req.headers["if-modified-since"] === lastModified)
    ) {
      res.statusCode = 304;
      res.end();
      return;
    }
    res.statusCode = file.status ?? 200;
    if (file.type !== undefined) res.setHeader("content-type", file.type);
    res.end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  files.clear();
  seen.length = 0;
});

let nowMs = 1_000_000;
const delivery = { timeoutMs: 5000, allowPrivateDestinations: true };
const audio = (options: { maxCacheBytes?: number } = {}) =>
  new PlayAudio(delivery, { now: () => nowMs, ...options });
const requests = (path: string) => seen.filter((s) => s.path === path);

const ONE_SECOND_WAV = encodeWav([sine(440, 16000, 1)], 16000);

describe("PlayAudio", () => {
  it("decodes WAV and MP3 to 8 kHz mono", async () => {
    files.set("/a.wav", { type: "audio/wav", body: ONE_SECOND_WAV });
    files.set("/b.mp3", { type: "audio/mpeg", body: encodeMp3([sine(440, 44100, 1.5)], 44100, 64) });
    const play = audio();
    const wav = await play.load(`${base}/a.wav`);
    expect(wav.samples.length).toBe(8000);
    expect(wav.durationSeconds).toBe(1);
    const mp3 = await play.load(`${base}/b.mp3`);
    expect(mp3.durationSeconds).toBeGreaterThanOrEqual(1.5);
    expect(mp3.durationSeconds).toBeLessThan(1.7);
  });

  it("max-age: fresh from the cache until it passes, then fetched again", async () => {
    files.set("/m.wav", {
      type: "audio/wav",
      body: ONE_SECOND_WAV,
      headers: { "cache-control": "public, max-age=60" },
    });
    const play = audio();
    const first = await play.load(`${base}/m.wav`);
    nowMs += 59_000;
    expect(await play.load(`${base}/m.wav`)).toBe(first);
    expect(requests("/m.wav")).toHaveLength(1);
    nowMs += 2000;
    await play.load(`${base}/m.wav`);
    expect(requests("/m.wav")).toHaveLength(2);
  });

  it("no-store: never kept, every play fetches", async () => {
    files.set("/n.wav", {
      type: "audio/wav",
      body: ONE_SECOND_WAV,
      headers: { "cache-control": "no-store" },
    });
    const play = audio();
    await play.load(`${base}/n.wav`);
    await play.load(`${base}/n.wav`);
    expect(requests("/n.wav")).toHaveLength(2);
    expect(play.size).toBe(0);
  });

  it("ETag: a stale entry is revalidated; 304 keeps the audio without a body, 200 replaces it", async () => {
    files.set("/e.wav", {
      type: "audio/wav",
      body: ONE_SECOND_WAV,
      headers: { "cache-control": "no-cache", etag: '"v1"' },
    });
    const play = audio();
    const first = await play.load(`${base}/e.wav`);
    const again = await play.load(`${base}/e.wav`);
    expect(again).toBe(first);
    expect(requests("/e.wav").map((r) => r.headers["if-none-match"])).toEqual([undefined, '"v1"']);
    // The file changes: the server's 200 replaces the cached audio.
    files.set("/e.wav", {
      type: "audio/wav",
      body: encodeWav([sine(440, 8000, 2)], 8000),
      headers: { "cache-control": "no-cache", etag: '"v2"' },
    });
    const changed = await play.load(`${base}/e.wav`);
    expect(changed.durationSeconds).toBe(2);
    await play.load(`${base}/e.wav`);
    expect(requests("/e.wav").at(-1)!.headers["if-none-match"]).toBe('"v2"');
  });

  it("Last-Modified: revalidated with If-Modified-Since; the 304's max-age makes it fresh again", async () => {
    const lastModified = "Tue, 03 Nov 2026 10:00:00 GMT";
    files.set("/l.wav", {
      type: "audio/wav",
      body: ONE_SECOND_WAV,
      headers: { "cache-control": "max-age=10", "last-modified": lastModified },
    });
    const play = audio();
    await play.load(`${base}/l.wav`);
    nowMs += 11_000;
    await play.load(`${base}/l.wav`);
    expect(requests("/l.wav").map((r) => r.headers["if-modified-since"])).toEqual([undefined, lastModified]);
    // The 304 carried max-age=10 again: fresh for 10 s more.
    nowMs += 5000;
    await play.load(`${base}/l.wav`);
    expect(requests("/l.wav")).toHaveLength(2);
  });

  it("no caching headers: fresh for the heuristic time; Expires is honoured", async () => {
    files.set("/h.wav", { type: "audio/wav", body: ONE_SECOND_WAV });
    files.set("/x.wav", {
      type: "audio/wav",
      body: ONE_SECOND_WAV,
      headers: { date: "Tue, 03 Nov 2026 10:00:00 GMT", expires: "Tue, 03 Nov 2026 10:00:30 GMT" },
    });
    const play = audio();
    await play.load(`${base}/h.wav`);
    await play.load(`${base}/x.wav`);
    nowMs += 29_000;
    await play.load(`${base}/h.wav`);
    await play.load(`${base}/x.wav`);
    expect(requests("/h.wav")).toHaveLength(1);
    expect(requests("/x.wav")).toHaveLength(1);
    nowMs += 2000;
    await play.load(`${base}/x.wav`);
    expect(requests("/x.wav")).toHaveLength(2);
    nowMs += HEURISTIC_FRESH_SECONDS * 1000;
    await play.load(`${base}/h.wav`);
    expect(requests("/h.wav")).toHaveLength(2);
  });

  it("is bounded by size: the least recently used audio goes first; audio over the bound is not kept", async () => {
    for (const p of ["/1.wav", "/2.wav", "/3.wav"]) files.set(p, { type: "audio/wav", body: ONE_SECOND_WAV });
    // One second at 8 kHz is 16 000 bytes decoded: room for two.
    const play = audio({ maxCacheBytes: 32_000 });
    await play.load(`${base}/1.wav`);
    await play.load(`${base}/2.wav`);
    await play.load(`${base}/1.wav`); // 1 is now the most recent
    await play.load(`${base}/3.wav`); // 2 goes
    expect(play.size).toBe(2);
    await play.load(`${base}/1.wav`);
    await play.load(`${base}/2.wav`);
    expect(seen.map((s) => s.path)).toEqual(["/1.wav", "/2.wav", "/3.wav", "/2.wav"]);
    files.set("/big.wav", { type: "audio/wav", body: encodeWav([sine(440, 8000, 3)], 8000) });
    await play.load(`${base}/big.wav`);
    await play.load(`${base}/big.wav`);
    expect(requests("/big.wav")).toHaveLength(2);
  });

  it("concurrent loads of one URI share one fetch", async () => {
    files.set("/c.wav", {
      type: "audio/wav",
      body: ONE_SECOND_WAV,
      headers: { "cache-control": "no-store" },
    });
    const play = audio();
    const [a, b] = await Promise.all([play.load(`${base}/c.wav`), play.load(`${base}/c.wav`)]);
    expect(a).toBe(b);
    expect(requests("/c.wav")).toHaveLength(1);
  });

  it("what cannot be played is a PlayAudioError saying why, and is not cached", async () => {
    files.set("/page", { type: "text/html", body: Buffer.from("<html>hi</html>") });
    files.set("/bad.wav", {
      type: "audio/wav",
      body: Buffer.concat([Buffer.from("RIFF\0\0\0\0WAVE"), Buffer.alloc(20)]),
    });
    files.set("/gone.wav", { status: 500, type: "audio/wav", body: ONE_SECOND_WAV });
    const play = audio();
    await expect(play.load(`${base}/missing.wav`)).rejects.toThrow(/missing\.wav answered HTTP 404/);
    await expect(play.load(`${base}/gone.wav`)).rejects.toThrow(/answered HTTP 500/);
    await expect(play.load(`${base}/page`)).rejects.toThrow(
      /page is not audio that can be played \(text\/html/,
    );
    await expect(play.load(`${base}/bad.wav`)).rejects.toThrow(/bad\.wav is not audio that can be played/);
    await expect(play.load("http://127.0.0.1:1/refused.wav")).rejects.toBeInstanceOf(PlayAudioError);
    await expect(play.load(`${base}/page`)).rejects.toBeInstanceOf(PlayAudioError);
    expect(requests("/page")).toHaveLength(2);
    expect(play.size).toBe(0);
  });
});
