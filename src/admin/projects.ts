/**
 * Projects: created by the operator; each has a webhook signing key of 64
 * random bytes (base64), rotatable. Deleting a project deletes everything in
 * it (foreign keys cascade) and its API key bindings.
 */
import { randomBytes } from "node:crypto";
import { alreadyExists, notFound } from "../api/errors.js";
import { type PageResult, readPage } from "../api/pagination.js";
import type { Clock } from "../clock.js";
import type { ProjectRow } from "../db/schema/admin.js";
import type { ProjectsRepository } from "./projects-repository.js";

export const PROJECT_TYPE = "admin.switchboard/Project";

export function newSigningKey(): string {
  return randomBytes(64).toString("base64");
}

export class ProjectsDomain {
  constructor(
    private readonly repo: ProjectsRepository,
    private readonly clock: Clock,
  ) {}

  async create(id: string, displayName: string): Promise<ProjectRow> {
    const now = this.clock.now();
    const row = await this.repo.insert({
      id,
      displayName,
      signingKey: newSigningKey(),
      signingKeyCreateTime: now,
      createTime: now,
    });
    if (!row) throw alreadyExists(PROJECT_TYPE, `projects/${id}`, `projects/${id} already exists`);
    return row;
  }

  async get(id: string): Promise<ProjectRow> {
    const row = await this.repo.get(id);
    if (!row) throw notFound(PROJECT_TYPE, `projects/${id}`);
    return row;
  }

  list(pageSize: number, pageToken: string): Promise<PageResult<ProjectRow>> {
    return readPage({ pageSize, pageToken, query: { method: "ListProjects" } }, (after, limit) =>
      this.repo.list(after, limit),
    );
  }

  async delete(id: string): Promise<ProjectRow> {
    const row = await this.repo.delete(id);
    if (!row) throw notFound(PROJECT_TYPE, `projects/${id}`);
    return row;
  }

  async rotateSigningKey(id: string): Promise<ProjectRow> {
    const row = await this.repo.setSigningKey(id, newSigningKey(), this.clock.now());
    if (!row) throw notFound(PROJECT_TYPE, `projects/${id}`);
    return row;
  }
}
