/**
 * How the markup's `Language` and `Voice` choose an eSpeak NG voice
 * (docs/voiceml.md, "Speech"):
 * - Language, a tag like `en-AU` (case-insensitive): the voice whose first
 *   language is the tag, else one that lists it (`en-GB` -> gmw/en), else
 *   the same for its primary subtag (`fr-CA` -> fr, `de-AT` -> de); plain
 *   `en` and any English without a voice of its own (`en-AU`) is American
 *   English. Nothing found, or absent: DEFAULT_LANGUAGE (`en-us`).
 * - Voice: `man`/`male` (the default), `woman`/`female` (eSpeak's `f3`
 *   variant), or one of eSpeak's variant names below (`f1`, `m3`, `croak`,
 *   ...). Anything else: the default voice. A Voice never changes the
 *   language.
 * The result is an eSpeak voice name: the voice's identifier (`gmw/en-US`)
 * with `+variant` when a variant applies.
 */

export const DEFAULT_LANGUAGE = "en-us";

/** eSpeak NG's voice variants the Voice attribute may name. */
export const VARIANTS = new Set([
  "m1",
  "m2",
  "m3",
  "m4",
  "m5",
  "m6",
  "m7",
  "f1",
  "f2",
  "f3",
  "f4",
  "f5",
  "croak",
  "whisper",
  "whisperf",
]);

const VOICE_ALIASES: Record<string, string | undefined> = {
  man: undefined,
  male: undefined,
  woman: "f3",
  female: "f3",
};

/** A voice as the engine lists it. */
export interface EngineVoice {
  identifier: string;
  /** Language tags, lower case, most specific first. */
  languages: string[];
}

/** The eSpeak voice name for the markup's language and voice (see the header). */
export function chooseVoice(voices: readonly EngineVoice[], language?: string, voice?: string): string {
  const identifier =
    findLanguage(voices, language?.toLowerCase()) ??
    findLanguage(voices, DEFAULT_LANGUAGE) ??
    voices[0]?.identifier ??
    DEFAULT_LANGUAGE;
  const name = voice?.toLowerCase() ?? "";
  const variant = name in VOICE_ALIASES ? VOICE_ALIASES[name] : VARIANTS.has(name) ? name : undefined;
  return variant === undefined ? identifier : `${identifier}+${variant}`;
}

function findLanguage(voices: readonly EngineVoice[], tag: string | undefined): string | undefined {
  if (tag === undefined || tag === "") return undefined;
  const own = voices.find((v) => v.languages[0] === tag)?.identifier;
  if (own !== undefined) return own;
  const primary = tag.split("-")[0]!;
  if (primary === "en") return byTag(voices, DEFAULT_LANGUAGE);
  return byTag(voices, tag) ?? byTag(voices, primary);
}

function byTag(voices: readonly EngineVoice[], tag: string): string | undefined {
  return (
    voices.find((v) => v.languages[0] === tag)?.identifier ??
    voices.find((v) => v.languages.includes(tag))?.identifier
  );
}
