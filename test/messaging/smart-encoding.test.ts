/** Smart encoding: look-alikes replaced only when that makes the body GSM-7. */
import { describe, expect, it } from "vitest";
import { encodingOf } from "../../src/messaging/messages/encoding.js";
import { smartEncode } from "../../src/messaging/messages/smart-encoding.js";

describe("smartEncode", () => {
  const cases: [string, string, string][] = [
    ["curly quotes", "‘single’ “double” „low‟", '\'single\' "double" "low"'],
    ["guillemets", "«oui» ‹non›", '"oui" <non>'],
    ["dashes and minus", "a‐b‑c‒d–e—f―g−h", "a-b-c-d-e-f-g-h"],
    ["spaces", "a\u00a0b\u2009c\u202fd\u3000e", "a b c d e"],
    ["zero-width characters", "a\u200bb\u200dc\ufeffd", "abcd"],
    ["ellipsis and bullet", "wait… • done", "wait... - done"],
    ["marks outside GSM-7", "Ångström façade São Łódź", "Ångström facade Sao Lodz"],
    ["GSM-7's own accents stay", "café über à", "café über à"],
    ["GSM-7 extension characters stay", "{[~]} € ^", "{[~]} € ^"],
  ];
  it.each(cases)("%s", (_name, input, output) => {
    expect(smartEncode(input)).toBe(output);
    expect(encodingOf(smartEncode(input)).encoding).toBe("GSM7");
  });

  it("leaves a body that needs UCS-2 anyway exactly as written", () => {
    for (const body of ["“quoted” 🙂", "“你好”", "Ωmega — ✓"]) {
      expect(smartEncode(body)).toBe(body);
      expect(encodingOf(body).encoding).toBe("UCS2");
    }
  });

  it("keeps a 160-character body with curly quotes in one GSM-7 segment", () => {
    const body = `“${"x".repeat(158)}”`;
    expect(encodingOf(body)).toEqual({ encoding: "UCS2", segmentCount: 3 });
    expect(encodingOf(smartEncode(body))).toEqual({ encoding: "GSM7", segmentCount: 1 });
  });
});
