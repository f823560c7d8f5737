/**
 * The kinds of URI a phone number instance's handler lists accept.
 *
 * - incoming_message_handler_uris: absolute `http://` or `https://` URLs
 *   with a host, as the WHATWG URL parser reads them.
 * - incoming_call_handler_uris: those, plus `sip:user@domain[:port]` (user
 *   as RFC 3261 allows it, domain a host name or an IPv4 or bracketed IPv6
 *   address, port 1 to 65535; no URI parameters or headers) and
 *   `tel:+<E.164>` (a valid number per libphonenumber, no visual separators).
 * - every list: at most 5 URIs (protovalidate checks the same), none blank
 *   and none with whitespace or control characters anywhere (the URL parser
 *   would silently strip them, so the stored value would not be what the
 *   caller meant).
 *
 * Violations name the exact element: `phone_number_instance.incoming_call_handler_uris[2]`.
 */
import type { FieldViolation } from "../../api/errors.js";
import { numberFacts } from "../numbers.js";

export const MAX_HANDLER_URIS = 5;

/** Whitespace or control characters anywhere. */
const UNSAFE = /[\s\p{Cc}]/u;

/** An absolute http(s) URL with a host. */
export function isHttpUrl(uri: string): boolean {
  if (UNSAFE.test(uri) || !/^https?:\/\//i.test(uri)) return false;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return false;
  }
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
}

// RFC 3261: user = 1*( unreserved / escaped / user-unreserved )
const SIP_USER = "(?:[A-Za-z0-9\\-_.!~*'()&=+$,;?/]|%[0-9A-Fa-f]{2})+";
const HOST_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const HOSTNAME = `${HOST_LABEL}(?:\\.${HOST_LABEL})*`;
const IPV6 = "\\[[0-9A-Fa-f:.]+\\]";
const SIP_URI = new RegExp(`^sip:(${SIP_USER})@(${HOSTNAME}|${IPV6})(?::([0-9]{1,5}))?$`, "i");

/** `sip:user@domain[:port]`. */
export function isSipUri(uri: string): boolean {
  const m = SIP_URI.exec(uri);
  if (m === null) return false;
  const host = m[2]!;
  if (host.startsWith("[")) {
    try {
      new URL(`http://${host}/`);
    } catch {
      return false;
    }
  } else if (/^[0-9.]+$/.test(host)) {
    // All digits and dots: it must be a dotted-quad IPv4 address.
    const parts = host.split(".");
    if (parts.length !== 4 || parts.some((p) => p === "" || Number(p) > 255 || /^0[0-9]/.test(p))) {
      return false;
    }
  }
  const port = m[3];
  if (port !== undefined) {
    const n = Number(port);
    if (n < 1 || n > 65535) return false;
  }
  return true;
}

/** `tel:+<E.164>` naming a valid number. */
export function isTelUri(uri: string): boolean {
  if (!/^tel:/i.test(uri)) return false;
  return numberFacts(uri.slice(4)) !== undefined;
}

export type HandlerList = "incoming_message_handler_uris" | "incoming_call_handler_uris";

const KINDS: Record<HandlerList, { accepts: (uri: string) => boolean; description: string }> = {
  incoming_message_handler_uris: {
    accepts: isHttpUrl,
    description: "must be an absolute http:// or https:// URL",
  },
  incoming_call_handler_uris: {
    accepts: (uri) => isHttpUrl(uri) || isSipUri(uri) || isTelUri(uri),
    description:
      "must be an absolute http:// or https:// URL, a sip:user@domain[:port] URI or a tel:+<E.164 number> URI",
  },
};

/** The violations of one handler list; `resourceField` is `phone_number_instance`. */
export function handlerUriViolations(
  list: HandlerList,
  uris: readonly string[],
  resourceField: string,
): FieldViolation[] {
  const field = `${resourceField}.${list}`;
  const violations: FieldViolation[] = [];
  if (uris.length > MAX_HANDLER_URIS) {
    violations.push({ field, description: `at most ${MAX_HANDLER_URIS} URIs`, reason: "repeated.max_items" });
  }
  const kind = KINDS[list];
  uris.forEach((uri, i) => {
    if (uri.trim() === "") {
      violations.push({ field: `${field}[${i}]`, description: "must not be blank", reason: "required" });
    } else if (!kind.accepts(uri)) {
      violations.push({ field: `${field}[${i}]`, description: kind.description, reason: "uri.kind" });
    }
  });
  return violations;
}
