/**
 * The audio of a `<Play>`: fetched (GET, the webhook settings' timeout and
 * destination guard, redirects followed, at most MAX_AUDIO_BYTES) and
 * measured with music-metadata (WAV, MP3, OGG, FLAC, AAC, ...), so that a
 * Play lasts as long as its file. Lengths are cached per URI (the last
 * CACHE_SIZE URIs; hold music repeats). A URI that cannot be fetched
 * (no 2xx, too large, unreachable, refused) or whose length cannot be told
 * (not audio) is a PlayAudioError: the engine ends the call FAILED
 * PLAY_UNAVAILABLE with its message.
 */
import { parseBuffer } from "music-metadata";
import type { DeliveryOptions } from "../../events/delivery.js";
import { HttpRequestError, httpGet } from "../../events/http.js";

export const MAX_AUDIO_BYTES = 16 * 1024 * 1024;
export const CACHE_SIZE = 256;

export class PlayAudioError extends Error {
  override name = "PlayAudioError";
}

export class PlayAudio {
  private readonly lengths = new Map<string, number>();

  constructor(private readonly options: DeliveryOptions) {}

  /** The length in seconds of the audio at `uri`. */
  async durationOf(uri: string): Promise<number> {
    const cached = this.lengths.get(uri);
    if (cached !== undefined) return cached;
    const seconds = await this.measure(uri);
    if (this.lengths.size >= CACHE_SIZE) this.lengths.delete(this.lengths.keys().next().value!);
    this.lengths.set(uri, seconds);
    return seconds;
  }

  private async measure(uri: string): Promise<number> {
    let res: Awaited<ReturnType<typeof httpGet>>;
    try {
      res = await httpGet(
        uri,
        { accept: "audio/*" },
        {
          timeoutMs: this.options.timeoutMs,
          allowPrivateDestinations: this.options.allowPrivateDestinations,
          maxResponseBytes: MAX_AUDIO_BYTES,
        },
      );
    } catch (err) {
      if (err instanceof HttpRequestError) throw new PlayAudioError(`${uri}: ${err.message}`);
      throw err;
    }
    if (res.status < 200 || res.status > 299) throw new PlayAudioError(`${uri} answered HTTP ${res.status}`);
    if (res.truncated) throw new PlayAudioError(`${uri} is larger than ${MAX_AUDIO_BYTES} bytes`);
    const contentType = String(res.headers["content-type"] ?? "")
      .split(";")[0]!
      .trim();
    let duration: number | undefined;
    try {
      const metadata = await parseBuffer(res.body, contentType === "" ? {} : { mimeType: contentType }, {
        duration: true,
        skipCovers: true,
      });
      duration = metadata.format.duration;
    } catch {
      duration = undefined;
    }
    if (duration === undefined || !Number.isFinite(duration) || duration <= 0) {
      throw new PlayAudioError(
        `${uri} is not audio whose length can be told (${contentType || "no content type"})`,
      );
    }
    return duration;
  }
}
