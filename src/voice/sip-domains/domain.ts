/**
 * SIP domains: SIP trunks and programmable call termination of a project,
 * reachable at `<sip_domain_id>.<SIP_BASE_DOMAIN>`. The rules of the
 * interface document live here; the services only map proto <-> these types.
 *
 * Rules (violations are INVALID_ARGUMENT naming the proto field path):
 * - sip_domain_id: chosen by the client on create, `^[a-z0-9][a-z0-9-]{0,28}[a-z0-9]$`.
 *   Unique across all projects and never reissued: every id ever created
 *   stays taken, after the domain is deleted and even after its project is
 *   deleted (`sip_domain_ids`, see src/db/schema/voice.ts), so an FQDN once
 *   used can never reach someone else's domain. A taken id is ALREADY_EXISTS,
 *   also under concurrent creates (a primary key decides).
 * - display_name, cidr_blocks[].display_name: at most 100 characters.
 * - call_termination_handler_uris: at most 5 absolute http or https URIs;
 *   at least one when call_termination_mode is PROGRAMMABLE (checked on the
 *   resulting domain, so an update cannot leave a PROGRAMMABLE domain
 *   without one). Kept whatever the mode.
 * - call_termination_mode: TERMINATION_MODE_UNSPECIFIED is stored, and
 *   shown, as TERMINATION_MODE_DISABLED (fail closed).
 * - cidr_blocks: at most 100 IPv4 blocks in canonical CIDR notation with
 *   their host bits zero. A block with host bits set (`10.0.0.1/24`) is
 *   refused with a hint naming the network (`10.0.0.0/24`) rather than
 *   silently normalised: the caller may have meant a single address, and the
 *   value read back is always the value written. Overlaps inside one domain
 *   are harmless and allowed.
 * - call_recording: recording_ready_uri and transcription_ready_uri are
 *   absolute http or https URIs when set.
 * - type: settable on create only (UNSPECIFIED means STANDARD); changing it
 *   is INVALID_ARGUMENT (the update mask's immutable-field rule).
 * - channel_limit: 1 to 100; 0 or unset means 1. Kept only for the
 *   collaboration type; ignored (and shown as 0) for the others.
 * - delete is a soft delete: delete_time is set and the domain is returned.
 *   A deleted domain accepts no calls and no changes: update, delete,
 *   verification and alias changes are FAILED_PRECONDITION
 *   `SIP_DOMAIN_DELETED`. It can still be read, and is listed with
 *   show_deleted.
 *
 * Domain-optional mode (`domain_optional`): only the operator changes it
 * (SetDomainOptional in the admin API), together with the domain's blocks.
 * While it is true, users cannot change cidr_blocks (FAILED_PRECONDITION
 * `CIDR_BLOCKS_MANAGED_BY_OPERATOR`; sending the current blocks unchanged is
 * fine), and calls naming no domain are matched to it by source network.
 * That match is unambiguous because the blocks of live domain-optional
 * domains never overlap across domains: SetDomainOptional refuses an overlap
 * (FAILED_PRECONDITION `CIDR_BLOCKS_OVERLAP`, naming both domains), under a
 * transaction-level advisory lock so two concurrent changes cannot both
 * pass. Turning it on needs at least one block.
 *
 * DOMAIN_TYPE_COLLAB_DIRECT_ROUTING (a third-party collaboration platform's
 * direct routing):
 * - cidr_blocks are the platform's signalling networks
 *   (COLLAB_SIGNALLING_NETWORKS), read from configuration on every read, so
 *   a change of the platform's ranges reaches every such domain. Setting
 *   them on create is INVALID_ARGUMENT; changing them is FAILED_PRECONDITION
 *   `CIDR_BLOCKS_READ_ONLY` (the current value unchanged is fine).
 * - an alias `collab-proxies` is created with the domain: a load balancer
 *   over the platform's SIP proxies (COLLAB_SIP_PROXIES), read-only.
 * - domain_optional is always false; channel_limit applies (the call engine
 *   admits at most that many simultaneous calls, see `resolveSipCall`).
 * - collab_direct_routing_status.verified starts false. VerifyCollabDirectRouting
 *   applies a verification string `collab-verification=<token>` (token: 16
 *   to 128 characters of A-Z a-z 0-9 _ -; anything else is INVALID_ARGUMENT),
 *   recorded as the domain's published verification record. The simulated
 *   platform accepts it at once when the token is
 *   base64url(HMAC-SHA256(COLLAB_VERIFICATION_SECRET, fqdn)) (no padding)
 *   — see `collabVerificationString` — and otherwise when the operator
 *   accepts it (AcceptCollabVerification in the admin API). `verified`
 *   follows the record last applied: re-applying the accepted record changes
 *   nothing, a different one is checked afresh. Other types are
 *   FAILED_PRECONDITION `NOT_COLLAB_DIRECT_ROUTING`.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import {
  alreadyExists,
  badField,
  type FieldViolation,
  failedPrecondition,
  invalidArgument,
  notFound,
} from "../../api/errors.js";
import { charLength } from "../../api/labels.js";
import { projectName, type ResourceRef, resourceName } from "../../api/names.js";
import { type PageResult, readPage } from "../../api/pagination.js";
import type { Clock } from "../../clock.js";
import { isUniqueViolation } from "../../db/client.js";
import type {
  SipDomainRow,
  SipDomainTypeValue,
  StoredCallRecording,
  TerminationModeValue,
} from "../../db/schema/index.js";
import { authorizeSipCall, matchDomainOptional, type SipCallDenialCode } from "./authorization.js";
import { findOverlapAcrossGroups, MAX_CIDR_BLOCKS, validateCidrBlocks } from "./cidr.js";
import type { SipDomainsConfig } from "./config.js";
import { SIP_DOMAIN_ID_KEY, type VoiceStore } from "./repository.js";

export const RESOURCE_TYPE = "voice.api.enfonica.com/SipDomain";
export const COLLECTION = "sipDomains";

export const SIP_DOMAIN_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,28}[a-z0-9]$/;

/** The id of the load balancer alias of every collaboration domain. */
export const COLLAB_ALIAS_ID = "collab-proxies";
export const COLLAB_ALIAS_DISPLAY_NAME = "Collaboration platform SIP proxies";
/** The display name of the blocks of a collaboration domain. */
export const COLLAB_BLOCK_DISPLAY_NAME = "Collaboration platform signalling";

/** `collab-verification=<token>`. */
export const COLLAB_VERIFICATION_PREFIX = "collab-verification=";
const COLLAB_VERIFICATION_STRING = /^collab-verification=[A-Za-z0-9_-]{16,128}$/;

export const LIMITS = {
  displayName: 100,
  handlerUris: 5,
  cidrBlocks: MAX_CIDR_BLOCKS,
  cidrBlockDisplayName: 100,
  channelLimit: 100,
} as const;

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

export interface PageParams {
  pageSize: number;
  pageToken: string;
}

/** Whether users are defined on a domain (authorization rules 1-3); the call engine supplies the real one. */
export interface SipUserDirectory {
  hasUsers(domain: { projectId: string; id: string }): Promise<boolean>;
}

/** No SIP user credentials exist yet (the contract has no API for them): no domain has users. */
export const NO_SIP_USERS: SipUserDirectory = { hasUsers: async () => false };

// ---------------------------------------------------------------------------
// Validation

function tooLong(violations: FieldViolation[], field: string, value: string, max: number): void {
  if (charLength(value) > max) {
    violations.push({ field, description: `must be at most ${max} characters`, reason: "string.max_len" });
  }
}

/** Whether `uri` is an absolute http or https URI with a host. */
export function isHttpUri(uri: string): boolean {
  if (/\s/.test(uri) || !/^https?:\/\//i.test(uri)) return false;
  try {
    const url = new URL(uri);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
}

function httpUriViolation(violations: FieldViolation[], field: string, uri: string): void {
  if (!isHttpUri(uri)) {
    violations.push({ field, description: "must be an absolute http or https URI", reason: "uri.http" });
  }
}

/** Problems with a cidr_blocks list at `field` (`sip_domain.cidr_blocks` or `cidr_blocks`). */
export function cidrBlockViolations(blocks: readonly CidrBlock[], field: string): FieldViolation[] {
  const violations: FieldViolation[] = [];
  for (const v of validateCidrBlocks(blocks.map((b) => b.cidrBlock))) {
    violations.push(
      v.index === null
        ? { field, description: v.message, reason: "repeated.max_items" }
        : { field: `${field}[${v.index}].cidr_block`, description: v.message, reason: "cidr_block.format" },
    );
  }
  blocks.forEach((b, i) => {
    tooLong(violations, `${field}[${i}].display_name`, b.displayName, LIMITS.cidrBlockDisplayName);
  });
  return violations;
}

/** Every rule the settings of a domain of `type` must meet; empty when they meet them all. */
export function settingsViolations(settings: SipDomainSettings, type: DomainType): FieldViolation[] {
  const violations: FieldViolation[] = [];
  tooLong(violations, "sip_domain.display_name", settings.displayName, LIMITS.displayName);
  const uris = settings.callTerminationHandlerUris;
  const urisField = "sip_domain.call_termination_handler_uris";
  if (uris.length > LIMITS.handlerUris) {
    violations.push({
      field: urisField,
      description: `at most ${LIMITS.handlerUris} URIs`,
      reason: "repeated.max_items",
    });
  }
  uris.forEach((uri, i) => {
    httpUriViolation(violations, `${urisField}[${i}]`, uri);
  });
  if (settings.callTerminationMode === "PROGRAMMABLE" && uris.length === 0) {
    violations.push({
      field: urisField,
      description: "at least one URI is required when call_termination_mode is PROGRAMMABLE",
      reason: "required",
    });
  }
  if (type !== "COLLAB_DIRECT_ROUTING") {
    violations.push(...cidrBlockViolations(settings.cidrBlocks, "sip_domain.cidr_blocks"));
  }
  const recording = settings.callRecording;
  if (recording !== undefined) {
    if (recording.recordingReadyUri !== "") {
      httpUriViolation(
        violations,
        "sip_domain.call_recording.recording_ready_uri",
        recording.recordingReadyUri,
      );
    }
    if (recording.transcriptionReadyUri !== "") {
      httpUriViolation(
        violations,
        "sip_domain.call_recording.transcription_ready_uri",
        recording.transcriptionReadyUri,
      );
    }
  }
  const limit = settings.channelLimit;
  if (!Number.isInteger(limit) || limit < 0 || limit > LIMITS.channelLimit) {
    violations.push({
      field: "sip_domain.channel_limit",
      description: `must be 1 to ${LIMITS.channelLimit} (0 means ${DEFAULT_CHANNEL_LIMIT})`,
      reason: "int32.range",
    });
  }
  return violations;
}

function sameBlocks(a: readonly CidrBlock[], b: readonly CidrBlock[]): boolean {
  return (
    a.length === b.length &&
    a.every((x, i) => x.cidrBlock === b[i]!.cidrBlock && x.displayName === b[i]!.displayName)
  );
}

// ---------------------------------------------------------------------------
// Collaboration-platform verification (the simulated platform)

/**
 * The verification string the simulated platform issues for (and accepts
 * from) the domain at `fqdn`: `collab-verification=` followed by
 * base64url(HMAC-SHA256(secret, fqdn)) without padding (43 characters).
 */
export function collabVerificationString(fqdn: string, secret: string): string {
  return `${COLLAB_VERIFICATION_PREFIX}${createHmac("sha256", secret).update(fqdn, "utf8").digest("base64url")}`;
}

/** Whether the simulated platform's own check accepts `record` for the domain at `fqdn`. */
export function platformAccepts(fqdn: string, record: string, secret: string): boolean {
  const expected = Buffer.from(collabVerificationString(fqdn, secret), "utf8");
  const actual = Buffer.from(record, "utf8");
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

export function isCollabVerificationString(value: string): boolean {
  return COLLAB_VERIFICATION_STRING.test(value);
}

// ---------------------------------------------------------------------------
// Calls (for the call engine)

export interface SipCallRequest {
  /**
   * The domain the call names (the host of its Request-URI), e.g.
   * `acme.sip.switchboard.local`; case-insensitive, a trailing dot is
   * ignored. Absent or empty: the call was sent to the service's SIP
   * addresses and is matched by source network (domain-optional domains).
   */
  domainName?: string | undefined;
  /** The dotted-quad IPv4 address the call came from. */
  sourceIp: string;
  /** Whether the request authenticated successfully as one of the domain's users. */
  authenticatedUser: boolean;
  /**
   * Calls of the domain in progress, when the engine knows: a collaboration
   * domain admits a call only while fewer than channel_limit are.
   */
  activeCalls?: number | undefined;
}

export type SipCallResolutionCode =
  | SipCallDenialCode
  /** No live or deleted domain has the named FQDN. */
  | "DOMAIN_NOT_FOUND"
  /** An unnamed call matched no domain-optional domain. */
  | "NO_MATCHING_DOMAIN"
  /** An unnamed call matched several (inconsistent data; refused rather than guessed). */
  | "AMBIGUOUS_DOMAIN"
  /** A collaboration domain already has channel_limit calls in progress. */
  | "CHANNEL_LIMIT_REACHED";

export type SipCallResolution =
  | {
      readonly allow: true;
      readonly domain: SipDomain;
      /** The authorization rule that admitted the call (2: by address, 3: address and user). */
      readonly rule: 2 | 3;
      readonly matchedBlock: string;
      /** Whether the call named the domain (false: matched by network). */
      readonly namedDomain: boolean;
    }
  | {
      readonly allow: false;
      /** The domain the call was resolved to, when it was. */
      readonly domain: SipDomain | undefined;
      readonly code: SipCallResolutionCode;
      /** The authorization rule that denied it, when one did. */
      readonly rule: 1 | 2 | 3 | 5 | null;
      /** For people and logs; wording may change, `code` will not. */
      readonly reason: string;
    };

// ---------------------------------------------------------------------------
// The domain

export function deletedError(name: string) {
  return failedPrecondition(
    "SIP_DOMAIN_DELETED",
    `${name} is deleted; a deleted SIP domain cannot be changed`,
    {
      resource: name,
    },
  );
}

export class SipDomainsDomain {
  constructor(
    private readonly store: VoiceStore,
    private readonly clock: Clock,
    private readonly config: SipDomainsConfig,
    private readonly users: SipUserDirectory = NO_SIP_USERS,
  ) {}

  fqdnOf(id: string): string {
    return `${id}.${this.config.baseDomain}`;
  }

  /** The domain as the API shows it (collaboration blocks from configuration). */
  view(row: SipDomainRow): SipDomain {
    const ref = { projectId: row.projectId, id: row.id };
    const collab = row.type === "COLLAB_DIRECT_ROUTING";
    const fqdn = this.fqdnOf(row.id);
    const record = row.collabVerificationRecord ?? undefined;
    return {
      ...ref,
      name: resourceName(COLLECTION, ref),
      fqdn,
      displayName: row.displayName,
      allowRegister: row.allowRegister,
      callTerminationMode: row.callTerminationMode,
      callTerminationHandlerUris: [...row.callTerminationHandlerUris],
      cidrBlocks: collab
        ? this.config.collab.signallingNetworks.map((cidrBlock) => ({
            displayName: COLLAB_BLOCK_DISPLAY_NAME,
            cidrBlock,
          }))
        : row.cidrBlocks.map((b) => ({ ...b })),
      callRecording:
        row.callRecording === null
          ? undefined
          : { ...row.callRecording, postProcessing: [...row.callRecording.postProcessing] },
      type: row.type,
      channelLimit: collab ? (row.channelLimit ?? DEFAULT_CHANNEL_LIMIT) : undefined,
      collab: collab
        ? {
            record,
            recordTime: row.collabVerificationRecordTime ?? undefined,
            verified: row.collabVerified ?? false,
            verifyTime: row.collabVerifyTime ?? undefined,
            platformCheckPassed:
              record !== undefined && platformAccepts(fqdn, record, this.config.collab.verificationSecret),
          }
        : undefined,
      domainOptional: row.domainOptional,
      createTime: row.createTime,
      deleteTime: row.deleteTime ?? undefined,
    };
  }

  async create(projectId: string, sipDomainId: string, input: NewSipDomain): Promise<SipDomain> {
    const type: DomainType = input.type ?? "STANDARD";
    const collab = type === "COLLAB_DIRECT_ROUTING";
    const violations: FieldViolation[] = [];
    if (!SIP_DOMAIN_ID_PATTERN.test(sipDomainId)) {
      violations.push({
        field: "sip_domain_id",
        description:
          "must be 2 to 30 lowercase letters, digits or hyphens, starting and ending with a letter or digit",
        reason: "string.pattern",
      });
    }
    violations.push(...settingsViolations(input, type));
    if (collab && input.cidrBlocks.length > 0) {
      violations.push({
        field: "sip_domain.cidr_blocks",
        description:
          "must be empty for DOMAIN_TYPE_COLLAB_DIRECT_ROUTING: the service sets the collaboration platform's networks",
        reason: "field.read_only",
      });
    }
    if (violations.length > 0) throw invalidArgument(violations);
    const now = this.clock.now();
    const name = resourceName(COLLECTION, { projectId, id: sipDomainId });
    try {
      const row = await this.store.transaction(async (s) => {
        await s.sipDomains.reserveId(sipDomainId, projectId, now);
        const inserted = await s.sipDomains.insert({
          id: sipDomainId,
          projectId,
          displayName: input.displayName,
          allowRegister: input.allowRegister,
          callTerminationMode: input.callTerminationMode ?? "TERMINATION_MODE_DISABLED",
          callTerminationHandlerUris: input.callTerminationHandlerUris,
          cidrBlocks: collab ? [] : input.cidrBlocks,
          callRecording: input.callRecording ?? null,
          type,
          channelLimit: collab ? input.channelLimit || DEFAULT_CHANNEL_LIMIT : null,
          collabVerified: collab ? false : null,
          domainOptional: false,
          createTime: now,
          updateTime: now,
        });
        if (collab) {
          await s.aliases.insert({
            sipDomainId,
            id: COLLAB_ALIAS_ID,
            projectId,
            displayName: COLLAB_ALIAS_DISPLAY_NAME,
            loadBalancer: null,
            managed: true,
            createTime: now,
            updateTime: now,
          });
        }
        return inserted;
      });
      return this.view(row);
    } catch (err) {
      if (isUniqueViolation(err, SIP_DOMAIN_ID_KEY) || isUniqueViolation(err, "sip_domains_pkey")) {
        throw alreadyExists(
          RESOURCE_TYPE,
          name,
          `the SIP domain id ${JSON.stringify(sipDomainId)} is taken: ids are unique across all projects and never reissued`,
          { sip_domain_id: sipDomainId },
        );
      }
      throw err;
    }
  }

  async get(ref: ResourceRef): Promise<SipDomain> {
    const row = await this.store.sipDomains.find(ref.projectId, ref.id);
    if (row === undefined) throw notFound(RESOURCE_TYPE, resourceName(COLLECTION, ref));
    return this.view(row);
  }

  async list(projectId: string, showDeleted: boolean, page: PageParams): Promise<PageResult<SipDomain>> {
    const query = { method: "ListSipDomains", parent: projectName(projectId), show_deleted: showDeleted };
    const result = await readPage({ ...page, query }, (after, limit) =>
      this.store.sipDomains.list(projectId, showDeleted, after, limit),
    );
    return { items: result.items.map((r) => this.view(r)), nextPageToken: result.nextPageToken };
  }

  /**
   * Updates a live domain. `plan` computes the new settings from the current
   * domain (read under a row lock), or returns undefined for no change.
   */
  async update(
    ref: ResourceRef,
    plan: (current: SipDomain) => SipDomainSettings | undefined,
  ): Promise<SipDomain> {
    return this.store.transaction(async (s) => {
      const current = await this.liveForUpdate(s, ref);
      const changes = plan(current);
      if (changes === undefined) return current;
      const collab = current.type === "COLLAB_DIRECT_ROUTING";
      if (!sameBlocks(changes.cidrBlocks, current.cidrBlocks)) {
        if (collab) {
          throw failedPrecondition(
            "CIDR_BLOCKS_READ_ONLY",
            `the cidr_blocks of ${current.name} are the collaboration platform's signalling networks and cannot be changed`,
            { resource: current.name },
          );
        }
        if (current.domainOptional) {
          throw failedPrecondition(
            "CIDR_BLOCKS_MANAGED_BY_OPERATOR",
            `${current.name} is domain-optional: its cidr_blocks can only be changed by the service operator`,
            { resource: current.name },
          );
        }
      }
      const violations = settingsViolations(changes, current.type);
      if (violations.length > 0) throw invalidArgument(violations);
      const row = await s.sipDomains.update(ref.projectId, ref.id, {
        displayName: changes.displayName,
        allowRegister: changes.allowRegister,
        callTerminationMode: changes.callTerminationMode ?? "TERMINATION_MODE_DISABLED",
        callTerminationHandlerUris: changes.callTerminationHandlerUris,
        callRecording: changes.callRecording ?? null,
        ...(collab
          ? { channelLimit: changes.channelLimit || DEFAULT_CHANNEL_LIMIT }
          : { cidrBlocks: changes.cidrBlocks }),
        updateTime: this.clock.now(),
      });
      return this.view(row!);
    });
  }

  /** Soft delete: sets delete_time; returns the deleted domain. */
  async delete(ref: ResourceRef): Promise<SipDomain> {
    return this.store.transaction(async (s) => {
      await this.liveForUpdate(s, ref);
      const now = this.clock.now();
      const row = await s.sipDomains.update(ref.projectId, ref.id, { deleteTime: now, updateTime: now });
      return this.view(row!);
    });
  }

  /** The operator's switch (admin API); see the file comment. */
  async setDomainOptional(
    ref: ResourceRef,
    domainOptional: boolean,
    cidrBlocks: CidrBlock[],
  ): Promise<SipDomain> {
    const violations = cidrBlockViolations(cidrBlocks, "cidr_blocks");
    if (domainOptional && cidrBlocks.length === 0) {
      violations.push({
        field: "cidr_blocks",
        description: "at least one CIDR block is required to make a SIP domain domain-optional",
        reason: "required",
      });
    }
    if (violations.length > 0) throw invalidArgument(violations);
    return this.store.transaction(async (s) => {
      await s.sipDomains.lockDomainOptional();
      const current = await this.liveForUpdate(s, ref);
      if (current.type === "COLLAB_DIRECT_ROUTING") {
        throw failedPrecondition(
          "COLLAB_DIRECT_ROUTING_NOT_DOMAIN_OPTIONAL",
          `${current.name} is of type DOMAIN_TYPE_COLLAB_DIRECT_ROUTING, which is never domain-optional`,
          { resource: current.name },
        );
      }
      const blocks = cidrBlocks.length > 0 ? cidrBlocks : current.cidrBlocks;
      if (domainOptional) {
        const others = await s.sipDomains.listDomainOptional(current.id);
        const overlap = findOverlapAcrossGroups([
          { id: current.id, cidrBlocks: blocks.map((b) => b.cidrBlock) },
          ...others.map((o) => ({ id: o.id, cidrBlocks: o.cidrBlocks.map((b) => b.cidrBlock) })),
        ]);
        if (overlap !== null) {
          const names = new Map([current, ...others.map((o) => this.view(o))].map((d) => [d.id, d.name]));
          const [mine, theirs] =
            overlap.b.id === current.id ? [overlap.b, overlap.a] : [overlap.a, overlap.b];
          const mineName = names.get(mine.id)!;
          const theirsName = names.get(theirs.id)!;
          throw failedPrecondition(
            "CIDR_BLOCKS_OVERLAP",
            `CIDR block ${mine.cidrBlock} of ${mineName} overlaps ${theirs.cidrBlock} of ${theirsName}, which is domain-optional too: calls could not be matched to one domain`,
            {
              resource: mineName,
              cidr_block: mine.cidrBlock,
              conflicting_resource: theirsName,
              conflicting_cidr_block: theirs.cidrBlock,
            },
          );
        }
      }
      const row = await s.sipDomains.update(ref.projectId, ref.id, {
        domainOptional,
        cidrBlocks: blocks,
        updateTime: this.clock.now(),
      });
      return this.view(row!);
    });
  }

  /** VerifyCollabDirectRouting; see the file comment. */
  async verifyCollabDirectRouting(ref: ResourceRef, verificationString: string): Promise<SipDomain> {
    if (!isCollabVerificationString(verificationString)) {
      throw badField(
        "verification_string",
        "must be the string issued by the collaboration platform's tenant: collab-verification=<token>, the token 16 to 128 characters of A-Z, a-z, 0-9, _ and -",
        "verification_string.format",
      );
    }
    return this.store.transaction(async (s) => {
      const current = await this.liveForUpdate(s, ref);
      this.requireCollab(current);
      if (current.collab!.record === verificationString && current.collab!.verified) return current;
      const now = this.clock.now();
      const accepted = platformAccepts(
        current.fqdn,
        verificationString,
        this.config.collab.verificationSecret,
      );
      const row = await s.sipDomains.update(ref.projectId, ref.id, {
        collabVerificationRecord: verificationString,
        collabVerificationRecordTime: now,
        collabVerified: accepted,
        collabVerifyTime: accepted ? now : null,
        updateTime: now,
      });
      return this.view(row!);
    });
  }

  /** The verification state of a collaboration domain (admin API). */
  async getCollabVerification(ref: ResourceRef): Promise<SipDomain> {
    const domain = await this.get(ref);
    this.requireCollab(domain);
    return domain;
  }

  /** The simulated platform accepts the published record (admin hook). */
  async acceptCollabVerification(ref: ResourceRef): Promise<SipDomain> {
    return this.store.transaction(async (s) => {
      const current = await this.liveForUpdate(s, ref);
      this.requireCollab(current);
      if (current.collab!.record === undefined) {
        throw failedPrecondition(
          "VERIFICATION_RECORD_MISSING",
          `${current.name} has no verification record: its owner must apply a verification string with VerifyCollabDirectRouting first`,
          { resource: current.name },
        );
      }
      if (current.collab!.verified) return current;
      const now = this.clock.now();
      const row = await s.sipDomains.update(ref.projectId, ref.id, {
        collabVerified: true,
        collabVerifyTime: now,
        updateTime: now,
      });
      return this.view(row!);
    });
  }

  /**
   * Which domain a SIP call belongs to and whether it may proceed: by FQDN
   * when the call names a domain, otherwise by source network among the
   * live domain-optional domains (rule 4); then authorization rules 1-5
   * (`authorizeSipCall`) and, for the collaboration type, channel_limit.
   */
  async resolveSipCall(call: SipCallRequest): Promise<SipCallResolution> {
    const named = call.domainName !== undefined && call.domainName !== "";
    let row: SipDomainRow | undefined;
    if (named) {
      const id = this.idOfFqdn(call.domainName!);
      row = id === undefined ? undefined : await this.store.sipDomains.findById(id);
      if (row === undefined) {
        return refuse(undefined, "DOMAIN_NOT_FOUND", null, `no SIP domain is named ${call.domainName}`);
      }
    } else {
      const candidates = await this.store.sipDomains.listDomainOptional();
      const match = matchDomainOptional(
        candidates.map((c) => ({ id: c.id, cidrBlocks: c.cidrBlocks.map((b) => b.cidrBlock) })),
        call.sourceIp,
      );
      if (!match.matched) return refuse(undefined, match.code, null, match.reason);
      row = candidates.find((c) => c.id === match.id)!;
    }
    const domain = this.view(row);
    const decision = authorizeSipCall({
      domain: {
        cidrBlocks: domain.cidrBlocks.map((b) => b.cidrBlock),
        hasUsers: domain.deleteTime === undefined && (await this.users.hasUsers(domain)),
        domainOptional: domain.domainOptional,
        deleted: domain.deleteTime !== undefined,
      },
      sourceIp: call.sourceIp,
      authenticatedUser: call.authenticatedUser,
      namedDomain: named,
    });
    if (!decision.allow) return refuse(domain, decision.code, decision.rule, decision.reason);
    if (call.activeCalls !== undefined) {
      const full = channelLimitRefusal(domain, call.activeCalls);
      if (full !== undefined) return full;
    }
    return {
      allow: true,
      domain,
      rule: decision.rule,
      matchedBlock: decision.matchedBlock,
      namedDomain: named,
    };
  }

  /** The id of the domain an FQDN names, if it is of the form `<id>.<base domain>`. */
  idOfFqdn(fqdn: string): string | undefined {
    const name = fqdn.toLowerCase().replace(/\.$/, "");
    const suffix = `.${this.config.baseDomain}`;
    if (!name.endsWith(suffix)) return undefined;
    const id = name.slice(0, -suffix.length);
    return SIP_DOMAIN_ID_PATTERN.test(id) ? id : undefined;
  }

  private async liveForUpdate(s: VoiceStore, ref: ResourceRef): Promise<SipDomain> {
    const row = await s.sipDomains.find(ref.projectId, ref.id, true);
    if (row === undefined) throw notFound(RESOURCE_TYPE, resourceName(COLLECTION, ref));
    const domain = this.view(row);
    if (domain.deleteTime !== undefined) throw deletedError(domain.name);
    return domain;
  }

  private requireCollab(domain: SipDomain): void {
    if (domain.type !== "COLLAB_DIRECT_ROUTING") {
      throw failedPrecondition(
        "NOT_COLLAB_DIRECT_ROUTING",
        `${domain.name} is not of type DOMAIN_TYPE_COLLAB_DIRECT_ROUTING`,
        { resource: domain.name },
      );
    }
  }
}

/**
 * The refusal (CHANNEL_LIMIT_REACHED) of one more call to `domain` while
 * `activeCalls` of its calls are in progress; undefined when it has room
 * (or no channel_limit). The caller counting `activeCalls` must hold the
 * domain's call lock until its new call is inserted (see incoming.ts).
 */
export function channelLimitRefusal(
  domain: SipDomain,
  activeCalls: number,
): (SipCallResolution & { allow: false }) | undefined {
  const limit = domain.channelLimit;
  if (limit === undefined || activeCalls < limit) return undefined;
  return {
    allow: false,
    domain,
    code: "CHANNEL_LIMIT_REACHED",
    rule: null,
    reason: `${domain.name} already has ${activeCalls} calls in progress; its channel_limit is ${limit}`,
  };
}

function refuse(
  domain: SipDomain | undefined,
  code: SipCallResolutionCode,
  rule: 1 | 2 | 3 | 5 | null,
  reason: string,
): SipCallResolution {
  return { allow: false, domain, code, rule, reason };
}
