/**
 * The audio of a `<Play>`: fetched (GET, the webhook settings' timeout and
 * destination guard, redirects followed, at most MAX_AUDIO_BYTES) and
 * decoded (src/media/decode: WAV of any common encoding, MP3) to what a call
 * carries, PCM 16-bit mono at 8000 Hz, so a Play plays its file and lasts as
 * long as it. A URI that cannot be fetched (no 2xx, too large, unreachable,
 * refused) or whose audio cannot be decoded (not audio, another format,
 * corrupt) is a PlayAudioError: the engine ends the call FAILED
 * PLAY_UNAVAILABLE with its message.
 *
 * Decoded audio is cached per URI as HTTP caching says (hold music repeats):
 * - `Cache-Control: no-store`: not kept (each play fetches);
 * - fresh for `max-age` seconds (`s-maxage` too, a shared cache's), else for
 *   `Expires` minus `Date`, else — no freshness given — for
 *   HEURISTIC_FRESH_SECONDS; `no-cache` (or `max-age=0`) is stale at once;
 * - a stale entry with an `ETag` or `Last-Modified` is revalidated
 *   (`If-None-Match` / `If-Modified-Since`): 304 keeps the audio, with the
 *   freshness of the 304's headers; 200 replaces it; a stale entry without
 *   either is fetched again. A failed revalidation fails the Play (the
 *   origin said or showed nothing to serve stale on).
 * The cache is bounded by the decoded audio's size (`maxCacheBytes`, default
 * DEFAULT_CACHE_BYTES), least recently used first out; audio larger than the
 * bound is not kept. Concurrent loads of one URI share one fetch.
 */
import type { DeliveryOptions } from "../../events/delivery.js";
import { HttpRequestError, type HttpResponse, httpGet } from "../../events/http.js";
import { AudioDecodeError, CALL_SAMPLE_RATE, decodeForCall } from "../../media/decode/index.js";

export const MAX_AUDIO_BYTES = 16 * 1024 * 1024;
/** Default bound of the cache: 64 MiB of decoded audio (~70 minutes at 8 kHz). */
export const DEFAULT_CACHE_BYTES = 64 * 1024 * 1024;
/** How long a response that says nothing of its freshness is fresh. */
export const HEURISTIC_FRESH_SECONDS = 300;

export class PlayAudioError extends Error {
  override name = "PlayAudioError";
}

/** A Play's audio, decoded. */
export interface LoadedAudio {
  /** PCM 16-bit, mono, 8000 Hz. Shared: not to be modified. */
  samples: Int16Array;
  durationSeconds: number;
}

interface Entry extends LoadedAudio {
  /** Clock ms until which it is fresh. */
  freshUntil: number;
  etag: string | undefined;
  lastModified: string | undefined;
}

export interface PlayAudioOptions {
  /** The clock of freshness, ms. Default Date.now. */
  now?: () => number;
  maxCacheBytes?: number;
}

/** What the response's headers say of caching it. */
function freshness(res: HttpResponse, nowMs: number): { store: boolean; freshUntil: number } {
  const cc = String(res.headers["cache-control"] ?? "").toLowerCase();
  const directives = new Map<string, string>();
  for (const part of cc.split(",")) {
    const [name, value] = part.trim().split("=", 2) as [string, string | undefined];
    if (name !== "") directives.set(name, (value ?? "").replace(/^"|"$/g, ""));
  }
  if (directives.has("no-store")) return { store: false, freshUntil: nowMs };
  if (directives.has("no-cache")) return { store: true, freshUntil: nowMs };
  const maxAge = directives.get("s-maxage") ?? directives.get("max-age");
  if (maxAge !== undefined) {
    const seconds = Number.parseInt(maxAge, 10);
    return {
      store: true,
      freshUntil: nowMs + (Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0),
    };
  }
  const expires = res.headers.expires;
  if (expires !== undefined) {
    const at = Date.parse(expires);
    const date = Date.parse(String(res.headers.date ?? ""));
    const lifetime = Number.isNaN(at) ? 0 : at - (Number.isNaN(date) ? Date.now() : date);
    return { store: true, freshUntil: nowMs + Math.max(0, lifetime) };
  }
  return { store: true, freshUntil: nowMs + HEURISTIC_FRESH_SECONDS * 1000 };
}

function header(res: HttpResponse, name: string): string | undefined {
  const v = res.headers[name];
  return typeof v === "string" && v !== "" ? v : undefined;
}

export class PlayAudio {
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<LoadedAudio>>();
  private bytes = 0;
  private readonly now: () => number;
  private readonly maxCacheBytes: number;
  /** Requests sent (tests count them). */
  fetches = 0;

  constructor(
    private readonly delivery: DeliveryOptions,
    options: PlayAudioOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.maxCacheBytes = options.maxCacheBytes ?? DEFAULT_CACHE_BYTES;
  }

  /** The decoded audio at `uri` (from the cache when fresh). */
  load(uri: string): Promise<LoadedAudio> {
    const running = this.pending.get(uri);
    if (running !== undefined) return running;
    const job = this.fetch(uri).finally(() => this.pending.delete(uri));
    this.pending.set(uri, job);
    return job;
  }

  /** The length in seconds of the audio at `uri`. */
  async durationOf(uri: string): Promise<number> {
    return (await this.load(uri)).durationSeconds;
  }

  private async fetch(uri: string): Promise<LoadedAudio> {
    const cached = this.entries.get(uri);
    if (cached !== undefined) {
      // Most recently used last.
      this.entries.delete(uri);
      this.entries.set(uri, cached);
      if (this.now() < cached.freshUntil) return cached;
    }
    const headers: Record<string, string> = { accept: "audio/*" };
    const validates =
      cached !== undefined && (cached.etag !== undefined || cached.lastModified !== undefined);
    if (validates && cached.etag !== undefined) headers["if-none-match"] = cached.etag;
    if (validates && cached.lastModified !== undefined) headers["if-modified-since"] = cached.lastModified;
    let res: HttpResponse;
    try {
      this.fetches++;
      res = await httpGet(uri, headers, {
        timeoutMs: this.delivery.timeoutMs,
        allowPrivateDestinations: this.delivery.allowPrivateDestinations,
        maxResponseBytes: MAX_AUDIO_BYTES,
      });
    } catch (err) {
      if (err instanceof HttpRequestError) throw new PlayAudioError(`${uri}: ${err.message}`);
      throw err;
    }
    const nowMs = this.now();
    if (res.status === 304 && validates) {
      const { store, freshUntil } = freshness(res, nowMs);
      if (!store) this.forget(uri);
      else cached.freshUntil = freshUntil;
      return cached;
    }
    if (res.status < 200 || res.status > 299) throw new PlayAudioError(`${uri} answered HTTP ${res.status}`);
    if (res.truncated) throw new PlayAudioError(`${uri} is larger than ${MAX_AUDIO_BYTES} bytes`);
    const contentType = String(res.headers["content-type"] ?? "")
      .split(";")[0]!
      .trim();
    let samples: Int16Array;
    try {
      samples = await decodeForCall(res.body, contentType);
    } catch (err) {
      if (!(err instanceof AudioDecodeError)) throw err;
      throw new PlayAudioError(
        `${uri} is not audio that can be played (${contentType || "no content type"}: ${err.message})`,
      );
    }
    if (samples.length === 0) throw new PlayAudioError(`${uri} is not audio that can be played (no samples)`);
    const { store, freshUntil } = freshness(res, nowMs);
    const entry: Entry = {
      samples,
      durationSeconds: samples.length / CALL_SAMPLE_RATE,
      freshUntil,
      etag: header(res, "etag"),
      lastModified: header(res, "last-modified"),
    };
    this.forget(uri);
    if (store) this.keep(uri, entry);
    return entry;
  }

  private forget(uri: string): void {
    const old = this.entries.get(uri);
    if (old === undefined) return;
    this.entries.delete(uri);
    this.bytes -= old.samples.byteLength;
  }

  private keep(uri: string, entry: Entry): void {
    if (entry.samples.byteLength > this.maxCacheBytes) return;
    this.entries.set(uri, entry);
    this.bytes += entry.samples.byteLength;
    for (const [k, v] of this.entries) {
      if (this.bytes <= this.maxCacheBytes) break;
      this.entries.delete(k);
      this.bytes -= v.samples.byteLength;
    }
  }

  /** URIs cached now. */
  get size(): number {
    return this.entries.size;
  }
}
