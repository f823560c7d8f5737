/**
 * The collaboration platform of DOMAIN_TYPE_COLLAB_DIRECT_ROUTING domains,
 * as far as the domain layer needs it: the names of what the service creates
 * for such a domain, and the simulated platform's verification check.
 *
 * - an alias `collab-proxies` (COLLAB_ALIAS_ID) is created with every such
 *   domain: a load balancer over the platform's SIP proxies
 *   (COLLAB_SIP_PROXIES), read-only.
 * - the domain's cidr_blocks, the platform's signalling networks
 *   (COLLAB_SIGNALLING_NETWORKS), are shown named COLLAB_BLOCK_DISPLAY_NAME.
 * - VerifyCollabDirectRouting applies the verification string the
 *   platform's tenant issued, in whatever form the platform uses (a DNS TXT
 *   value such as `MS=ms12345678`, or the simulated platform's
 *   `collab-verification=<token>`): anything that can be one DNS TXT
 *   character-string is recorded (`collabVerificationStringProblem` refuses
 *   the rest). The simulated platform accepts it at once when the token is
 *   base64url(HMAC-SHA256(COLLAB_VERIFICATION_SECRET, fqdn)) (no padding)
 *   — see `collabVerificationString` and `platformAccepts` — and otherwise
 *   when the operator accepts it (domain.ts).
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** The id of the load balancer alias of every collaboration domain. */
export const COLLAB_ALIAS_ID = "collab-proxies";
export const COLLAB_ALIAS_DISPLAY_NAME = "Collaboration platform SIP proxies";
/** The display name of the blocks of a collaboration domain. */
export const COLLAB_BLOCK_DISPLAY_NAME = "Collaboration platform signalling";

/** The simulated platform's form: `collab-verification=<token>`. */
export const COLLAB_VERIFICATION_PREFIX = "collab-verification=";
/** A DNS TXT record's character-string holds at most 255 octets (RFC 1035 3.3). */
export const TXT_STRING_MAX_BYTES = 255;

/**
 * The verification string the simulated platform issues for (and accepts
 * from) the domain at `fqdn`: `collab-verification=` followed by
 * base64url(HMAC-SHA256(secret, fqdn)) without padding (43 characters).
 */
export function collabVerificationString(fqdn: string, secret: string): string {
  return `${COLLAB_VERIFICATION_PREFIX}${createHmac("sha256", secret).update(fqdn, "utf8").digest("base64url")}`;
}

/** Whether the simulated platform's own check accepts `record` for the domain at `fqdn`. */
export function platformAccepts(fqdn: string, record: string, secret: string): boolean {
  const expected = Buffer.from(collabVerificationString(fqdn, secret), "utf8");
  const actual = Buffer.from(record, "utf8");
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/**
 * Why `value` cannot be a verification string, or undefined when it can:
 * platforms issue their own forms (`MS=ms12345678`, `collab-verification=…`,
 * vendor prefixes), all published as a DNS TXT value, so what one TXT
 * character-string can hold is accepted and only the rest refused: nothing,
 * more than 255 octets of UTF-8, or control characters (a TXT value carries
 * them only escaped, and no tenant issues them).
 */
export function collabVerificationStringProblem(value: string): string | undefined {
  if (value === "") return "is required: the verification string the collaboration platform's tenant issued";
  if (Buffer.byteLength(value, "utf8") > TXT_STRING_MAX_BYTES) {
    return `must fit in one DNS TXT character-string: at most ${TXT_STRING_MAX_BYTES} bytes of UTF-8`;
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  if (/[\u0000-\u001f\u007f]/.test(value)) {
    return "must not contain control characters: it is published as a DNS TXT value";
  }
  return undefined;
}
