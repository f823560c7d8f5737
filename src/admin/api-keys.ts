/**
 * API keys: a secret shown once and stored as a hash, bound to projects
 * with roles and permissions (the rules of bindings: src/admin/bindings.ts).
 * - at least one binding on create;
 * - a disabled or deleted key stops working at once: authentication reads
 *   the key from the database on every request, so every replica agrees.
 */
import { badField, notFound } from "../api/errors.js";
import { newResourceId } from "../api/ids.js";
import { type PageResult, readPage } from "../api/pagination.js";
import { hashSecret, newSecret, secretPrefix } from "../auth/secrets.js";
import type { Clock } from "../clock.js";
import type { ApiKeysRepository, ApiKeyWithBindings } from "./api-keys-repository.js";
import { type Binding, type BindingInput, checkBindings } from "./bindings.js";
import type { ProjectsRepository } from "./projects-repository.js";

export const API_KEY_TYPE = "admin.switchboard/ApiKey";

export type { BindingInput } from "./bindings.js";

export class ApiKeysDomain {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly projects: ProjectsRepository,
    private readonly clock: Clock,
  ) {}

  private bindings(inputs: BindingInput[], field: string): Promise<Binding[]> {
    return checkBindings(inputs, field, this.projects);
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
