/**
 * A bounded LRU cache of synthesized speech in front of any SpeechEngine,
 * keyed by (text, voice, language): a repeated prompt is served from memory,
 * and concurrent requests for the same prompt share one synthesis. Bounded
 * by total samples (`maxSamples`, default 30 minutes of 8 kHz audio, ~29 MB);
 * the least recently used prompts go first. Failures are not cached.
 */
import type { SpeechEngine, SpeechOptions } from "./engine.js";

/** Default bound: 30 minutes of 8000 Hz audio. */
export const DEFAULT_CACHE_SAMPLES = 30 * 60 * 8000;

export class CachedSpeech implements SpeechEngine {
  private readonly entries = new Map<string, Int16Array>();
  private readonly pending = new Map<string, Promise<Int16Array>>();
  private samples = 0;
  /** Syntheses the inner engine was asked for (cache misses). */
  misses = 0;
  hits = 0;

  constructor(
    readonly engine: SpeechEngine,
    private readonly maxSamples = DEFAULT_CACHE_SAMPLES,
  ) {}

  async synthesize(text: string, options: SpeechOptions = {}): Promise<Int16Array> {
    const key = JSON.stringify([text, options.voice ?? "", options.language ?? ""]);
    const cached = this.entries.get(key);
    if (cached !== undefined) {
      this.hits++;
      // Most recently used last.
      this.entries.delete(key);
      this.entries.set(key, cached);
      return cached;
    }
    const running = this.pending.get(key);
    if (running !== undefined) {
      this.hits++;
      return running;
    }
    this.misses++;
    const job = this.engine.synthesize(text, options).finally(() => this.pending.delete(key));
    this.pending.set(key, job);
    const audio = await job;
    this.store(key, audio);
    return audio;
  }

  private store(key: string, audio: Int16Array): void {
    if (audio.length > this.maxSamples) return;
    const old = this.entries.get(key);
    if (old !== undefined) this.samples -= old.length;
    this.entries.delete(key);
    this.entries.set(key, audio);
    this.samples += audio.length;
    for (const [k, v] of this.entries) {
      if (this.samples <= this.maxSamples) break;
      this.entries.delete(k);
      this.samples -= v.length;
    }
  }

  /** Resolves once no synthesis is in flight (each one settled, failed ones included). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending.values()]);
  }

  /** Prompts cached now. */
  get size(): number {
    return this.entries.size;
  }

  async close(): Promise<void> {
    this.entries.clear();
    this.samples = 0;
    await this.engine.close();
  }
}
