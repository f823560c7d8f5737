/**
 * How a message body travels on the network (3GPP TS 23.038 / 23.040):
 *
 * - GSM7 when every character is in the GSM 03.38 default alphabet or its
 *   extension table; an extension character (`^ { } \ [ ~ ] | €` and form
 *   feed) takes two septets (escape + character). One segment holds 160
 *   septets; a message longer than that is split into segments of 153
 *   (the user data header of a concatenated SMS takes the other 7).
 * - UCS2 otherwise: UTF-16 code units, 70 in one segment, 67 per segment of
 *   a longer message. A character outside the Basic Multilingual Plane
 *   (most emoji) is a surrogate pair: two units.
 *
 * Segments are filled greedily and a character is never split across two
 * of them (neither an escape pair nor a surrogate pair), as handsets and
 * carriers do; so a long message can need one segment more than
 * length / 153 rounded up. An empty body still takes one segment.
 */

export type MessageEncoding = "GSM7" | "UCS2";

export interface EncodingFacts {
  encoding: MessageEncoding;
  segmentCount: number;
}

/** The default alphabet (escape excluded: it is not a character of its own). */
const GSM7_BASIC = new Set(
  "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà",
);

/** The extension table: each takes an escape septet too. */
const GSM7_EXTENSION = new Set("\f^{}\\[~]|€");

/** Whether `ch` (one code point) can be sent in GSM-7 (default alphabet or extension table). */
export function isGsm7Char(ch: string): boolean {
  return GSM7_BASIC.has(ch) || GSM7_EXTENSION.has(ch);
}

const LIMITS: Record<MessageEncoding, { single: number; multi: number }> = {
  GSM7: { single: 160, multi: 153 },
  UCS2: { single: 70, multi: 67 },
};

/** Units (septets or UTF-16 code units) each character of `body` takes, or undefined if not GSM-7. */
function gsm7Units(body: string): number[] | undefined {
  const units: number[] = [];
  for (const ch of body) {
    if (GSM7_BASIC.has(ch)) units.push(1);
    else if (GSM7_EXTENSION.has(ch)) units.push(2);
    else return undefined;
  }
  return units;
}

function ucs2Units(body: string): number[] {
  return Array.from(body, (ch) => ch.length);
}

/** Segments needed for characters of the given sizes, none split. */
function countSegments(units: number[], limits: { single: number; multi: number }): number {
  const total = units.reduce((a, b) => a + b, 0);
  if (total <= limits.single) return 1;
  let segments = 1;
  let used = 0;
  for (const u of units) {
    if (used + u > limits.multi) {
      segments++;
      used = 0;
    }
    used += u;
  }
  return segments;
}

/** The encoding `body` is sent in and how many segments it takes. */
export function encodingOf(body: string): EncodingFacts {
  const gsm = gsm7Units(body);
  if (gsm !== undefined) return { encoding: "GSM7", segmentCount: countSegments(gsm, LIMITS.GSM7) };
  return { encoding: "UCS2", segmentCount: countSegments(ucs2Units(body), LIMITS.UCS2) };
}
