/**
 * The Aliases service: maps proto requests to the domain and aliases back to
 * protos. Rules live in domain.ts; protovalidate has already checked each
 * request against its `buf.validate` rules.
 */
import { create } from "@bufbuild/protobuf";
import { EmptySchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type Aliases,
  type Alias as AliasProto,
  AliasSchema,
} from "../../../gen/enfonica/voice/v1beta1/aliases_pb.js";
import { badField } from "../../api/errors.js";
import { applyUpdateMask, checkUpdateMask } from "../../api/update-mask.js";
import { COLLECTION as SIP_DOMAINS } from "../sip-domains/model.js";
import {
  type Alias,
  type AliasesDomain,
  type AliasRef,
  type AliasSettings,
  COLLECTION,
  type DomainRef,
} from "./domain.js";

const SEGMENT = /^[^/]+$/;

/** `projects/{project}/sipDomains/{sip_domain}`; INVALID_ARGUMENT naming `field` otherwise. */
export function parseDomainName(name: string, field: string): DomainRef {
  const parts = name.split("/");
  if (
    parts.length !== 4 ||
    parts[0] !== "projects" ||
    parts[2] !== SIP_DOMAINS ||
    !SEGMENT.test(parts[1]!) ||
    !SEGMENT.test(parts[3]!)
  ) {
    throw badField(
      field,
      "must be a SIP domain name of the form projects/{project}/sipDomains/{sip_domain}",
      "name.format",
    );
  }
  return { projectId: parts[1]!, sipDomainId: parts[3]! };
}

/** `projects/{project}/sipDomains/{sip_domain}/aliases/{alias}`; INVALID_ARGUMENT naming `field` otherwise. */
export function parseAliasName(name: string, field: string): AliasRef {
  const parts = name.split("/");
  if (parts.length !== 6 || parts[4] !== COLLECTION || !SEGMENT.test(parts[5]!)) {
    throw badField(
      field,
      "must be an alias name of the form projects/{project}/sipDomains/{sip_domain}/aliases/{alias}",
      "name.format",
    );
  }
  let domain: DomainRef;
  try {
    domain = parseDomainName(parts.slice(0, 4).join("/"), field);
  } catch {
    throw badField(
      field,
      "must be an alias name of the form projects/{project}/sipDomains/{sip_domain}/aliases/{alias}",
      "name.format",
    );
  }
  return { ...domain, id: parts[5]! };
}

function settingsFromProto(alias: AliasProto): AliasSettings {
  const lb = alias.config.case === "loadBalancerConfig" ? alias.config.value : undefined;
  return {
    displayName: alias.displayName,
    loadBalancer:
      lb === undefined
        ? undefined
        : {
            endpoints: lb.endpoints.map((e) => ({
              uri: e.uri,
              priority: e.priority,
              weight: e.weight,
              enabled: e.enabled,
            })),
            failoverCallHandlerUris: [...lb.failoverCallHandlerUris],
          },
  };
}

export function aliasToProto(alias: Alias): AliasProto {
  const lb = alias.loadBalancer;
  return create(AliasSchema, {
    name: alias.name,
    aliasId: alias.id,
    displayName: alias.displayName,
    config:
      lb === undefined
        ? { case: undefined }
        : {
            case: "loadBalancerConfig",
            value: {
              endpoints: lb.endpoints.map((e) => ({ ...e })),
              failoverCallHandlerUris: [...lb.failoverCallHandlerUris],
            },
          },
    createTime: timestampFromDate(alias.createTime),
  });
}

export function aliasesService(domain: AliasesDomain): ServiceImpl<typeof Aliases> {
  return {
    async createAlias(req) {
      const created = await domain.create(
        parseDomainName(req.parent, "parent"),
        req.aliasId,
        settingsFromProto(req.alias!),
      );
      return aliasToProto(created);
    },

    async getAlias(req) {
      return aliasToProto(await domain.get(parseAliasName(req.name, "name")));
    },

    async listAliases(req) {
      const page = await domain.list(parseDomainName(req.parent, "parent"), {
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return { aliases: page.items.map(aliasToProto), nextPageToken: page.nextPageToken };
    },

    async updateAlias(req) {
      const patch = req.alias!;
      const target = parseAliasName(patch.name, "alias.name");
      checkUpdateMask(AliasSchema, req.updateMask);
      const updated = await domain.update(target, (current) => {
        const { resource, applied } = applyUpdateMask({
          schema: AliasSchema,
          current: aliasToProto(current),
          patch,
          mask: req.updateMask,
          resourceField: "alias",
        });
        return applied.length === 0 ? undefined : settingsFromProto(resource);
      });
      return aliasToProto(updated);
    },

    async deleteAlias(req) {
      await domain.delete(parseAliasName(req.name, "name"));
      return create(EmptySchema);
    },
  };
}
