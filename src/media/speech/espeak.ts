/**
 * The built-in SpeechEngine: eSpeak NG (WebAssembly, npm
 * `@echogarden/espeak-ng-emscripten`, GPL-3.0: docs/licenses.md) on a
 * worker thread (espeak-worker.ts), so a synthesis never blocks the event
 * loop. The thread starts at the first synthesize, not before (the engine
 * and its voices take ~40 MB), and ends after `idleMs` (default 60 s)
 * without requests, giving that memory back; the next request starts it
 * again. Requests are answered in order, one at a time. The thread dying
 * fails what it had in hand with a SpeechError; the next request starts a
 * new one.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { type SpeechEngine, SpeechError, type SpeechOptions } from "./engine.js";
import type { SpeechReply, SpeechRequest } from "./espeak-worker.js";

export const DEFAULT_IDLE_MS = 60_000;

/** The build's module (dist/espeak-worker.js) or, from the sources (tsx, tests), the TypeScript one through tsx. */
function spawnWorker(): Worker {
  const options = { resourceLimits: { maxYoungGenerationSizeMb: 8 } };
  const built = new URL("./espeak-worker.js", import.meta.url);
  if (existsSync(fileURLToPath(built))) return new Worker(built, options);
  const api = createRequire(import.meta.url)
    .resolve("tsx/esm/api")
    .replace(/\.cjs$/, ".mjs");
  const source = new URL("./espeak-worker.ts", import.meta.url).href;
  const boot = `import(${JSON.stringify(pathToFileURL(api).href)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source)}); });`;
  return new Worker(boot, { ...options, eval: true });
}

interface Pending {
  resolve(samples: Int16Array): void;
  reject(err: Error): void;
}

export class EspeakEngine implements SpeechEngine {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Threads started so far (tests check the lazy start and the idle stop). */
  starts = 0;

  constructor(private readonly idleMs = DEFAULT_IDLE_MS) {}

  /** Whether the engine's thread is running. */
  get running(): boolean {
    return this.worker !== undefined;
  }

  synthesize(text: string, options: SpeechOptions = {}): Promise<Int16Array> {
    const worker = this.start();
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const id = this.nextId++;
    const request: SpeechRequest = { id, text };
    if (options.language !== undefined) request.language = options.language;
    if (options.voice !== undefined) request.voice = options.voice;
    return new Promise<Int16Array>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage(request);
    });
  }

  private start(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = spawnWorker();
    this.starts++;
    worker.on("message", (reply: SpeechReply) => {
      const p = this.pending.get(reply.id);
      if (p === undefined) return;
      this.pending.delete(reply.id);
      if ("error" in reply) p.reject(new SpeechError(`speech synthesis failed: ${reply.error}`));
      else p.resolve(reply.samples);
      if (this.pending.size === 0) this.idle();
    });
    const fail = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      for (const p of this.pending.values())
        p.reject(new SpeechError(`speech engine stopped: ${err.message}`));
      this.pending.clear();
    };
    worker.on("error", fail);
    worker.on("exit", (code) => fail(new Error(`its thread exited (${code})`)));
    this.worker = worker;
    return worker;
  }

  /** Nothing pending: the thread does not hold the process open, and ends after idleMs. */
  private idle(): void {
    const worker = this.worker;
    if (worker === undefined) return;
    worker.unref();
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.pending.size === 0 && this.worker === worker) void this.stop();
    }, this.idleMs);
    this.idleTimer.unref();
  }

  private async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker !== undefined) await worker.terminate();
  }

  async close(): Promise<void> {
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    for (const p of this.pending.values()) p.reject(new SpeechError("speech engine closed"));
    this.pending.clear();
    await this.stop();
  }
}
