/**
 * SIP messages (RFC 3261 §7): parsing bytes into requests and responses and
 * serializing them back. Header lines are unfolded, compact names (i f t v m
 * l c k s ...) read as their full names, and multi-value headers split on
 * commas outside quotes and <>. The parser is strict: it validates the start
 * line, Via, From, To, Call-ID, CSeq, Max-Forwards and Content-Length (and
 * Contact/Route syntax) and throws only SipParseError. Bodies are framed by
 * Content-Length; on a datagram octets past it are dropped (RFC 3261 §18.3).
 */
import { SipParseError } from "./errors.js";
import {
  type CSeq,
  formatUri,
  isToken,
  type NameAddr,
  parseCSeq,
  parseNameAddr,
  parseUri,
  parseVia,
  type SipUri,
  splitOutsideQuotes,
  type Via,
} from "./uri.js";

/** Messages above this many octets are refused (413 on streams, dropped on UDP). */
export const MAX_MESSAGE_BYTES = 64 * 1024;

const COMPACT: Record<string, string> = {
  i: "Call-ID",
  f: "From",
  t: "To",
  v: "Via",
  m: "Contact",
  l: "Content-Length",
  c: "Content-Type",
  k: "Supported",
  s: "Subject",
  e: "Content-Encoding",
  o: "Event",
  r: "Refer-To",
  u: "Allow-Events",
  x: "Session-Expires",
};

const SPECIAL: Record<string, string> = {
  "call-id": "Call-ID",
  cseq: "CSeq",
  "www-authenticate": "WWW-Authenticate",
  "mime-version": "MIME-Version",
  rack: "RAck",
  rseq: "RSeq",
};

/**
 * Headers whose RFC 3261 grammar (§25.1) makes the whole list optional
 * (`Supported = "Supported" HCOLON [option-tag *(COMMA option-tag)]`):
 * an empty value is legal and means no item (baresip 1.0 sends an empty
 * `Supported:` in its INVITE).
 */
const MAY_BE_EMPTY = new Set(["allow", "supported", "accept-encoding", "accept-language"]);

/** Headers whose values are comma-separated lists (RFC 3261 §7.3.1). */
const MULTI = new Set([
  "via",
  "route",
  "record-route",
  "contact",
  "allow",
  "supported",
  "require",
  "proxy-require",
  "unsupported",
  "accept",
  "accept-encoding",
  "accept-language",
  "content-encoding",
  "allow-events",
  "path",
  "in-reply-to",
  "alert-info",
  "call-info",
  "error-info",
  "warning",
]);

/** Names seen lately and their canonical forms (every message repeats the same few dozen). */
const canonicalNames = new Map<string, string>();
const MAX_CANONICAL_NAMES = 512;

/** The full, conventionally capitalised name of a header (compact forms expanded). */
export function canonicalName(name: string): string {
  const seen = canonicalNames.get(name);
  if (seen !== undefined) return seen;
  const lower = name.toLowerCase();
  const canonical =
    COMPACT[lower] ??
    SPECIAL[lower] ??
    lower.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
  // A peer may send any names: the memory is bounded (emptied when full).
  if (canonicalNames.size >= MAX_CANONICAL_NAMES) canonicalNames.clear();
  canonicalNames.set(name, canonical);
  return canonical;
}

/** An ordered header list; lookups are case-insensitive and compact-form aware. */
export class SipHeaders {
  private readonly list: Array<{ name: string; key: string; value: string }> = [];

  constructor(entries: Iterable<readonly [string, string]> = []) {
    for (const [n, v] of entries) this.add(n, v);
  }

  get(name: string): string | undefined {
    const key = canonicalName(name).toLowerCase();
    return this.list.find((h) => h.key === key)?.value;
  }

  getAll(name: string): string[] {
    const key = canonicalName(name).toLowerCase();
    return this.list.filter((h) => h.key === key).map((h) => h.value);
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  add(name: string, value: string): this {
    const canonical = canonicalName(name);
    this.list.push({ name: canonical, key: canonical.toLowerCase(), value });
    return this;
  }

  /** Adds before every other value of the header (a new top Via). */
  prepend(name: string, value: string): this {
    const canonical = canonicalName(name);
    this.list.unshift({ name: canonical, key: canonical.toLowerCase(), value });
    return this;
  }

  /** Replaces every value of the header with one. */
  set(name: string, value: string): this {
    this.delete(name);
    return this.add(name, value);
  }

  delete(name: string): this {
    const key = canonicalName(name).toLowerCase();
    for (let i = this.list.length - 1; i >= 0; i--) if (this.list[i]!.key === key) this.list.splice(i, 1);
    return this;
  }

  entries(): Array<[string, string]> {
    return this.list.map((h) => [h.name, h.value]);
  }

  clone(): SipHeaders {
    return new SipHeaders(this.entries());
  }
}

interface MessageBase {
  headers: SipHeaders;
  body: Buffer;
}

export interface SipRequest extends MessageBase {
  kind: "request";
  method: string;
  uri: SipUri;
}

export interface SipResponse extends MessageBase {
  kind: "response";
  status: number;
  reason: string;
}

export type SipMessage = SipRequest | SipResponse;

function fail(reason: string, status = 400): never {
  throw new SipParseError(reason, status);
}

/**
 * Parses one message. `datagram`: the bytes are a whole UDP datagram (a
 * missing Content-Length means the rest of it; extra octets are dropped).
 * Otherwise the bytes are one framed stream message and must match exactly.
 */
export function parseMessage(data: Buffer, datagram = true): SipMessage {
  if (data.length > MAX_MESSAGE_BYTES) fail("Message Too Large", 413);
  let start = 0;
  while (data[start] === 0x0d && data[start + 1] === 0x0a) start += 2;
  const headEnd = data.indexOf("\r\n\r\n", start);
  if (headEnd < 0) fail("Missing empty line after headers");
  const head = data.toString("utf8", start, headEnd);
  if (/\r(?!\n)|(?<!\r)\n/.test(head)) fail("Bad line ending in headers");
  const lines = head.split("\r\n");
  const startLine = lines[0] ?? "";
  const isRequest = !startLine.startsWith("SIP/");
  const method = isRequest ? (startLine.split(" ")[0] ?? "") : "";
  const headers = new SipHeaders();
  try {
    readHeaders(lines, headers);
    let body = data.subarray(headEnd + 4);
    const lengths = headers.getAll("Content-Length");
    if (lengths.length > 1) fail("More than one Content-Length");
    const cl = lengths[0];
    if (cl !== undefined) {
      if (!/^\d{1,10}$/.test(cl)) fail("Bad Content-Length");
      const length = Number(cl);
      if (length > body.length) fail("Content-Length larger than body");
      if (length < body.length && !datagram) fail("Content-Length smaller than body");
      body = body.subarray(0, length);
    } else if (!datagram) {
      fail("Missing Content-Length");
    }
    // A request of another SIP version gets 505 whatever its headers (RFC 4475 §3.1.2.16).
    const version = startLine.split(" ");
    if (
      isRequest &&
      version.length === 3 &&
      /^SIP\/\d+\.\d+$/i.test(version[2]!) &&
      version[2]!.toUpperCase() !== "SIP/2.0"
    ) {
      fail("Version Not Supported", 505);
    }
    validateCommonHeaders(headers);
    return isRequest ? parseRequest(startLine, headers, body) : parseResponse(startLine, headers, body);
  } catch (e) {
    // A request whose header lines could be read can still be answered.
    if (e instanceof SipParseError && isRequest && isToken(method)) e.request = { method, headers };
    throw e;
  }
}

/**
 * The method and header lines of a request too broken or too large to parse,
 * read from at most the first 64 KiB without validation, so that it can still
 * be answered (400/413); undefined when that is not possible.
 */
export function readRequestHead(data: Buffer): { method: string; headers: SipHeaders } | undefined {
  const text = data.toString("utf8", 0, Math.min(data.length, MAX_MESSAGE_BYTES));
  const end = text.indexOf("\r\n\r\n");
  const lines = (end < 0 ? text.slice(0, Math.max(0, text.lastIndexOf("\r\n"))) : text.slice(0, end)).split(
    "\r\n",
  );
  const method = (lines[0] ?? "").split(" ")[0] ?? "";
  if (!isToken(method)) return undefined;
  const headers = new SipHeaders();
  try {
    readHeaders(lines, headers);
  } catch {
    return undefined;
  }
  return { method, headers };
}

function readHeaders(lines: string[], headers: SipHeaders): void {
  const unfolded: string[] = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith(" ") || line.startsWith("\t")) {
      if (unfolded.length === 0) fail("Folded line before any header");
      unfolded[unfolded.length - 1] += ` ${line.trim()}`;
    } else unfolded.push(line);
  }
  for (const line of unfolded) {
    const m = /^([^:\s]+)[ \t]*:(.*)$/s.exec(line);
    if (m === null || !isToken(m[1]!)) fail("Bad header line");
    const name = m[1]!;
    const value = m[2]!.trim();
    if (value === "" && MAY_BE_EMPTY.has(canonicalName(name).toLowerCase())) continue;
    if (
      MULTI.has(canonicalName(name).toLowerCase()) &&
      !(name.toLowerCase() === "contact" && value === "*")
    ) {
      for (const v of splitOutsideQuotes(value, ",")) {
        const item = v.trim();
        if (item === "") fail(`Empty value in ${canonicalName(name)}`);
        headers.add(name, item);
      }
    } else headers.add(name, value);
  }
}

function single(headers: SipHeaders, name: string): string {
  const values = headers.getAll(name);
  if (values.length === 0) fail(`Missing ${name}`);
  if (values.length > 1) fail(`More than one ${name}`);
  return values[0]!;
}

function validateCommonHeaders(headers: SipHeaders): void {
  const vias = headers.getAll("Via");
  if (vias.length === 0) fail("Missing Via");
  for (const v of vias) parseVia(v);
  parseNameAddr(single(headers, "From"), "From");
  parseNameAddr(single(headers, "To"), "To");
  if (!/^[!-~]+$/.test(single(headers, "Call-ID"))) fail("Bad Call-ID");
  parseCSeq(single(headers, "CSeq"));
  const mf = headers.getAll("Max-Forwards");
  if (mf.length > 1 || (mf[0] !== undefined && (!/^\d{1,10}$/.test(mf[0]) || Number(mf[0]) > 255))) {
    fail("Bad Max-Forwards");
  }
  for (const c of headers.getAll("Contact")) if (c !== "*") parseNameAddr(c, "Contact");
  for (const r of [...headers.getAll("Route"), ...headers.getAll("Record-Route")]) parseNameAddr(r, "Route");
}

function parseRequest(startLine: string, headers: SipHeaders, body: Buffer): SipRequest {
  const parts = startLine.split(" ");
  if (parts.length !== 3) fail("Bad Request-Line");
  const [method = "", uriText = "", version = ""] = parts;
  if (!isToken(method)) fail("Bad method");
  if (!/^SIP\/\d+\.\d+$/i.test(version)) fail("Bad SIP version");
  if (version.toUpperCase() !== "SIP/2.0") fail("Version Not Supported", 505);
  if (uriText.startsWith("<")) fail("Request-URI in <>");
  const uri = parseUri(uriText, "Request-URI");
  if (uri.headers !== undefined) fail("Headers not allowed in Request-URI");
  return { kind: "request", method, uri, headers, body };
}

function parseResponse(startLine: string, headers: SipHeaders, body: Buffer): SipResponse {
  const m = /^SIP\/2\.0 ([1-6]\d\d) ([^\r\n]*)$/.exec(startLine);
  if (m === null) fail("Bad Status-Line");
  return { kind: "response", status: Number(m[1]), reason: m[2]!, headers, body };
}

function startLineOf(message: SipMessage): string {
  return message.kind === "request"
    ? `${message.method} ${formatUri(message.uri)} SIP/2.0`
    : `SIP/2.0 ${message.status} ${message.reason}`;
}

/**
 * The message's bytes; Content-Length is always written, from the body.
 * `kept`: bytes held for seconds (a transaction's, for retransmissions) get
 * an ArrayBuffer of their own. A small Buffer is a slice of a shared pool,
 * 64 KiB on Node 24, which lives as long as any of its slices: 6,400 accepted
 * INVITEs at 200 calls/s held ~1,200 pools (74 MB) for their 32 s.
 */
export function serialize(message: SipMessage, kept = false): Buffer {
  let head = `${startLineOf(message)}\r\n`;
  for (const [name, value] of message.headers.entries()) {
    if (name !== "Content-Length") head += `${name}: ${value}\r\n`;
  }
  head += `Content-Length: ${message.body.length}\r\n\r\n`;
  if (!kept) return Buffer.concat([Buffer.from(head, "utf8"), message.body]);
  const headBytes = Buffer.byteLength(head, "utf8");
  const bytes = Buffer.allocUnsafeSlow(headBytes + message.body.length);
  bytes.write(head, 0, "utf8");
  message.body.copy(bytes, headBytes);
  return bytes;
}

/** The start line (for logs). */
export function describe(message: SipMessage): string {
  return startLineOf(message);
}

// Typed views of the headers every valid message has (validated when parsed).

export function vias(m: SipMessage): Via[] {
  return m.headers.getAll("Via").map(parseVia);
}

export function topVia(m: SipMessage): Via {
  const v = m.headers.get("Via");
  if (v === undefined) throw new SipParseError("Missing Via");
  return parseVia(v);
}

export function fromOf(m: SipMessage): NameAddr {
  return parseNameAddr(m.headers.get("From") ?? "", "From");
}

export function toOf(m: SipMessage): NameAddr {
  return parseNameAddr(m.headers.get("To") ?? "", "To");
}

export function cseqOf(m: SipMessage): CSeq {
  return parseCSeq(m.headers.get("CSeq") ?? "");
}

export function callIdOf(m: SipMessage): string {
  return m.headers.get("Call-ID") ?? "";
}

export function tagOf(na: NameAddr): string | undefined {
  return na.params.get("tag") ?? undefined;
}

export const REASONS: Record<number, string> = {
  100: "Trying",
  180: "Ringing",
  181: "Call Is Being Forwarded",
  183: "Session Progress",
  200: "OK",
  202: "Accepted",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  407: "Proxy Authentication Required",
  408: "Request Timeout",
  413: "Request Entity Too Large",
  415: "Unsupported Media Type",
  416: "Unsupported URI Scheme",
  420: "Bad Extension",
  480: "Temporarily Unavailable",
  481: "Call/Transaction Does Not Exist",
  482: "Loop Detected",
  483: "Too Many Hops",
  486: "Busy Here",
  487: "Request Terminated",
  488: "Not Acceptable Here",
  491: "Request Pending",
  500: "Server Internal Error",
  501: "Not Implemented",
  503: "Service Unavailable",
  504: "Server Time-out",
  505: "Version Not Supported",
  600: "Busy Everywhere",
  603: "Decline",
};

/**
 * A response to `request` (RFC 3261 §8.2.6): Via, From, To, Call-ID and CSeq
 * copied; `toTag` added to To when it has none (not on 100).
 */
export function createResponse(
  request: { headers: SipHeaders },
  status: number,
  options: { reason?: string; toTag?: string; headers?: Array<[string, string]>; body?: Buffer } = {},
): SipResponse {
  const headers = new SipHeaders();
  for (const v of request.headers.getAll("Via")) headers.add("Via", v);
  for (const name of ["From", "To", "Call-ID", "CSeq"]) {
    const v = request.headers.get(name);
    if (v !== undefined) headers.add(name, v);
  }
  const to = headers.get("To");
  if (options.toTag !== undefined && status !== 100 && to !== undefined && !/;\s*tag\s*=/i.test(to)) {
    headers.set("To", `${to};tag=${options.toTag}`);
  }
  for (const [n, v] of options.headers ?? []) headers.add(n, v);
  return {
    kind: "response",
    status,
    reason: options.reason ?? REASONS[status] ?? "Unknown",
    headers,
    body: options.body ?? Buffer.alloc(0),
  };
}
