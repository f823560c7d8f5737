/**
 * The TRANSCRIBER_* settings through loadConfig: unset means no recognizer;
 * set, they are read with their defaults; bad values are a ConfigError
 * naming the variable.
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config.js";
import { testConfig } from "../support/app.js";

describe("TRANSCRIBER_* settings", () => {
  it("no TRANSCRIBER_URL: no recognizer", () => {
    expect(testConfig().transcriber).toBeUndefined();
  });

  it("reads the URL, model, key, language and timeout, with defaults", () => {
    expect(
      testConfig({ TRANSCRIBER_URL: "http://127.0.0.1:8080/v1/audio/transcriptions" }).transcriber,
    ).toEqual({
      url: "http://127.0.0.1:8080/v1/audio/transcriptions",
      model: "whisper-1",
      apiKey: undefined,
      language: undefined,
      timeoutMs: 120_000,
    });
    expect(
      testConfig({
        TRANSCRIBER_URL: "https://stt.example.com/v1/audio/transcriptions",
        TRANSCRIBER_MODEL: "Systran/faster-whisper-small",
        TRANSCRIBER_API_KEY: "sk-abc",
        TRANSCRIBER_LANGUAGE: "en",
        TRANSCRIBER_TIMEOUT_MS: "30000",
      }).transcriber,
    ).toEqual({
      url: "https://stt.example.com/v1/audio/transcriptions",
      model: "Systran/faster-whisper-small",
      apiKey: "sk-abc",
      language: "en",
      timeoutMs: 30_000,
    });
  });

  it.each([
    [{ TRANSCRIBER_URL: "not a url" }, /TRANSCRIBER_URL must be an http\(s\) URL/],
    [{ TRANSCRIBER_URL: "ftp://x.example.com/" }, /TRANSCRIBER_URL/],
    [{ TRANSCRIBER_URL: "http://x/", TRANSCRIBER_TIMEOUT_MS: "5" }, /TRANSCRIBER_TIMEOUT_MS/],
    [{ TRANSCRIBER_URL: "http://x/", TRANSCRIBER_TIMEOUT_MS: "soon" }, /TRANSCRIBER_TIMEOUT_MS/],
    [{ TRANSCRIBER_URL: "http://x/", TRANSCRIBER_LANGUAGE: "English" }, /TRANSCRIBER_LANGUAGE/],
    [{ TRANSCRIBER_URL: "http://x/", TRANSCRIBER_MODEL: "a model" }, /TRANSCRIBER_MODEL/],
    [{ TRANSCRIBER_URL: "http://x/", TRANSCRIBER_API_KEY: "two words" }, /TRANSCRIBER_API_KEY/],
    [{ TRANSCRIBER_API_KEY: "sk-abc" }, /TRANSCRIBER_API_KEY needs TRANSCRIBER_URL/],
  ])("%o is refused", (env, message) => {
    expect(() => testConfig(env)).toThrow(ConfigError);
    expect(() => testConfig(env)).toThrow(message);
  });
});
