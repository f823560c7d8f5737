/** The packet path's G.711 tables give exactly src/telephony/g711.ts's bytes, for every 16-bit sample. */
import { describe, expect, it } from "vitest";
import { encodeInto, g711EncodeTable } from "../../src/rtp/g711-tables.js";
import { linearToAlaw, linearToMulaw } from "../../src/telephony/g711.js";

describe("g711EncodeTable", () => {
  it.each([
    ["mulaw", linearToMulaw],
    ["alaw", linearToAlaw],
  ] as const)("%s matches the encoder for all 65536 samples", (encoding, encode) => {
    const table = g711EncodeTable(encoding);
    expect(g711EncodeTable(encoding)).toBe(table);
    const pcm = Int16Array.from({ length: 65536 }, (_, i) => i - 32768);
    const out = new Uint8Array(65536 + 3);
    encodeInto(table, pcm, 0, 65536, out, 3);
    for (let i = 0; i < 65536; i++) if (out[i + 3] !== encode(i - 32768)) expect.fail(`sample ${i - 32768}`);
    expect(out[3 + 32768]).toBe(encode(0));
  });
});
