/** The admin ApiKeys service: proto <-> ApiKeysDomain. Secrets appear only in CreateApiKeyResponse. */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type ApiKey,
  ApiKeySchema,
  type ApiKeys,
  BindingSchema,
} from "../../gen/switchboard/admin/v1/api_keys_pb.js";
import { badField } from "../api/errors.js";
import { applyUpdateMask } from "../api/update-mask.js";
import type { ApiKeysDomain } from "./api-keys.js";
import type { ApiKeyWithBindings } from "./api-keys-repository.js";

export function apiKeyToProto(key: ApiKeyWithBindings): ApiKey {
  return create(ApiKeySchema, {
    name: `apiKeys/${key.id}`,
    displayName: key.displayName,
    disabled: key.disabled,
    secretPrefix: key.secretPrefix,
    bindings: key.bindings.map((b) =>
      create(BindingSchema, {
        project: `projects/${b.projectId}`,
        roles: b.roles,
        permissions: b.permissions,
      }),
    ),
    createTime: timestampFromDate(key.createTime),
    updateTime: timestampFromDate(key.updateTime),
  });
}

function keyId(name: string, field: string): string {
  const m = /^apiKeys\/([^/]+)$/.exec(name);
  if (!m) throw badField(field, "must be apiKeys/{api_key}");
  return m[1]!;
}

export function apiKeysService(domain: ApiKeysDomain): ServiceImpl<typeof ApiKeys> {
  return {
    async createApiKey(req) {
      const k = req.apiKey!;
      const { key, secret } = await domain.create(
        k.displayName,
        k.bindings.map((b) => ({ project: b.project, roles: b.roles, permissions: b.permissions })),
        k.disabled,
      );
      return { apiKey: apiKeyToProto(key), secret };
    },
    async getApiKey(req) {
      return apiKeyToProto(await domain.get(keyId(req.name, "name")));
    },
    async listApiKeys(req) {
      const page = await domain.list(req.pageSize, req.pageToken);
      return { apiKeys: page.items.map(apiKeyToProto), nextPageToken: page.nextPageToken };
    },
    async updateApiKey(req) {
      const patch = req.apiKey!;
      const id = keyId(patch.name, "api_key.name");
      const current = apiKeyToProto(await domain.get(id));
      const { resource, applied } = applyUpdateMask({
        schema: ApiKeySchema,
        current,
        patch,
        mask: req.updateMask,
        resourceField: "api_key",
      });
      if (applied.length === 0) return current;
      const top = new Set(applied.map((p) => p.split(".")[0]));
      const changes: Parameters<ApiKeysDomain["update"]>[1] = {};
      if (top.has("display_name")) changes.displayName = resource.displayName;
      if (top.has("disabled")) changes.disabled = resource.disabled;
      if (top.has("bindings")) {
        changes.bindings = resource.bindings.map((b) => ({
          project: b.project,
          roles: b.roles,
          permissions: b.permissions,
        }));
      }
      return apiKeyToProto(await domain.update(id, changes));
    },
    async deleteApiKey(req) {
      await domain.delete(keyId(req.name, "name"));
      return {};
    },
  };
}
