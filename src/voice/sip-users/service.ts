/**
 * The SipUsers service (switchboard.voice.v1): maps proto requests to the
 * domain and users back to protos. Rules live in domain.ts and model.ts;
 * protovalidate has already checked each request against its
 * `buf.validate` rules. The password is input-only: it never appears in a
 * response.
 */
import { create } from "@bufbuild/protobuf";
import { EmptySchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type SipUser as SipUserProto,
  SipUserSchema,
  type SipUsers,
} from "../../../gen/switchboard/voice/v1/sip_users_pb.js";
import { badField } from "../../api/errors.js";
import { applyUpdateMask, checkUpdateMask } from "../../api/update-mask.js";
import { parseDomainName } from "../aliases/service.js";
import type { SipUsersDomain } from "./domain.js";
import { COLLECTION, type SipUser, type SipUserRef, type SipUserSettings } from "./model.js";

const SEGMENT = /^[^/]+$/;
const NAME_FORM =
  "must be a SIP user name of the form projects/{project}/sipDomains/{sip_domain}/users/{user}";

/** `projects/{project}/sipDomains/{sip_domain}/users/{user}`; INVALID_ARGUMENT naming `field` otherwise. */
export function parseSipUserName(name: string, field: string): SipUserRef {
  const parts = name.split("/");
  if (parts.length !== 6 || parts[4] !== COLLECTION || !SEGMENT.test(parts[5]!)) {
    throw badField(field, NAME_FORM, "name.format");
  }
  try {
    return { ...parseDomainName(parts.slice(0, 4).join("/"), field), id: parts[5]! };
  } catch {
    throw badField(field, NAME_FORM, "name.format");
  }
}

function settingsFromProto(user: SipUserProto): SipUserSettings {
  return {
    username: user.username,
    password: user.password,
    displayName: user.displayName,
    disabled: user.disabled,
  };
}

export function sipUserToProto(user: SipUser): SipUserProto {
  return create(SipUserSchema, {
    name: user.name,
    sipUserId: user.id,
    username: user.username,
    displayName: user.displayName,
    disabled: user.disabled,
    realm: user.realm,
    createTime: timestampFromDate(user.createTime),
    updateTime: timestampFromDate(user.updateTime),
  });
}

export function sipUsersService(domain: SipUsersDomain): ServiceImpl<typeof SipUsers> {
  return {
    async createSipUser(req) {
      const created = await domain.create(
        parseDomainName(req.parent, "parent"),
        req.sipUserId,
        settingsFromProto(req.sipUser!),
      );
      return sipUserToProto(created);
    },

    async getSipUser(req) {
      return sipUserToProto(await domain.get(parseSipUserName(req.name, "name")));
    },

    async listSipUsers(req) {
      const page = await domain.list(parseDomainName(req.parent, "parent"), {
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return { sipUsers: page.items.map(sipUserToProto), nextPageToken: page.nextPageToken };
    },

    async updateSipUser(req) {
      const patch = req.sipUser!;
      const target = parseSipUserName(patch.name, "sip_user.name");
      checkUpdateMask(SipUserSchema, req.updateMask);
      const updated = await domain.update(target, (current) => {
        const { resource, applied } = applyUpdateMask({
          schema: SipUserSchema,
          current: sipUserToProto(current),
          patch,
          mask: req.updateMask,
          resourceField: "sip_user",
        });
        return applied.length === 0 ? undefined : settingsFromProto(resource);
      });
      return sipUserToProto(updated);
    },

    async deleteSipUser(req) {
      await domain.delete(parseSipUserName(req.name, "name"));
      return create(EmptySchema);
    },
  };
}
