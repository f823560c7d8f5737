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
 * - VerifyCollabDirectRouting applies a verification string
 *   `collab-verification=<token>` (token: 16 to 128 characters of A-Z a-z
 *   0-9 _ -; anything else is INVALID_ARGUMENT: `isCollabVerificationString`).
 *   The simulated platform accepts it at once when the token is
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

/** `collab-verification=<token>`. */
export const COLLAB_VERIFICATION_PREFIX = "collab-verification=";
const COLLAB_VERIFICATION_STRING = /^collab-verification=[A-Za-z0-9_-]{16,128}$/;

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

export function isCollabVerificationString(value: string): boolean {
  return COLLAB_VERIFICATION_STRING.test(value);
}
