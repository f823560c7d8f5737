/**
 * The admin ServiceAccounts service: proto <-> ServiceAccountsDomain. Private
 * keys appear only in CreateServiceAccountKeyResponse.key_file.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type ServiceAccount,
  type ServiceAccountKey,
  ServiceAccountKeySchema,
  ServiceAccountSchema,
  type ServiceAccounts,
} from "../../gen/switchboard/admin/v1/service_accounts_pb.js";
import { badField } from "../api/errors.js";
import { applyUpdateMask } from "../api/update-mask.js";
import type { ServiceAccountKeyRow } from "../db/schema/service-accounts.js";
import { bindingFromProto, bindingToProto } from "./bindings.js";
import { type ServiceAccountsDomain, serviceAccountEmail } from "./service-accounts.js";
import type { ServiceAccountWithBindings } from "./service-accounts-repository.js";

export function serviceAccountToProto(a: ServiceAccountWithBindings): ServiceAccount {
  return create(ServiceAccountSchema, {
    name: `serviceAccounts/${a.id}`,
    displayName: a.displayName,
    email: serviceAccountEmail(a.id),
    bindings: a.bindings.map(bindingToProto),
    disabled: a.disabled,
    createTime: timestampFromDate(a.createTime),
    updateTime: timestampFromDate(a.updateTime),
  });
}

export function serviceAccountKeyToProto(k: ServiceAccountKeyRow): ServiceAccountKey {
  return create(ServiceAccountKeySchema, {
    name: `serviceAccounts/${k.serviceAccountId}/keys/${k.id}`,
    keyAlgorithm: "RSA_2048",
    publicKey: k.publicKey,
    disabled: k.disabled,
    createTime: timestampFromDate(k.createTime),
    updateTime: timestampFromDate(k.updateTime),
  });
}

function accountId(name: string, field: string): string {
  const m = /^serviceAccounts\/([^/]+)$/.exec(name);
  if (!m) throw badField(field, "must be serviceAccounts/{service_account}");
  return m[1]!;
}

function keyName(name: string, field: string): { account: string; key: string } {
  const m = /^serviceAccounts\/([^/]+)\/keys\/([^/]+)$/.exec(name);
  if (!m) throw badField(field, "must be serviceAccounts/{service_account}/keys/{key}");
  return { account: m[1]!, key: m[2]! };
}

export function serviceAccountsService(domain: ServiceAccountsDomain): ServiceImpl<typeof ServiceAccounts> {
  return {
    async createServiceAccount(req) {
      const a = req.serviceAccount!;
      return serviceAccountToProto(
        await domain.create(
          req.serviceAccountId,
          a.displayName,
          a.bindings.map(bindingFromProto),
          a.disabled,
        ),
      );
    },
    async getServiceAccount(req) {
      return serviceAccountToProto(await domain.get(accountId(req.name, "name")));
    },
    async listServiceAccounts(req) {
      const page = await domain.list(req.pageSize, req.pageToken);
      return { serviceAccounts: page.items.map(serviceAccountToProto), nextPageToken: page.nextPageToken };
    },
    async updateServiceAccount(req) {
      const patch = req.serviceAccount!;
      const id = accountId(patch.name, "service_account.name");
      const current = serviceAccountToProto(await domain.get(id));
      const { resource, applied } = applyUpdateMask({
        schema: ServiceAccountSchema,
        current,
        patch,
        mask: req.updateMask,
        resourceField: "service_account",
      });
      if (applied.length === 0) return current;
      const top = new Set(applied.map((p) => p.split(".")[0]));
      const changes: Parameters<ServiceAccountsDomain["update"]>[1] = {};
      if (top.has("display_name")) changes.displayName = resource.displayName;
      if (top.has("disabled")) changes.disabled = resource.disabled;
      if (top.has("bindings")) changes.bindings = resource.bindings.map(bindingFromProto);
      return serviceAccountToProto(await domain.update(id, changes));
    },
    async deleteServiceAccount(req) {
      await domain.delete(accountId(req.name, "name"));
      return {};
    },
    async createServiceAccountKey(req) {
      const { key, keyFile } = await domain.createKey(accountId(req.parent, "parent"));
      return { key: serviceAccountKeyToProto(key), keyFile: `${JSON.stringify(keyFile, null, 2)}\n` };
    },
    async getServiceAccountKey(req) {
      const { account, key } = keyName(req.name, "name");
      return serviceAccountKeyToProto(await domain.getKey(account, key));
    },
    async listServiceAccountKeys(req) {
      const page = await domain.listKeys(accountId(req.parent, "parent"), req.pageSize, req.pageToken);
      return { keys: page.items.map(serviceAccountKeyToProto), nextPageToken: page.nextPageToken };
    },
    async updateServiceAccountKey(req) {
      const patch = req.serviceAccountKey!;
      const { account, key } = keyName(patch.name, "service_account_key.name");
      const current = serviceAccountKeyToProto(await domain.getKey(account, key));
      const { resource, applied } = applyUpdateMask({
        schema: ServiceAccountKeySchema,
        current,
        patch,
        mask: req.updateMask,
        resourceField: "service_account_key",
      });
      if (!applied.some((p) => p === "disabled")) return current;
      return serviceAccountKeyToProto(await domain.setKeyDisabled(account, key, resource.disabled));
    },
    async deleteServiceAccountKey(req) {
      const { account, key } = keyName(req.name, "name");
      await domain.deleteKey(account, key);
      return {};
    },
  };
}
