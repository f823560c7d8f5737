/** The CredentialStore authentication reads, on the admin repositories. */
import { ApiKeysRepository } from "../admin/api-keys-repository.js";
import { ProjectsRepository } from "../admin/projects-repository.js";
import type { Db } from "../db/client.js";
import { AccessTokensRepository, type StoredAccessToken } from "../oauth/access-tokens-repository.js";
import type { CredentialStore, StoredKey } from "./interceptor.js";

export class DbCredentialStore implements CredentialStore {
  private readonly keys: ApiKeysRepository;
  private readonly projects: ProjectsRepository;
  private readonly tokens: AccessTokensRepository;

  constructor(db: Db) {
    this.keys = new ApiKeysRepository(db);
    this.projects = new ProjectsRepository(db);
    this.tokens = new AccessTokensRepository(db);
  }

  findApiKey(keyId: string): Promise<StoredKey | undefined> {
    return this.keys.findForAuth(keyId);
  }

  findAccessToken(tokenId: string): Promise<StoredAccessToken | undefined> {
    return this.tokens.findForAuth(tokenId);
  }

  missingProjects(ids: string[]): Promise<string[]> {
    return this.projects.missing(ids);
  }
}
