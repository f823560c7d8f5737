/** SIP_CAPTURE, SIP_CAPTURE_MAX_MESSAGES and SIP_CAPTURE_MAX_BYTES through loadConfig. */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

describe("SIP capture settings", () => {
  const env = { SWITCHBOARD_OPERATOR_TOKEN: "test-operator-token-0123456789abcdef" };

  it("default to on, 200 messages and 256 KiB per call", () => {
    expect(loadConfig(env).sip.capture).toEqual({ enabled: true, maxMessages: 200, maxBytes: 262_144 });
  });

  it("take values in range", () => {
    const config = loadConfig({
      ...env,
      SIP_CAPTURE: "false",
      SIP_CAPTURE_MAX_MESSAGES: "10000",
      SIP_CAPTURE_MAX_BYTES: "4096",
    });
    expect(config.sip.capture).toEqual({ enabled: false, maxMessages: 10_000, maxBytes: 4096 });
    expect(loadConfig({ ...env, SIP_CAPTURE: "0" }).sip.capture.enabled).toBe(false);
    expect(loadConfig({ ...env, SIP_CAPTURE: "1" }).sip.capture.enabled).toBe(true);
  });

  it.each([
    ["SIP_CAPTURE", "yes"],
    ["SIP_CAPTURE_MAX_MESSAGES", "0"],
    ["SIP_CAPTURE_MAX_MESSAGES", "10001"],
    ["SIP_CAPTURE_MAX_MESSAGES", "1.5"],
    ["SIP_CAPTURE_MAX_BYTES", "4095"],
    ["SIP_CAPTURE_MAX_BYTES", "lots"],
  ])("refuses %s=%s, naming it", (name, value) => {
    expect(() => loadConfig({ ...env, [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ ...env, [name]: value })).toThrow(name);
  });
});
