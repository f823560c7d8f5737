/** The call rate table (CALL_RATES) and prices. */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { CallRatesError, parseCallRates, priceOf } from "../../src/voice/calls/rates.js";

describe("call rates", () => {
  const rates = parseCallRates("+61=0.05, +1=0.02, +614=0.125, +=1", "AUD");

  it("takes the longest matching prefix, per started minute of answer time", () => {
    expect(priceOf(rates, "+61255501234", 60_000)).toEqual({ currency: "AUD", units: 0, nanos: 50_000_000 });
    expect(priceOf(rates, "+61255501234", 60_001)).toEqual({ currency: "AUD", units: 0, nanos: 100_000_000 });
    expect(priceOf(rates, "+61491570156", 10 * 60_000)).toEqual({
      currency: "AUD",
      units: 1,
      nanos: 250_000_000,
    });
    expect(priceOf(rates, "+12025550123", 1)).toEqual({ currency: "AUD", units: 0, nanos: 20_000_000 });
    expect(priceOf(rates, "+447700900123", 120_000)).toEqual({ currency: "AUD", units: 2, nanos: 0 });
  });

  it("prices unanswered calls and unmatched destinations at 0", () => {
    expect(priceOf(rates, "+61255501234", 0)).toEqual({ currency: "AUD", units: 0, nanos: 0 });
    expect(priceOf(parseCallRates("+61=0.05", "USD"), "+1202", 600_000)).toEqual({
      currency: "USD",
      units: 0,
      nanos: 0,
    });
  });

  it.each(["61=0.05", "+61=abc", "+61=0.0000000001", "+61=1,+61=2", "+61"])("refuses %s", (spec) => {
    expect(() => parseCallRates(spec, "AUD")).toThrow(CallRatesError);
  });

  it("is read from the environment, with defaults", () => {
    const config = loadConfig({ LOG_LEVEL: "silent", SWITCHBOARD_OPERATOR_TOKEN: "x".repeat(32) });
    expect(config.callRates.currency).toBe("AUD");
    expect(config.callRates.entries.map((e) => e.prefix)).toEqual(["+61", "+1", "+"]);
    expect(() =>
      loadConfig({ CALL_RATES_CURRENCY: "dollars", SWITCHBOARD_OPERATOR_TOKEN: "x".repeat(32) }),
    ).toThrow(/CALL_RATES_CURRENCY/);
  });
});
