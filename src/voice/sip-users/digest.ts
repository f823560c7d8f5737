/**
 * Digest credentials of SIP users (RFC 2617 section 3.2.2.2, RFC 8760):
 * `HA1 = H(username ":" realm ":" password)` for MD5 and SHA-256, lowercase
 * hex. These are all the service keeps of a user's password; the SIP core's
 * digest check computes `H(HA1 ":" nonce ":" ...)` from them.
 */
import { createHash } from "node:crypto";

export type DigestAlgorithm = "MD5" | "SHA-256";

export interface DigestHashes {
  /** The realm the hashes cover. */
  realm: string;
  ha1Md5: string;
  ha1Sha256: string;
}

/** `H(username:realm:password)` in lowercase hex; the strings are hashed as UTF-8. */
export function digestHa1(
  algorithm: DigestAlgorithm,
  username: string,
  realm: string,
  password: string,
): string {
  return createHash(algorithm === "MD5" ? "md5" : "sha256")
    .update(`${username}:${realm}:${password}`, "utf8")
    .digest("hex");
}

/** Both hashes of a user's password for `realm`. */
export function digestHashes(username: string, realm: string, password: string): DigestHashes {
  return {
    realm,
    ha1Md5: digestHa1("MD5", username, realm, password),
    ha1Sha256: digestHa1("SHA-256", username, realm, password),
  };
}
