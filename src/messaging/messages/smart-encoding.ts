/**
 * Smart encoding: look-alike characters replaced by GSM-7 ones, so that a
 * body typed in a word processor (curly quotes, dashes, non-breaking
 * spaces, an ellipsis) still travels in GSM-7 (160 characters a segment)
 * rather than UCS-2 (70).
 *
 * - Quotes: ‘ ’ ‚ ‛ ′ ` ´ → ' ; “ ” „ ‟ ″ « » → " ; ‹ › → < >
 * - Dashes and hyphens: ‐ ‑ ‒ – — ― − → -
 * - Spaces: no-break, en/em/thin/hair and other Unicode spaces → space;
 *   zero-width characters (ZWSP, ZWNJ, ZWJ, word joiner, BOM) removed
 * - … → ... ; • → - ; ˆ → ^ ; ˜ → ~ ; ‚ → ,
 * - Letters with marks outside GSM-7 (á, ê, õ, ç, ł ...) → the letter
 *   without its mark (Unicode canonical decomposition), when that letter
 *   is GSM-7; GSM-7's own accented letters (é, ü, à ...) stay.
 *
 * Applied only when the result is all GSM-7: a body that needs UCS-2
 * anyway (an emoji, Chinese) is sent exactly as written.
 */
import { isGsm7Char } from "./encoding.js";

const REPLACEMENTS: ReadonlyMap<string, string> = new Map([
  ...[..."‘’‚‛′`´"].map((c) => [c, "'"] as const),
  ...[..."“”„‟″«»"].map((c) => [c, '"'] as const),
  ["‹", "<"],
  ["›", ">"],
  ...[..."‐‑‒–—―−"].map((c) => [c, "-"] as const),
  ...[..."\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"].map(
    (c) => [c, " "] as const,
  ),
  ...[..."\u200b\u200c\u200d\u2060\ufeff"].map((c) => [c, ""] as const),
  ["…", "..."],
  ["•", "-"],
  ["ˆ", "^"],
  ["˜", "~"],
  ["ł", "l"],
  ["Ł", "L"],
]);

function replacement(ch: string): string | undefined {
  if (isGsm7Char(ch)) return ch;
  const mapped = REPLACEMENTS.get(ch);
  if (mapped !== undefined) return mapped;
  const base = ch.normalize("NFD")[0];
  if (base !== undefined && base !== ch && isGsm7Char(base)) return base;
  return undefined;
}

/** `body` with look-alikes replaced when that makes it all GSM-7; otherwise `body` unchanged. */
export function smartEncode(body: string): string {
  let out = "";
  for (const ch of body) {
    const r = replacement(ch);
    if (r === undefined) return body;
    out += r;
  }
  return out;
}
