/**
 * How trunk passwords are stored. The service answers a trunk's digest
 * challenges with the password itself, so it cannot keep a hash: the
 * password is stored reversibly.
 *
 * - With SIP_CREDENTIALS_KEY set (at least 16 characters), passwords are
 *   sealed with AES-256-GCM under SHA-256 of that key:
 *   `aes256gcm:<iv>:<tag>:<ciphertext>` (base64url). A database dump then
 *   holds no usable password without the key.
 * - Without it, passwords are stored as given (`plain:<password>`): anyone
 *   who can read the database can read them. The docs say so.
 * - A sealed password can only be opened with the key it was sealed with:
 *   changing or removing SIP_CREDENTIALS_KEY makes stored passwords
 *   unreadable (`SecretBoxError`) until each trunk's password is set again.
 *   Plain passwords stay readable after a key is set, and are sealed the
 *   next time they are set.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

const SEALED = "aes256gcm:";
const PLAIN = "plain:";

export class SecretBoxError extends Error {
  override name = "SecretBoxError";
}

export class SecretBox {
  private readonly key: Buffer | undefined;

  /** `secret`: SIP_CREDENTIALS_KEY, or undefined to store passwords as given. */
  constructor(secret: string | undefined) {
    this.key = secret === undefined ? undefined : createHash("sha256").update(secret, "utf8").digest();
  }

  /** Whether passwords are encrypted. */
  get encrypts(): boolean {
    return this.key !== undefined;
  }

  seal(plaintext: string): string {
    if (this.key === undefined) return `${PLAIN}${plaintext}`;
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    const tag = cipher.getAuthTag();
    return `${SEALED}${iv.toString("base64url")}:${tag.toString("base64url")}:${body.toString("base64url")}`;
  }

  open(stored: string): string {
    if (stored.startsWith(PLAIN)) return stored.slice(PLAIN.length);
    if (!stored.startsWith(SEALED)) throw new SecretBoxError("not a stored secret");
    if (this.key === undefined) {
      throw new SecretBoxError("the trunk password is encrypted: SIP_CREDENTIALS_KEY is needed to read it");
    }
    const [iv, tag, body] = stored.slice(SEALED.length).split(":");
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(iv ?? "", "base64url"));
      decipher.setAuthTag(Buffer.from(tag ?? "", "base64url"));
      return Buffer.concat([
        decipher.update(Buffer.from(body ?? "", "base64url")),
        decipher.final(),
      ]).toString("utf8");
    } catch {
      throw new SecretBoxError(
        "the trunk password was encrypted with another SIP_CREDENTIALS_KEY: set the trunk's password again",
      );
    }
  }
}
