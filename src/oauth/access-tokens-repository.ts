/** The `oauth_access_tokens` table: issued access tokens, as hashes. */
import { asc, eq, lt } from "drizzle-orm";
import type { Binding } from "../admin/bindings.js";
import type { Db } from "../db/client.js";
import {
  type NewOauthAccessTokenRow,
  oauthAccessTokens,
  serviceAccountBindings,
  serviceAccountKeys,
  serviceAccounts,
} from "../db/schema/service-accounts.js";

/** What authentication needs to accept an access token. */
export interface StoredAccessToken {
  tokenHash: string;
  accountId: string;
  keyId: string;
  services: string[];
  expireTime: Date;
  accountDisabled: boolean;
  keyDisabled: boolean;
  bindings: Binding[];
}

export class AccessTokensRepository {
  constructor(private readonly db: Db) {}

  async insert(row: NewOauthAccessTokenRow): Promise<void> {
    await this.db.insert(oauthAccessTokens).values(row);
  }

  /** Removes tokens that expired before `now`. */
  async deleteExpired(now: Date): Promise<void> {
    await this.db.delete(oauthAccessTokens).where(lt(oauthAccessTokens.expireTime, now));
  }

  /**
   * The token with its account's and key's state and the account's
   * bindings, in one round trip (it runs on every request).
   */
  async findForAuth(id: string): Promise<StoredAccessToken | undefined> {
    const rows = await this.db
      .select({
        tokenHash: oauthAccessTokens.tokenHash,
        accountId: oauthAccessTokens.serviceAccountId,
        keyId: oauthAccessTokens.keyId,
        services: oauthAccessTokens.services,
        expireTime: oauthAccessTokens.expireTime,
        accountDisabled: serviceAccounts.disabled,
        keyDisabled: serviceAccountKeys.disabled,
        projectId: serviceAccountBindings.projectId,
        roles: serviceAccountBindings.roles,
        permissions: serviceAccountBindings.permissions,
      })
      .from(oauthAccessTokens)
      .innerJoin(serviceAccounts, eq(serviceAccounts.id, oauthAccessTokens.serviceAccountId))
      .innerJoin(serviceAccountKeys, eq(serviceAccountKeys.id, oauthAccessTokens.keyId))
      .leftJoin(serviceAccountBindings, eq(serviceAccountBindings.serviceAccountId, serviceAccounts.id))
      .where(eq(oauthAccessTokens.id, id))
      .orderBy(asc(serviceAccountBindings.position));
    const first = rows[0];
    if (first === undefined) return undefined;
    const bindings: Binding[] = [];
    for (const r of rows) {
      if (r.projectId !== null) {
        bindings.push({ projectId: r.projectId, roles: r.roles ?? [], permissions: r.permissions ?? [] });
      }
    }
    return {
      tokenHash: first.tokenHash,
      accountId: first.accountId,
      keyId: first.keyId,
      services: first.services,
      expireTime: first.expireTime,
      accountDisabled: first.accountDisabled,
      keyDisabled: first.keyDisabled,
      bindings,
    };
  }
}
