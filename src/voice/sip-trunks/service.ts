/**
 * The operator's SipTrunks service (admin API): maps proto requests to the
 * domain and trunks back to protos. Rules live in domain.ts; protovalidate
 * has already checked each request. The password is input-only.
 */
import { create } from "@bufbuild/protobuf";
import { EmptySchema, type FieldMask, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  SipTrunk_Transport,
  type SipTrunk as SipTrunkProto,
  SipTrunkSchema,
  type SipTrunks,
} from "../../../gen/switchboard/admin/v1/sip_trunks_pb.js";
import { badField } from "../../api/errors.js";
import { applyUpdateMask, checkUpdateMask } from "../../api/update-mask.js";
import {
  COLLECTION,
  type SipTrunk,
  type SipTrunkSettings,
  type SipTrunksDomain,
  type TrunkTransport,
} from "./domain.js";

const TRANSPORT_FROM_PROTO: Readonly<Record<number, TrunkTransport>> = {
  [SipTrunk_Transport.TRANSPORT_UNSPECIFIED]: "UDP",
  [SipTrunk_Transport.UDP]: "UDP",
  [SipTrunk_Transport.TCP]: "TCP",
  [SipTrunk_Transport.TLS]: "TLS",
};

const TRANSPORT_TO_PROTO: Readonly<Record<TrunkTransport, SipTrunk_Transport>> = {
  UDP: SipTrunk_Transport.UDP,
  TCP: SipTrunk_Transport.TCP,
  TLS: SipTrunk_Transport.TLS,
};

const SEGMENT = /^[^/]+$/;

/** `sipTrunks/{sip_trunk}`; INVALID_ARGUMENT naming `field` otherwise. */
export function parseSipTrunkName(name: string, field: string): string {
  const parts = name.split("/");
  if (parts.length !== 2 || parts[0] !== COLLECTION || !SEGMENT.test(parts[1]!)) {
    throw badField(field, "must be a trunk name of the form sipTrunks/{sip_trunk}", "name.format");
  }
  return parts[1]!;
}

function settingsFromProto(trunk: SipTrunkProto, password: string | undefined): SipTrunkSettings {
  return {
    displayName: trunk.displayName,
    address: trunk.address,
    // protovalidate refuses undefined values; UNSPECIFIED means UDP.
    transport: TRANSPORT_FROM_PROTO[trunk.transport] ?? "UDP",
    username: trunk.username,
    password,
    inboundNetworks: [...trunk.inboundNetworks],
    enabled: trunk.enabled,
    priority: trunk.priority,
  };
}

export function sipTrunkToProto(trunk: SipTrunk): SipTrunkProto {
  return create(SipTrunkSchema, {
    name: trunk.name,
    sipTrunkId: trunk.id,
    displayName: trunk.displayName,
    address: trunk.address,
    transport: TRANSPORT_TO_PROTO[trunk.transport],
    username: trunk.username,
    passwordSet: trunk.passwordSet,
    inboundNetworks: [...trunk.inboundNetworks],
    enabled: trunk.enabled,
    priority: trunk.priority,
    createTime: timestampFromDate(trunk.createTime),
    updateTime: timestampFromDate(trunk.updateTime),
  });
}

/** An update's password: a new one, "" to remove it (named in the mask), undefined to keep it. */
function updatedPassword(password: string, mask: FieldMask | undefined): string | undefined {
  if (password !== "") return password;
  return mask?.paths.includes("password") ? "" : undefined;
}

export function sipTrunksService(domain: SipTrunksDomain): ServiceImpl<typeof SipTrunks> {
  return {
    async createSipTrunk(req) {
      const trunk = req.sipTrunk!;
      return sipTrunkToProto(await domain.create(req.sipTrunkId, settingsFromProto(trunk, trunk.password)));
    },

    async getSipTrunk(req) {
      return sipTrunkToProto(await domain.get(parseSipTrunkName(req.name, "name")));
    },

    async listSipTrunks(req) {
      const page = await domain.list({ pageSize: req.pageSize, pageToken: req.pageToken });
      return { sipTrunks: page.items.map(sipTrunkToProto), nextPageToken: page.nextPageToken };
    },

    async updateSipTrunk(req) {
      const patch = req.sipTrunk!;
      const id = parseSipTrunkName(patch.name, "sip_trunk.name");
      checkUpdateMask(SipTrunkSchema, req.updateMask);
      const updated = await domain.update(id, (current) => {
        const { resource, applied } = applyUpdateMask({
          schema: SipTrunkSchema,
          current: sipTrunkToProto(current),
          patch,
          mask: req.updateMask,
          resourceField: "sip_trunk",
        });
        if (applied.length === 0) return undefined;
        return settingsFromProto(resource, updatedPassword(resource.password, req.updateMask));
      });
      return sipTrunkToProto(updated);
    },

    async deleteSipTrunk(req) {
      await domain.delete(parseSipTrunkName(req.name, "name"));
      return create(EmptySchema);
    },
  };
}
