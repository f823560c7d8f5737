/**
 * The eSpeak NG thread (espeak.ts starts it): loads the engine (npm
 * `@echogarden/espeak-ng-emscripten`, eSpeak NG built to WebAssembly, its
 * voice data in a file beside it, nothing downloaded) once, then answers
 * each request `{ id, text, language, voice }` with `{ id, samples }` (PCM
 * 16-bit mono at 8000 Hz, resampled from the engine's 22 050 Hz; the buffer
 * transferred) or `{ id, error }`. Synthesis is synchronous and takes
 * hundreds of ms for a sentence: that is why it runs on its own thread.
 */
import { parentPort } from "node:worker_threads";
import { resampleInt16 } from "../resample.js";
import { SPEECH_SAMPLE_RATE } from "./engine.js";
import { chooseVoice, type EngineVoice } from "./espeak-voices.js";

export interface SpeechRequest {
  id: number;
  text: string;
  language?: string;
  voice?: string;
}

export type SpeechReply = { id: number; samples: Int16Array } | { id: number; error: string };

const port = parentPort;
if (port === null) throw new Error("espeak-worker.ts runs as a worker thread");

const engine = (async () => {
  const { default: factory } = await import("@echogarden/espeak-ng-emscripten");
  // The module's own print hooks would write to the process's stdout.
  const module = await factory({ print: () => {}, printErr: () => {} });
  const worker = new module.eSpeakNGWorker();
  const voices: EngineVoice[] = worker.list_voices().map((v) => ({
    identifier: v.identifier,
    languages: v.languages.map((l) => l.name.toLowerCase()),
  }));
  return { worker, voices };
})();

function synthesize({ worker, voices }: Awaited<typeof engine>, request: SpeechRequest): Int16Array {
  const name = chooseVoice(voices, request.language, request.voice);
  if (worker.set_voice(name) !== 0) throw new Error(`eSpeak NG has no voice ${name}`);
  const chunks: Int16Array[] = [];
  worker.synthesize(request.text, (samples) => {
    if (samples !== null && samples.length > 0) chunks.push(samples);
    return false;
  });
  const all = new Int16Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return resampleInt16(all, worker.samplerate, SPEECH_SAMPLE_RATE);
}

port.on("message", (request: SpeechRequest) => {
  engine.then(
    (e) => {
      let samples: Int16Array;
      try {
        samples = synthesize(e, request);
      } catch (err) {
        port.postMessage({
          id: request.id,
          error: String((err as Error).message ?? err),
        } satisfies SpeechReply);
        return;
      }
      port.postMessage({ id: request.id, samples } satisfies SpeechReply, [samples.buffer as ArrayBuffer]);
    },
    (err: unknown) => {
      port.postMessage({
        id: request.id,
        error: `eSpeak NG did not load: ${(err as Error).message ?? err}`,
      } satisfies SpeechReply);
    },
  );
});
