import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

describe("SIMULATOR_TIME_SCALE", () => {
  const env = { SWITCHBOARD_OPERATOR_TOKEN: "test-operator-token-0123456789abcdef" };

  it("defaults to real time and accepts fractions", () => {
    expect(loadConfig(env).simulatorTimeScale).toBe(1);
    expect(loadConfig({ ...env, SIMULATOR_TIME_SCALE: "0.001" }).simulatorTimeScale).toBe(0.001);
    expect(loadConfig({ ...env, SIMULATOR_TIME_SCALE: "2" }).simulatorTimeScale).toBe(2);
  });

  it.each(["0", "-1", "abc", "1001", "Infinity"])("refuses %s", (value) => {
    expect(() => loadConfig({ ...env, SIMULATOR_TIME_SCALE: value })).toThrow(ConfigError);
  });
});
