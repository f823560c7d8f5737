/**
 * API keys: a secret shown once and stored as a hash, bound to projects
 * with roles and permissions. Rules:
 * - at least one binding on create; at most one binding per project;
 * - every role is one of ROLES, every permission one of ALL_PERMISSIONS,
 *   and a binding grants at least one of them;
 * - every bound project exists;
 * - a disabled or deleted key stops working at once: authentication reads
 *   the key from the database on every request, so every replica agrees.
 */
import { badField, type FieldViolation, invalidArgument, notFound } from "../api/errors.js";
import { newResourceId } from "../api/ids.js";
import { type PageResult, readPage } from "../api/pagination.js";
import { ALL_PERMISSIONS, ROLES } from "../auth/permissions.js";
import { hashSecret, newSecret, secretPrefix } from "../auth/secrets.js";
import type { Clock } from "../clock.js";
import type { ApiKeysRepository, ApiKeyWithBindings, Binding } from "./api-keys-repository.js";
import type { ProjectsRepository } from "./projects-repository.js";

export const API_KEY_TYPE = "admin.switchboard/ApiKey";

export interface BindingInput {
  project: string;
  roles: string[];
  permissions: string[];
}

export class ApiKeysDomain {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly projects: ProjectsRepository,
    private readonly clock: Clock,
  ) {}

  /** Checks bindings and maps them to storage; `field` is their request path. */
  private async bindings(inputs: BindingInput[], field: string): Promise<Binding[]> {
    const violations: FieldViolation[] = [];
    const seen = new Set<string>();
    const out: Binding[] = [];
    inputs.forEach((b, i) => {
      const at = `${field}[${i}]`;
      const m = /^projects\/([^/]+)$/.exec(b.project);
      if (!m) {
        violations.push({ field: `${at}.project`, description: "must be projects/{project}" });
        return;
      }
      const projectId = m[1]!;
      if (seen.has(projectId)) {
        violations.push({
          field: `${at}.project`,
          description: `${b.project} is bound twice; merge the bindings`,
        });
      }
      seen.add(projectId);
      b.roles.forEach((r, j) => {
        if (!(r in ROLES)) {
          violations.push({
            field: `${at}.roles[${j}]`,
            description: `unknown role ${r}; known roles: ${Object.keys(ROLES).join(", ")}`,
          });
        }
      });
      b.permissions.forEach((p, j) => {
        if (!ALL_PERMISSIONS.includes(p)) {
          violations.push({ field: `${at}.permissions[${j}]`, description: `unknown permission ${p}` });
        }
      });
      if (b.roles.length === 0 && b.permissions.length === 0) {
        violations.push({ field: at, description: "a binding needs at least one role or permission" });
      }
      out.push({ projectId, roles: [...new Set(b.roles)], permissions: [...new Set(b.permissions)] });
    });
    if (violations.length === 0) {
      const missing = await this.projects.missing(out.map((b) => b.projectId));
      out.forEach((b, i) => {
        if (missing.includes(b.projectId)) {
          violations.push({
            field: `${field}[${i}].project`,
            description: `projects/${b.projectId} does not exist`,
          });
        }
      });
    }
    if (violations.length > 0) throw invalidArgument(violations);
    return out;
  }

  async create(
    displayName: string,
    bindings: BindingInput[],
    disabled: boolean,
  ): Promise<{ key: ApiKeyWithBindings; secret: string }> {
    if (bindings.length === 0) throw badField("api_key.bindings", "at least one binding is required");
    const checked = await this.bindings(bindings, "api_key.bindings");
    const id = newResourceId();
    const secret = newSecret(id);
    const now = this.clock.now();
    const key = await this.keys.insert(
      {
        id,
        displayName,
        secretHash: hashSecret(secret),
        secretPrefix: secretPrefix(secret),
        disabled,
        createTime: now,
        updateTime: now,
      },
      checked,
    );
    return { key, secret };
  }

  async get(id: string): Promise<ApiKeyWithBindings> {
    const key = await this.keys.get(id);
    if (!key) throw notFound(API_KEY_TYPE, `apiKeys/${id}`);
    return key;
  }

  list(pageSize: number, pageToken: string): Promise<PageResult<ApiKeyWithBindings>> {
    return readPage({ pageSize, pageToken, query: { method: "ListApiKeys" } }, (after, limit) =>
      this.keys.list(after, limit),
    );
  }

  async update(
    id: string,
    changes: { displayName?: string; disabled?: boolean; bindings?: BindingInput[] },
  ): Promise<ApiKeyWithBindings> {
    const out: { displayName?: string; disabled?: boolean; bindings?: Binding[] } = {};
    if (changes.displayName !== undefined) out.displayName = changes.displayName;
    if (changes.disabled !== undefined) out.disabled = changes.disabled;
    if (changes.bindings !== undefined) {
      if (changes.bindings.length === 0)
        throw badField("api_key.bindings", "at least one binding is required");
      out.bindings = await this.bindings(changes.bindings, "api_key.bindings");
    }
    const key = await this.keys.update(id, out, this.clock.now());
    if (!key) throw notFound(API_KEY_TYPE, `apiKeys/${id}`);
    return key;
  }

  async delete(id: string): Promise<void> {
    if (!(await this.keys.delete(id))) throw notFound(API_KEY_TYPE, `apiKeys/${id}`);
  }
}
