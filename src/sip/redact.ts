/**
 * Credentials out of a SIP message before it is kept anywhere (the capture
 * behind GetSipInfo). Works on the raw bytes, so everything else stays
 * byte for byte as it crossed the wire:
 * - `Authorization` / `Proxy-Authorization` (RFC 3261 §22, RFC 8760):
 *   a Digest answer keeps what identifies it (`username`, `realm`, `uri`,
 *   `algorithm`, `qop`, `nc`, `nonce`, `opaque`, `userhash`: the nonce is
 *   in the challenge anyway) and every other parameter (`response`,
 *   `cnonce`, ...) becomes `"REDACTED"`, so the password cannot be guessed
 *   offline from the capture. Any other scheme (Basic, Bearer) keeps its
 *   name only: `Basic REDACTED`.
 * - `Authentication-Info` / `Proxy-Authentication-Info`: `rspauth` and
 *   `cnonce` become `"REDACTED"`.
 * - SDP security descriptions in the body (`a=crypto:... inline:<key>`,
 *   RFC 4568): the key material is overwritten with `X` of the same length,
 *   so Content-Length stays right.
 * Folded header lines are unfolded when redacted. Challenges
 * (`WWW-Authenticate`, `Proxy-Authenticate`) hold no secret and are kept.
 */

const AUTH_HEADERS = /^(authorization|proxy-authorization)$/i;
const INFO_HEADERS = /^(authentication-info|proxy-authentication-info)$/i;

/** Digest parameters kept as they were. */
const KEPT_DIGEST_PARAMS = new Set([
  "username",
  "realm",
  "uri",
  "algorithm",
  "qop",
  "nc",
  "nonce",
  "opaque",
  "userhash",
]);
/** Authentication-Info parameters replaced. */
const SECRET_INFO_PARAMS = new Set(["rspauth", "cnonce"]);

export const REDACTED = "REDACTED";

/** `name=value` parameters separated by commas; quoted values may contain commas and escapes. */
const PARAM = /\s*([A-Za-z0-9_.!%*+`'~-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)\s*(?:,|$)/y;

function redactParams(params: string, secret: (name: string) => boolean): string {
  const out: string[] = [];
  PARAM.lastIndex = 0;
  let at = 0;
  while (at < params.length) {
    PARAM.lastIndex = at;
    const m = PARAM.exec(params);
    if (m === null) {
      // Not name=value: nothing after this point can be trusted to be harmless.
      out.push(REDACTED);
      break;
    }
    const name = m[1]!;
    out.push(secret(name.toLowerCase()) ? `${name}="${REDACTED}"` : `${name}=${m[2]!}`);
    at = PARAM.lastIndex;
  }
  return out.join(", ");
}

/** An Authorization value with its secrets replaced. */
export function redactAuthorization(value: string): string {
  const m = /^\s*(\S+)\s*([\s\S]*)$/.exec(value);
  if (m === null) return value;
  const scheme = m[1]!;
  if (scheme.toLowerCase() !== "digest") return `${scheme} ${REDACTED}`;
  return `${scheme} ${redactParams(m[2]!, (name) => !KEPT_DIGEST_PARAMS.has(name))}`;
}

/** An Authentication-Info value with its secrets replaced. */
export function redactAuthenticationInfo(value: string): string {
  return redactParams(value, (name) => SECRET_INFO_PARAMS.has(name));
}

function redactHead(head: string): string {
  // Header lines, folded continuations joined to their header.
  const lines = head.split("\r\n");
  const out: string[] = [lines[0]!];
  for (let i = 1; i < lines.length; i++) {
    let line = lines[i]!;
    const colon = line.indexOf(":");
    const name = colon < 0 ? "" : line.slice(0, colon).trim();
    const auth = AUTH_HEADERS.test(name);
    const info = !auth && INFO_HEADERS.test(name);
    if (!auth && !info) {
      out.push(line);
      continue;
    }
    while (i + 1 < lines.length && /^[ \t]/.test(lines[i + 1]!)) line += ` ${lines[++i]!.trim()}`;
    const value = line.slice(colon + 1);
    const redacted = auth ? redactAuthorization(value) : redactAuthenticationInfo(value);
    out.push(`${line.slice(0, colon)}: ${redacted}`);
  }
  return out.join("\r\n");
}

/** The SDP body with `inline:` key material overwritten, same length. */
function redactBody(body: string): string {
  return body.replace(
    /^(a=crypto:[^\r\n]*?inline:)([^|\s]+)/gim,
    (_, prefix: string, key: string) => `${prefix}${"X".repeat(key.length)}`,
  );
}

const SECRETS =
  /^(?:authorization|proxy-authorization|authentication-info|proxy-authentication-info)[ \t]*:/im;

/**
 * The message's bytes with credentials replaced; the same Buffer when there
 * is nothing to redact. Bytes are read as latin1, so everything that is not
 * rewritten comes back unchanged.
 */
export function redactSipMessage(data: Buffer): Buffer {
  const text = data.toString("latin1");
  const end = text.indexOf("\r\n\r\n");
  const head = end < 0 ? text : text.slice(0, end);
  const body = end < 0 ? "" : text.slice(end);
  const headSecret = SECRETS.test(head);
  const bodySecret = /inline:/i.test(body);
  if (!headSecret && !bodySecret) return data;
  return Buffer.from(
    (headSecret ? redactHead(head) : head) + (bodySecret ? redactBody(body) : body),
    "latin1",
  );
}
