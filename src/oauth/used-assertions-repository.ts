/**
 * The `oauth_used_assertions` table: the `jti`s of assertions already
 * exchanged (a SHA-256 of the account and the jti), kept until the
 * assertion expires. Claiming is one INSERT on the primary key, so of two
 * replicas (or two requests) presenting the same one only one wins.
 */
import { lt } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { oauthUsedAssertions } from "../db/schema/service-accounts.js";

export class UsedAssertionsRepository {
  constructor(private readonly db: Db) {}

  /** True when `hash` was not used before (and is now); false for a replay. */
  async claim(hash: string, expireTime: Date): Promise<boolean> {
    const rows = await this.db
      .insert(oauthUsedAssertions)
      .values({ assertionHash: hash, expireTime })
      .onConflictDoNothing()
      .returning({ hash: oauthUsedAssertions.assertionHash });
    return rows.length > 0;
  }

  /** Forgets assertions that expired before `now` (they are refused as expired anyway). */
  async deleteExpired(now: Date): Promise<void> {
    await this.db.delete(oauthUsedAssertions).where(lt(oauthUsedAssertions.expireTime, now));
  }
}
