/**
 * The SipDomains service: maps proto requests to the domain and domains back
 * to protos. Rules live in domain.ts and validation.ts; protovalidate has already checked each
 * request against its `buf.validate` rules.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type CallRecordingConfig,
  PostProcessing,
  TranscribeOption,
  CallRecordingConfig_CallRecordingTrigger as Trigger,
} from "../../../gen/enfonica/voice/v1beta1/call_recording_config_pb.js";
import {
  type CidrBlock as CidrBlockProto,
  SipDomain_DomainType,
  SipDomain_TerminationMode,
  type SipDomain as SipDomainProto,
  SipDomainSchema,
  type SipDomains,
} from "../../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { parseParent, parseResourceName } from "../../api/names.js";
import { applyUpdateMask, checkUpdateMask } from "../../api/update-mask.js";
import type { SipDomainsDomain } from "./domain.js";
import {
  type CallRecording,
  type CidrBlock,
  COLLECTION,
  type DomainType,
  type SipDomain,
  type SipDomainSettings,
  type TerminationMode,
} from "./model.js";

const MODE_FROM_PROTO: Readonly<Partial<Record<SipDomain_TerminationMode, TerminationMode>>> = {
  [SipDomain_TerminationMode.TERMINATION_MODE_DISABLED]: "TERMINATION_MODE_DISABLED",
  [SipDomain_TerminationMode.PSTN_TRUNK]: "PSTN_TRUNK",
  [SipDomain_TerminationMode.PROGRAMMABLE]: "PROGRAMMABLE",
};

const MODE_TO_PROTO: Readonly<Record<TerminationMode, SipDomain_TerminationMode>> = {
  TERMINATION_MODE_DISABLED: SipDomain_TerminationMode.TERMINATION_MODE_DISABLED,
  PSTN_TRUNK: SipDomain_TerminationMode.PSTN_TRUNK,
  PROGRAMMABLE: SipDomain_TerminationMode.PROGRAMMABLE,
};

const TYPE_FROM_PROTO: Readonly<Partial<Record<SipDomain_DomainType, DomainType>>> = {
  [SipDomain_DomainType.STANDARD]: "STANDARD",
  [SipDomain_DomainType.COLLAB_DIRECT_ROUTING]: "COLLAB_DIRECT_ROUTING",
};

const TYPE_TO_PROTO: Readonly<Record<DomainType, SipDomain_DomainType>> = {
  STANDARD: SipDomain_DomainType.STANDARD,
  COLLAB_DIRECT_ROUTING: SipDomain_DomainType.COLLAB_DIRECT_ROUTING,
};

/** An enum value by its proto name (stored), and back; unknown names read as 0 (UNSPECIFIED). */
function enumName<E extends Record<string | number, string | number>>(e: E, value: number): string {
  const name = e[value];
  return typeof name === "string" ? name : String(e[0]);
}

function enumValue<E extends Record<string | number, string | number>>(e: E, name: string): number {
  const value = e[name];
  return typeof value === "number" ? value : 0;
}

export function recordingFromProto(config: CallRecordingConfig | undefined): CallRecording | undefined {
  if (config === undefined) return undefined;
  return {
    trigger: enumName(Trigger, config.trigger),
    postProcessing: config.postProcessing.map((p) => enumName(PostProcessing, p)),
    recordingReadyUri: config.recordingReadyUri,
    transcribe: enumName(TranscribeOption, config.transcribe),
    transcriptionReadyUri: config.transcriptionReadyUri,
  };
}

export function recordingToProto(recording: CallRecording) {
  return {
    trigger: enumValue(Trigger, recording.trigger),
    postProcessing: recording.postProcessing.map((p) => enumValue(PostProcessing, p)),
    recordingReadyUri: recording.recordingReadyUri,
    transcribe: enumValue(TranscribeOption, recording.transcribe),
    transcriptionReadyUri: recording.transcriptionReadyUri,
  };
}

export function cidrBlocksFromProto(blocks: readonly CidrBlockProto[]): CidrBlock[] {
  return blocks.map((b) => ({ displayName: b.displayName, cidrBlock: b.cidrBlock }));
}

function settingsFromProto(domain: SipDomainProto): SipDomainSettings {
  return {
    displayName: domain.displayName,
    allowRegister: domain.allowRegister,
    callTerminationMode: MODE_FROM_PROTO[domain.callTerminationMode],
    callTerminationHandlerUris: [...domain.callTerminationHandlerUris],
    cidrBlocks: cidrBlocksFromProto(domain.cidrBlocks),
    callRecording: recordingFromProto(domain.callRecording),
    channelLimit: domain.channelLimit,
  };
}

export function sipDomainToProto(domain: SipDomain): SipDomainProto {
  return create(SipDomainSchema, {
    name: domain.name,
    sipDomainId: domain.id,
    displayName: domain.displayName,
    allowRegister: domain.allowRegister,
    callTerminationMode: MODE_TO_PROTO[domain.callTerminationMode],
    callTerminationHandlerUris: [...domain.callTerminationHandlerUris],
    cidrBlocks: domain.cidrBlocks.map((b) => ({ ...b })),
    ...(domain.callRecording === undefined ? {} : { callRecording: recordingToProto(domain.callRecording) }),
    createTime: timestampFromDate(domain.createTime),
    ...(domain.deleteTime === undefined ? {} : { deleteTime: timestampFromDate(domain.deleteTime) }),
    fqdn: domain.fqdn,
    type: TYPE_TO_PROTO[domain.type],
    channelLimit: domain.channelLimit ?? 0,
    ...(domain.collab === undefined
      ? {}
      : { collabDirectRoutingStatus: { verified: domain.collab.verified } }),
    domainOptional: domain.domainOptional,
  });
}

export function sipDomainsService(domain: SipDomainsDomain): ServiceImpl<typeof SipDomains> {
  const ref = (name: string, field: string) => parseResourceName(name, COLLECTION, field);
  return {
    async createSipDomain(req) {
      const sipDomain = req.sipDomain!;
      const created = await domain.create(parseParent(req.parent), req.sipDomainId, {
        ...settingsFromProto(sipDomain),
        // UNSPECIFIED (absent) means STANDARD.
        type: TYPE_FROM_PROTO[sipDomain.type],
      });
      return sipDomainToProto(created);
    },

    async getSipDomain(req) {
      return sipDomainToProto(await domain.get(ref(req.name, "name")));
    },

    async listSipDomains(req) {
      const page = await domain.list(parseParent(req.parent), req.showDeleted, {
        pageSize: req.pageSize,
        pageToken: req.pageToken,
      });
      return { sipDomains: page.items.map(sipDomainToProto), nextPageToken: page.nextPageToken };
    },

    async updateSipDomain(req) {
      const patch = req.sipDomain!;
      const target = ref(patch.name, "sip_domain.name");
      checkUpdateMask(SipDomainSchema, req.updateMask);
      const updated = await domain.update(target, (current) => {
        const { resource, applied } = applyUpdateMask({
          schema: SipDomainSchema,
          current: sipDomainToProto(current),
          patch,
          mask: req.updateMask,
          resourceField: "sip_domain",
        });
        return applied.length === 0 ? undefined : settingsFromProto(resource);
      });
      return sipDomainToProto(updated);
    },

    async deleteSipDomain(req) {
      return sipDomainToProto(await domain.delete(ref(req.name, "name")));
    },

    async verifyCollabDirectRouting(req) {
      return sipDomainToProto(
        await domain.verifyCollabDirectRouting(ref(req.sipDomain, "sip_domain"), req.verificationString),
      );
    },
  };
}
