/**
 * The SipDomain resource as the domain layer sees it: its resource type and
 * collection, the domain as the API shows it (`SipDomain`) and the settings
 * users give on create and update. The rules over these live in
 * validation.ts (fields) and domain.ts (the resource's lifecycle).
 */
import type { SipDomainTypeValue, StoredCallRecording, TerminationModeValue } from "../../db/schema/index.js";

export const RESOURCE_TYPE = "voice.api.enfonica.com/SipDomain";
export const COLLECTION = "sipDomains";

/** channel_limit when 0 or unset (collaboration type only). */
export const DEFAULT_CHANNEL_LIMIT = 1;

export type DomainType = SipDomainTypeValue;
export type TerminationMode = TerminationModeValue;
export type CallRecording = StoredCallRecording;

export interface CidrBlock {
  displayName: string;
  cidrBlock: string;
}

export interface CollabVerification {
  /** The verification string last applied; undefined when none was. */
  record: string | undefined;
  recordTime: Date | undefined;
  verified: boolean;
  verifyTime: Date | undefined;
  /** Whether `record` passes the simulated platform's own check. */
  platformCheckPassed: boolean;
}

export interface SipDomain {
  projectId: string;
  id: string;
  name: string;
  fqdn: string;
  displayName: string;
  allowRegister: boolean;
  callTerminationMode: TerminationMode;
  callTerminationHandlerUris: string[];
  cidrBlocks: CidrBlock[];
  callRecording: CallRecording | undefined;
  type: DomainType;
  /** Collaboration type only. */
  channelLimit: number | undefined;
  /** Collaboration type only. */
  collab: CollabVerification | undefined;
  domainOptional: boolean;
  createTime: Date;
  deleteTime: Date | undefined;
}

/** The fields users set (on create, and through updates). */
export interface SipDomainSettings {
  displayName: string;
  allowRegister: boolean;
  /** undefined: TERMINATION_MODE_UNSPECIFIED, stored as TERMINATION_MODE_DISABLED. */
  callTerminationMode: TerminationMode | undefined;
  callTerminationHandlerUris: string[];
  cidrBlocks: CidrBlock[];
  callRecording: CallRecording | undefined;
  /** 0: the default (1). Ignored unless the type is COLLAB_DIRECT_ROUTING. */
  channelLimit: number;
}

export interface NewSipDomain extends SipDomainSettings {
  /** undefined: DOMAIN_TYPE_UNSPECIFIED, which means STANDARD. */
  type: DomainType | undefined;
}
