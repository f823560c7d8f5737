/**
 * URI references in VoiceML (NextUri, RecordingReadyUri, Play / Redirect text): either an
 * absolute http(s) URL or a reference relative to the URL the document was fetched from. The
 * parser validates them and returns them as written; the engine resolves them with `resolveUri`.
 */
import { MARKUP_LIMITS } from "./types.js";

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;
// Whitespace, ASCII controls, backslash (WHATWG URL treats it as '/' in http(s)), and <>"{}|^`
// which RFC 3986 does not allow unescaped.
const FORBIDDEN = /[\s\\<>"{}|^`]/;

function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}
const PLACEHOLDER_BASE = "https://base.invalid/path/";

function isHttp(url: URL): boolean {
  return url.protocol === "http:" || url.protocol === "https:";
}

/**
 * Checks a URI reference; returns undefined when acceptable, else the reason (for messages).
 */
export function checkUriReference(value: string): string | undefined {
  if (value.length === 0) return "must not be empty";
  if (value.length > MARKUP_LIMITS.maxUriLength) {
    return `must be at most ${MARKUP_LIMITS.maxUriLength} characters`;
  }
  if (FORBIDDEN.test(value) || hasControl(value))
    return 'must not contain spaces, control characters or <>"\\{}|^`';
  const scheme = SCHEME.exec(value)?.[1];
  if (scheme !== undefined) {
    const lower = scheme.toLowerCase();
    if (lower !== "http" && lower !== "https") return "must be an http(s) URL or a relative reference";
    if (!URL.canParse(value)) return "must be a valid http(s) URL";
    const url = new URL(value);
    if (url.hostname === "") return "must name a host";
    return undefined;
  }
  if (!URL.canParse(value, PLACEHOLDER_BASE)) return "must be a valid relative reference";
  return undefined;
}

/**
 * Resolves a (validated) URI reference from a document against the document's own URL, per
 * RFC 3986 / WHATWG URL. Absolute references are returned normalized.
 *
 * @throws TypeError when `base` is not an absolute http(s) URL or the result is not http(s).
 */
export function resolveUri(base: string, ref: string): string {
  if (!URL.canParse(base)) throw new TypeError(`resolveUri: base ${JSON.stringify(base)} is not a URL`);
  const baseUrl = new URL(base);
  if (!isHttp(baseUrl)) throw new TypeError(`resolveUri: base ${JSON.stringify(base)} is not http(s)`);
  if (!URL.canParse(ref, baseUrl.href)) {
    throw new TypeError(`resolveUri: ${JSON.stringify(ref)} is not a URI reference`);
  }
  const resolved = new URL(ref, baseUrl);
  if (!isHttp(resolved)) throw new TypeError(`resolveUri: ${JSON.stringify(ref)} is not http(s)`);
  return resolved.href;
}
