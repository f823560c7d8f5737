/**
 * Digest credentials of SIP users (RFC 2617 section 3.2.2.2, RFC 8760):
 * `HA1 = H(username ":" realm ":" password)` for MD5 and SHA-256, lowercase
 * hex, computed by the SIP core (src/sip/digest.ts). These are all the
 * service keeps of a user's password; the core's digest check computes
 * `H(HA1 ":" nonce ":" ...)` from them.
 */
import { digestHa1 } from "../../sip/digest.js";

export interface DigestHashes {
  /** The realm the hashes cover. */
  realm: string;
  ha1Md5: string;
  ha1Sha256: string;
}

/** Both hashes of a user's password for `realm`. */
export function digestHashes(username: string, realm: string, password: string): DigestHashes {
  return {
    realm,
    ha1Md5: digestHa1("MD5", username, realm, password),
    ha1Sha256: digestHa1("SHA-256", username, realm, password),
  };
}
