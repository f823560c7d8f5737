/** The CredentialStore authentication reads, on the admin repositories. */
import { ApiKeysRepository } from "../admin/api-keys-repository.js";
import { ProjectsRepository } from "../admin/projects-repository.js";
import type { Db } from "../db/client.js";
import type { CredentialStore, StoredKey } from "./interceptor.js";

export class DbCredentialStore implements CredentialStore {
  private readonly keys: ApiKeysRepository;
  private readonly projects: ProjectsRepository;

  constructor(db: Db) {
    this.keys = new ApiKeysRepository(db);
    this.projects = new ProjectsRepository(db);
  }

  findApiKey(keyId: string): Promise<StoredKey | undefined> {
    return this.keys.findForAuth(keyId);
  }

  missingProjects(ids: string[]): Promise<string[]> {
    return this.projects.missing(ids);
  }
}
