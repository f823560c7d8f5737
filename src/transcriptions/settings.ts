/**
 * Settings of the speech recognizer that transcribes recordings of real
 * (SIP) calls: an OpenAI-compatible `/v1/audio/transcriptions` endpoint
 * (openai-transcriber.ts). Read by src/config.ts; docs/configuration.md and
 * docs/transcriptions.md describe them.
 *
 * - TRANSCRIBER_URL: the endpoint's full URL (http or https, e.g.
 *   `http://127.0.0.1:8080/v1/audio/transcriptions`). Unset: no recognizer;
 *   a SIP call's transcription then ends FAILED (select.ts).
 * - TRANSCRIBER_MODEL: the `model` field sent (default `whisper-1`).
 * - TRANSCRIBER_API_KEY: sent as `Authorization: Bearer <key>` (unset: none).
 * - TRANSCRIBER_LANGUAGE: the `language` field (ISO 639-1, e.g. `en`);
 *   unset: the recognizer detects it.
 * - TRANSCRIBER_TIMEOUT_MS: time limit of one request (one channel),
 *   default 120000; the whole transcription is also bounded by
 *   RECORDING_PROCESSING_TIMEOUT_MS.
 */
export interface TranscriberSettings {
  url: string;
  model: string;
  apiKey: string | undefined;
  language: string | undefined;
  timeoutMs: number;
}

export class TranscriberSettingsError extends Error {}

export function loadTranscriberSettings(env: NodeJS.ProcessEnv): TranscriberSettings | undefined {
  const raw = env.TRANSCRIBER_URL || undefined;
  const model = env.TRANSCRIBER_MODEL || "whisper-1";
  const apiKey = env.TRANSCRIBER_API_KEY || undefined;
  const language = env.TRANSCRIBER_LANGUAGE || undefined;
  const timeoutRaw = env.TRANSCRIBER_TIMEOUT_MS || undefined;
  if (raw === undefined) {
    const stray = [
      ["TRANSCRIBER_MODEL", env.TRANSCRIBER_MODEL],
      ["TRANSCRIBER_API_KEY", apiKey],
      ["TRANSCRIBER_LANGUAGE", language],
      ["TRANSCRIBER_TIMEOUT_MS", timeoutRaw],
    ].find(([, v]) => v !== undefined && v !== "");
    if (stray !== undefined) throw new TranscriberSettingsError(`${stray[0]} needs TRANSCRIBER_URL`);
    return undefined;
  }
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (url === undefined || !/^https?:$/.test(url.protocol) || url.hash !== "") {
    throw new TranscriberSettingsError(
      `TRANSCRIBER_URL must be an http(s) URL, e.g. http://127.0.0.1:8080/v1/audio/transcriptions, got ${JSON.stringify(raw)}`,
    );
  }
  if (!/^[\x21-\x7e]{1,200}$/.test(model)) {
    throw new TranscriberSettingsError("TRANSCRIBER_MODEL must be 1 to 200 visible ASCII characters");
  }
  if (apiKey !== undefined && !/^[\x21-\x7e]{1,4096}$/.test(apiKey)) {
    throw new TranscriberSettingsError("TRANSCRIBER_API_KEY must be visible ASCII characters (no spaces)");
  }
  if (language !== undefined && !/^[a-z]{2,3}$/.test(language)) {
    throw new TranscriberSettingsError(
      `TRANSCRIBER_LANGUAGE must be an ISO 639 code such as en, got ${JSON.stringify(language)}`,
    );
  }
  let timeoutMs = 120_000;
  if (timeoutRaw !== undefined) {
    const n = Number(timeoutRaw);
    if (!Number.isInteger(n) || n < 100 || n > 3_600_000) {
      throw new TranscriberSettingsError("TRANSCRIBER_TIMEOUT_MS must be an integer from 100 to 3600000");
    }
    timeoutMs = n;
  }
  return { url: url.toString(), model, apiKey, language, timeoutMs };
}
