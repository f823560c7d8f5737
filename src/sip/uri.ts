/**
 * The value grammars of RFC 3261 §25 that the SIP core reads: SIP/SIPS URIs
 * (user, host, port, parameters, headers), other absolute URIs kept opaque,
 * name-addr / addr-spec with header parameters (From, To, Contact, Route),
 * Via (sent-protocol, sent-by, branch/received/rport) and CSeq. Every parser
 * is strict: what does not match the grammar throws SipParseError naming the
 * problem, nothing else.
 */
import { SipParseError } from "./errors.js";

/** A parameter list; a parameter without `=` has the value null. Names are lower-cased. */
export type Params = Map<string, string | null>;

export interface SipUri {
  /** "sip", "sips", or (lower-cased) any other scheme, kept opaque. */
  scheme: string;
  /** The user part still percent-escaped, undefined when absent. */
  user: string | undefined;
  /** Lower-cased host; IPv6 references keep their brackets. Empty for opaque URIs. */
  host: string;
  port: number | undefined;
  params: Params;
  /** The `?` headers, raw. */
  headers: string | undefined;
  /** Everything after "scheme:" for opaque (non-SIP) URIs. */
  opaque: string | undefined;
}

export interface NameAddr {
  displayName: string | undefined;
  uri: SipUri;
  /** Header parameters (tag, expires, q, ...). */
  params: Params;
}

export interface Via {
  /** Upper-cased transport: UDP, TCP, TLS, SCTP, WS, ... */
  transport: string;
  host: string;
  port: number | undefined;
  params: Params;
}

export interface CSeq {
  seq: number;
  method: string;
}

const TOKEN = /^[A-Za-z0-9\-.!%*_+`'~]+$/;
const SCHEME = /^[A-Za-z][A-Za-z0-9+\-.]*$/;
const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$/;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const IPV6 = /^\[[0-9A-Fa-f:.]+\]$/;
/** Characters a user, password, parameter or header may hold (unreserved, escapes, user/param-unreserved). */
const URI_CHARS = /^([A-Za-z0-9\-_.!~*'()&=+$,;?/[\]:]|%[0-9A-Fa-f]{2})*$/;
const PARAM_CHARS = /^([A-Za-z0-9\-_.!~*'()[\]/:&+$]|%[0-9A-Fa-f]{2})+$/;
const MAX_SEQ = 2 ** 31 - 1;
/** quoted-string: quoted-pairs, no bare quote or backslash. */
const QUOTED = /^"([^"\\]|\\.)*"$/s;

function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

export function isToken(s: string): boolean {
  return TOKEN.test(s);
}

export function parseHost(text: string, what: string): string {
  if (IPV6.test(text)) return text.toLowerCase();
  const v4 = IPV4.exec(text);
  if (v4 !== null) {
    if (v4.slice(1).some((o) => Number(o) > 255)) throw new SipParseError(`bad IPv4 address in ${what}`);
    return text;
  }
  if (!HOSTNAME.test(text)) throw new SipParseError(`bad host in ${what}`);
  return text.toLowerCase();
}

export function parsePort(text: string, what: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) throw new SipParseError(`bad port in ${what}`);
  return Number(text);
}

/** host[:port] with the host possibly an IPv6 reference. */
export function parseHostPort(text: string, what: string): { host: string; port: number | undefined } {
  const end = text.startsWith("[") ? text.indexOf("]") + 1 : 0;
  const colon = text.indexOf(":", end);
  if (colon < 0) return { host: parseHost(text, what), port: undefined };
  return { host: parseHost(text.slice(0, colon), what), port: parsePort(text.slice(colon + 1), what) };
}

export function parseUri(text: string, what = "URI"): SipUri {
  const colon = text.indexOf(":");
  const scheme = text.slice(0, colon).toLowerCase();
  if (colon <= 0 || !SCHEME.test(scheme)) throw new SipParseError(`bad scheme in ${what}`);
  const rest = text.slice(colon + 1);
  if (rest === "" || /[\s<>"\\]/.test(rest) || hasControl(rest)) {
    throw new SipParseError(`bad ${what}`);
  }
  if (scheme !== "sip" && scheme !== "sips") {
    return {
      scheme,
      user: undefined,
      host: "",
      port: undefined,
      params: new Map(),
      headers: undefined,
      opaque: rest,
    };
  }
  // The user part may hold "?" and ";" (user-unreserved), never "@"; headers and parameters never hold "@".
  const at = rest.lastIndexOf("@");
  let user: string | undefined;
  if (at >= 0) {
    user = rest.slice(0, at);
    if (user === "" || !URI_CHARS.test(user)) throw new SipParseError(`bad user in ${what}`);
  }
  const afterUser = rest.slice(at + 1);
  const q = afterUser.indexOf("?");
  const main = q < 0 ? afterUser : afterUser.slice(0, q);
  const headers = q < 0 ? undefined : afterUser.slice(q + 1);
  if (headers !== undefined && !URI_CHARS.test(headers)) throw new SipParseError(`bad headers in ${what}`);
  const [hostport = "", ...paramTexts] = main.split(";");
  const { host, port } = parseHostPort(hostport, what);
  const params: Params = new Map();
  for (const p of paramTexts) {
    const eq = p.indexOf("=");
    const name = eq < 0 ? p : p.slice(0, eq);
    const value = eq < 0 ? null : p.slice(eq + 1);
    if (!PARAM_CHARS.test(name) || (value !== null && !PARAM_CHARS.test(value))) {
      throw new SipParseError(`bad parameter in ${what}`);
    }
    params.set(name.toLowerCase(), value);
  }
  return { scheme, user, host, port, params, headers, opaque: undefined };
}

export function formatUri(uri: SipUri): string {
  if (uri.opaque !== undefined) return `${uri.scheme}:${uri.opaque}`;
  let s = `${uri.scheme}:`;
  if (uri.user !== undefined) s += `${uri.user}@`;
  s += uri.host;
  if (uri.port !== undefined) s += `:${uri.port}`;
  s += formatParams(uri.params);
  if (uri.headers !== undefined) s += `?${uri.headers}`;
  return s;
}

export function formatParams(params: Params): string {
  let s = "";
  for (const [k, v] of params) s += v === null ? `;${k}` : `;${k}=${v}`;
  return s;
}

/** `*(SEMI generic-param)` where the text starts at the first ";" (or is blank). */
export function parseParams(text: string, what: string): Params {
  const params: Params = new Map();
  const t = text.trim();
  if (t === "") return params;
  if (!t.startsWith(";")) throw new SipParseError(`unexpected text after ${what}`);
  for (const raw of splitOutsideQuotes(t.slice(1), ";")) {
    const p = raw.trim();
    const eq = p.indexOf("=");
    const name = (eq < 0 ? p : p.slice(0, eq)).trim();
    if (!isToken(name)) throw new SipParseError(`bad parameter in ${what}`);
    if (eq < 0) {
      params.set(name.toLowerCase(), null);
      continue;
    }
    const value = p.slice(eq + 1).trim();
    const quoted = QUOTED.test(value);
    if (!quoted && !isToken(value) && !IPV6.test(value))
      throw new SipParseError(`bad parameter value in ${what}`);
    params.set(name.toLowerCase(), value);
  }
  return params;
}

/** Splits on `sep` outside double quotes and angle brackets. */
export function splitOutsideQuotes(text: string, sep: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  let angle = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === "\\") i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === "<") angle = true;
    else if (c === ">") angle = false;
    else if (c === sep && !angle) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (quoted) throw new SipParseError("unterminated quoted string");
  parts.push(text.slice(start));
  return parts;
}

function unquote(q: string): string {
  return q.slice(1, -1).replace(/\\(.)/g, "$1");
}

export function parseNameAddr(text: string, what: string): NameAddr {
  const value = text.trim();
  const lt = indexOutsideQuotes(value, "<");
  if (lt < 0) {
    // addr-spec form: the URI ends at the first ";" or whitespace, which start header parameters.
    const m = /^[^\s;]+/.exec(value);
    if (m === null) throw new SipParseError(`missing URI in ${what}`);
    if (m[0].includes("?") || m[0].includes(","))
      throw new SipParseError(`URI with headers must be in <> in ${what}`);
    return {
      displayName: undefined,
      uri: parseUri(m[0], what),
      params: parseParams(value.slice(m[0].length), what),
    };
  }
  const gt = value.indexOf(">", lt);
  if (gt < 0) throw new SipParseError(`unterminated <> in ${what}`);
  const display = value.slice(0, lt).trim();
  let displayName: string | undefined;
  if (display.startsWith('"')) {
    if (!QUOTED.test(display)) throw new SipParseError(`bad display name in ${what}`);
    displayName = unquote(display);
  } else if (display !== "") {
    if (!display.split(/[ \t]+/).every(isToken)) throw new SipParseError(`bad display name in ${what}`);
    displayName = display;
  }
  const uri = parseUri(value.slice(lt + 1, gt), what);
  return { displayName, uri, params: parseParams(value.slice(gt + 1), what) };
}

function indexOutsideQuotes(text: string, ch: string): number {
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === "\\") i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ch) return i;
  }
  if (quoted) throw new SipParseError("unterminated quoted string");
  return -1;
}

export function formatNameAddr(na: NameAddr): string {
  const name = na.displayName === undefined ? "" : `"${na.displayName.replace(/(["\\])/g, "\\$1")}" `;
  return `${name}<${formatUri(na.uri)}>${formatParams(na.params)}`;
}

export function parseVia(text: string): Via {
  const m = /^\s*([^\s/]+)\s*\/\s*([^\s/]+)\s*\/\s*([^\s/]+)\s+([^\s;]+)\s*(;.*)?$/s.exec(text);
  if (m === null) throw new SipParseError("bad Via");
  const [, name = "", version = "", transport = "", sentBy = "", params = ""] = m;
  if (name.toUpperCase() !== "SIP" || version !== "2.0" || !isToken(transport))
    throw new SipParseError("bad Via");
  const { host, port } = parseHostPort(sentBy, "Via");
  // Whitespace may surround the ";" and "=" of Via parameters.
  const via: Via = { transport: transport.toUpperCase(), host, port, params: parseParams(params, "Via") };
  const received = via.params.get("received");
  if (
    received === null ||
    (received !== undefined && !IPV4.test(received) && !/^[0-9A-Fa-f:.]+$/.test(received))
  ) {
    throw new SipParseError("bad Via received");
  }
  const rport = via.params.get("rport");
  if (rport !== undefined && rport !== null) parsePort(rport, "Via rport");
  const branch = via.params.get("branch");
  if (branch === null) throw new SipParseError("bad Via branch");
  return via;
}

export function formatVia(via: Via): string {
  const port = via.port === undefined ? "" : `:${via.port}`;
  return `SIP/2.0/${via.transport} ${via.host}${port}${formatParams(via.params)}`;
}

export function parseCSeq(text: string): CSeq {
  const m = /^\s*(\d+)\s+(\S+)\s*$/.exec(text);
  if (m === null || !isToken(m[2] ?? "")) throw new SipParseError("bad CSeq");
  const seq = Number(m[1]);
  if (m[1]!.length > 10 || seq > MAX_SEQ) throw new SipParseError("CSeq number too large");
  return { seq, method: m[2]! };
}

/** The RFC 3261 magic cookie that marks a branch as globally unique. */
export const MAGIC_COOKIE = "z9hG4bK";
