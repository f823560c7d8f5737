/**
 * A Transcriber on an OpenAI-compatible speech-to-text endpoint
 * (`POST {url}` = `.../v1/audio/transcriptions`; whisper.cpp's server,
 * faster-whisper servers and others speak it): each channel of the audio is
 * sent as a WAV file (multipart `file`, with `model`, optional `language`,
 * `response_format=verbose_json`, and `Authorization: Bearer {apiKey}` when
 * a key is given); the answer's `segments` (start/end in seconds, text)
 * become that channel's utterances, empty texts dropped. A non-2xx answer,
 * a body without segments or text, or no answer within `timeoutMs` rejects
 * (the transcription is then FAILED). Configured by the TRANSCRIBER_*
 * settings (settings.ts) and given the recordings of real calls
 * (select.ts).
 */
import { encodeWav } from "../recordings/audio/wav.js";
import type { TranscribedUtterance, Transcriber, TranscriptionAudio } from "./transcriber.js";

export interface OpenAiTranscriberOptions {
  /** The endpoint, e.g. `http://127.0.0.1:8080/v1/audio/transcriptions`. */
  url: string;
  apiKey?: string;
  /** Default `whisper-1`. */
  model?: string;
  language?: string;
  /** Default 120 000 ms. */
  timeoutMs?: number;
}

interface VerboseJson {
  text?: unknown;
  segments?: { start?: unknown; end?: unknown; text?: unknown }[];
}

export class OpenAiTranscriber implements Transcriber {
  constructor(private readonly options: OpenAiTranscriberOptions) {}

  async transcribe(audio: TranscriptionAudio): Promise<TranscribedUtterance[]> {
    const out: TranscribedUtterance[] = [];
    for (const [channel, samples] of audio.channels.entries()) {
      out.push(...(await this.channel(channel, samples, audio.sampleRate)));
    }
    return out.sort((a, b) => a.offsetMs - b.offsetMs || a.channel - b.channel);
  }

  private async channel(
    channel: number,
    samples: Int16Array,
    sampleRate: number,
  ): Promise<TranscribedUtterance[]> {
    const form = new FormData();
    const wav = encodeWav([samples], sampleRate);
    form.append("file", new Blob([new Uint8Array(wav)], { type: "audio/wav" }), `channel-${channel}.wav`);
    form.append("model", this.options.model ?? "whisper-1");
    if (this.options.language !== undefined) form.append("language", this.options.language);
    form.append("response_format", "verbose_json");
    const headers: Record<string, string> = {};
    if (this.options.apiKey !== undefined) headers.authorization = `Bearer ${this.options.apiKey}`;
    const timeoutMs = this.options.timeoutMs ?? 120_000;
    let res: Response;
    let body: string;
    try {
      res = await fetch(this.options.url, {
        method: "POST",
        body: form,
        headers,
        signal: AbortSignal.timeout(timeoutMs),
      });
      body = await res.text();
    } catch (err) {
      if ((err as Error).name === "TimeoutError") {
        throw new Error(
          `the speech recognizer did not answer within ${timeoutMs} ms (TRANSCRIBER_TIMEOUT_MS)`,
        );
      }
      throw new Error("the speech recognizer could not be reached", { cause: err });
    }
    if (!res.ok) throw new Error(`the speech recognizer answered HTTP ${res.status}`);
    let json: VerboseJson | null;
    try {
      json = JSON.parse(body) as VerboseJson | null;
    } catch {
      throw new Error("the speech recognizer's answer is not JSON");
    }
    if (typeof json !== "object" || json === null || !Array.isArray(json.segments)) {
      throw new Error("the speech recognizer's answer has no segments");
    }
    return json.segments.flatMap((s) => {
      if (typeof s !== "object" || s === null) return [];
      const text = typeof s.text === "string" ? s.text.trim() : "";
      const start = Number(s.start);
      const end = Number(s.end);
      if (text === "" || !Number.isFinite(start) || !Number.isFinite(end)) return [];
      return [
        {
          channel,
          offsetMs: Math.round(start * 1000),
          durationMs: Math.max(0, Math.round((end - start) * 1000)),
          text,
        },
      ];
    });
  }
}
