/**
 * The operator's SipDomainAdmin service (admin API): domain-optional mode
 * and the simulated collaboration platform's verification hook. Rules live
 * in domain.ts (the check itself: collab.ts).
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type CollabVerification,
  CollabVerificationSchema,
  type SipDomainAdmin,
} from "../../../gen/switchboard/admin/v1/sip_domains_pb.js";
import { parseResourceName } from "../../api/names.js";
import type { SipDomainsDomain } from "./domain.js";
import { COLLECTION, type SipDomain } from "./model.js";
import { cidrBlocksFromProto, sipDomainToProto } from "./service.js";

function verificationToProto(domain: SipDomain): CollabVerification {
  const v = domain.collab!;
  return create(CollabVerificationSchema, {
    sipDomain: domain.name,
    verificationRecord: v.record ?? "",
    ...(v.recordTime === undefined ? {} : { recordTime: timestampFromDate(v.recordTime) }),
    verified: v.verified,
    ...(v.verifyTime === undefined ? {} : { verifyTime: timestampFromDate(v.verifyTime) }),
    platformCheckPassed: v.platformCheckPassed,
  });
}

export function sipDomainAdminService(domain: SipDomainsDomain): ServiceImpl<typeof SipDomainAdmin> {
  const ref = (name: string) => parseResourceName(name, COLLECTION, "name");
  return {
    async setDomainOptional(req) {
      return sipDomainToProto(
        await domain.setDomainOptional(
          ref(req.name),
          req.domainOptional,
          cidrBlocksFromProto(req.cidrBlocks),
        ),
      );
    },

    async getCollabVerification(req) {
      return verificationToProto(await domain.getCollabVerification(ref(req.name)));
    },

    async acceptCollabVerification(req) {
      return verificationToProto(await domain.acceptCollabVerification(ref(req.name)));
    },
  };
}
