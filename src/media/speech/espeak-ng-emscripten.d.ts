/**
 * Types of npm `@echogarden/espeak-ng-emscripten` (it ships none): the
 * Emscripten module factory and the part of its eSpeakNGWorker binding that
 * espeak-worker.ts uses.
 */
declare module "@echogarden/espeak-ng-emscripten" {
  export interface EspeakVoice {
    name: string;
    identifier: string;
    languages: { priority: number; name: string }[];
  }

  export interface ESpeakNGWorker {
    /** The engine's output rate (22 050 Hz). */
    readonly samplerate: number;
    /** Selects a voice by name or identifier, `+variant` allowed; 0 on success. */
    set_voice(name: string): number;
    list_voices(): EspeakVoice[];
    /** Synthesizes `text`, handing the audio to `callback` chunk by chunk (PCM 16-bit); return false to go on. */
    synthesize(text: string, callback: (samples: Int16Array | null, events: unknown[]) => boolean): void;
  }

  export interface EspeakModule {
    eSpeakNGWorker: new () => ESpeakNGWorker;
  }

  const factory: (options?: {
    print?: (text: string) => void;
    printErr?: (text: string) => void;
  }) => Promise<EspeakModule>;
  export default factory;
}
