/**
 * Settings of the SIP edge's capture (./capture.ts), read by `loadConfig`
 * (src/config.ts) from the environment it is given:
 *
 * | variable                  | default | range              |
 * | ------------------------- | ------- | ------------------ |
 * | SIP_CAPTURE               | true    | true/false (1/0)   |
 * | SIP_CAPTURE_MAX_MESSAGES  | 200     | 1 to 10,000        |
 * | SIP_CAPTURE_MAX_BYTES     | 262144  | 4096 to 16,777,216 |
 *
 * - SIP_CAPTURE: whether the SIP messages of real calls are stored for
 *   GetSipInfo.
 * - SIP_CAPTURE_MAX_MESSAGES / SIP_CAPTURE_MAX_BYTES: per call, the first
 *   messages are stored until either bound would be passed; the rest are
 *   only counted (`SipInfo.omitted_message_count`).
 */

export interface SipCaptureConfig {
  enabled: boolean;
  maxMessages: number;
  maxBytes: number;
}

export class SipCaptureConfigError extends Error {
  override readonly name = "SipCaptureConfigError";
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || value < min || value > max) {
    throw new SipCaptureConfigError(
      `${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

export function loadSipCaptureConfig(env: NodeJS.ProcessEnv): SipCaptureConfig {
  const raw = env.SIP_CAPTURE ?? "";
  if (!["", "true", "1", "false", "0"].includes(raw)) {
    throw new SipCaptureConfigError(`SIP_CAPTURE must be true or false, got ${JSON.stringify(raw)}`);
  }
  return {
    enabled: raw !== "false" && raw !== "0",
    maxMessages: int(env, "SIP_CAPTURE_MAX_MESSAGES", 200, 1, 10_000),
    maxBytes: int(env, "SIP_CAPTURE_MAX_BYTES", 256 * 1024, 4096, 16 * 1024 * 1024),
  };
}
