/** Encoding and segment counts of message bodies (src/messaging/messages/encoding.ts). */
import { describe, expect, it } from "vitest";
import { encodingOf } from "../../src/messaging/messages/encoding.js";

const a = (n: number) => "a".repeat(n);

describe("encodingOf", () => {
  it.each([
    ["an empty body", "", "GSM7", 1],
    ["160 GSM-7 characters", a(160), "GSM7", 1],
    ["161 GSM-7 characters", a(161), "GSM7", 2],
    ["306 GSM-7 characters (2 x 153)", a(306), "GSM7", 2],
    ["307 GSM-7 characters", a(307), "GSM7", 3],
    ["1600 GSM-7 characters", a(1600), "GSM7", 11],
    [
      "the whole default alphabet",
      "@£$¥èéùìòÇØøÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ!\"#¤%&'()*+,-./:;<=>?¡ÄÖÑÜ§¿äöñüà",
      "GSM7",
      1,
    ],
    ["80 extension characters (160 septets)", "€".repeat(80), "GSM7", 1],
    ["81 extension characters (162 septets)", "€".repeat(81), "GSM7", 2],
    ["an escape pair never split across segments", `${a(152)}€${a(152)}`, "GSM7", 3],
    ["extension characters ^{}\\[~]|", "^{}\\[~]|", "GSM7", 1],
    ["a backtick (not GSM-7)", "Hello `world`", "UCS2", 1],
    ["lowercase ç (only Ç is GSM-7)", "ça va", "UCS2", 1],
    ["70 CJK characters", "你".repeat(70), "UCS2", 1],
    ["71 CJK characters", "你".repeat(71), "UCS2", 2],
    ["134 CJK characters (2 x 67)", "你".repeat(134), "UCS2", 2],
    ["135 CJK characters", "你".repeat(135), "UCS2", 3],
    ["35 emoji (70 UTF-16 units)", "😀".repeat(35), "UCS2", 1],
    ["36 emoji (72 units)", "😀".repeat(36), "UCS2", 2],
    ["a surrogate pair never split across segments", `${a(66)}😀${a(66)}`, "UCS2", 3],
  ])("%s", (_name, body, encoding, segmentCount) => {
    expect(encodingOf(body)).toEqual({ encoding, segmentCount });
  });
});
