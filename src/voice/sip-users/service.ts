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
import { parseSipDomainChildName, parseSipDomainName } from "../../api/names.js";
import { applyUpdateMask, checkUpdateMask } from "../../api/update-mask.js";
import type { SipUsersDomain } from "./domain.js";
import { COLLECTION, type SipUser, type SipUserRef, type SipUserSettings } from "./model.js";

/** `projects/{project}/sipDomains/{sip_domain}/users/{user}`; INVALID_ARGUMENT naming `field` otherwise. */
export function parseSipUserName(name: string, field: string): SipUserRef {
  return parseSipDomainChildName(name, COLLECTION, "user", field);
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
        parseSipDomainName(req.parent, "parent"),
        req.sipUserId,
        settingsFromProto(req.sipUser!),
      );
      return sipUserToProto(created);
    },

    async getSipUser(req) {
      return sipUserToProto(await domain.get(parseSipUserName(req.name, "name")));
    },

    async listSipUsers(req) {
      const page = await domain.list(parseSipDomainName(req.parent, "parent"), {
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
