/**
 * SIP domains: SIP trunks and programmable call termination of a project,
 * reachable at `<sip_domain_id>.<SIP_BASE_DOMAIN>`. `SipDomainsDomain` is
 * the domain layer's service: create, read, list, update and delete, the
 * operator's domain-optional switch and the collaboration verification; the
 * services (service.ts, admin-service.ts) only map proto <-> these types.
 * The rest of the rules of the interface document live beside it:
 * - model.ts: the resource's types and names;
 * - validation.ts: the field rules of create and update (INVALID_ARGUMENT
 *   naming the proto field path);
 * - collab.ts: the collaboration platform's alias and verification check;
 * - call-resolution.ts: which domain a call belongs to and whether it may
 *   proceed (`resolveSipCall`, `channelLimitRefusal`).
 *
 * Rules kept here:
 * - sip_domain_id: unique across all projects and never reissued: every id
 *   ever created stays taken, after the domain is deleted and even after
 *   its project is deleted (`sip_domain_ids`, see src/db/schema/voice.ts),
 *   so an FQDN once used can never reach someone else's domain. A taken id
 *   is ALREADY_EXISTS, also under concurrent creates (a primary key decides).
 * - call_termination_mode: TERMINATION_MODE_UNSPECIFIED is stored, and
 *   shown, as TERMINATION_MODE_DISABLED (fail closed).
 * - type: settable on create only (UNSPECIFIED means STANDARD); changing it
 *   is INVALID_ARGUMENT (the update mask's immutable-field rule).
 * - channel_limit: 0 or unset means 1. Kept only for the collaboration
 *   type; ignored (and shown as 0) for the others.
 * - delete is a soft delete: delete_time is set and the domain is returned.
 *   A deleted domain accepts no calls and no changes: update, delete,
 *   verification, alias and SIP user changes are FAILED_PRECONDITION
 *   `SIP_DOMAIN_DELETED`. It can still be read, and is listed with
 *   show_deleted. Its REGISTER bindings are removed with it.
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
 *   applies a verification string `collab-verification=<token>` (its format
 *   and the simulated platform's check: collab.ts), recorded as the domain's
 *   published verification record. The simulated platform accepts it at once
 *   when its own check passes, and otherwise when the operator accepts it
 *   (AcceptCollabVerification in the admin API). `verified`
 *   follows the record last applied: re-applying the accepted record changes
 *   nothing, a different one is checked afresh. Other types are
 *   FAILED_PRECONDITION `NOT_COLLAB_DIRECT_ROUTING`.
 */

import { alreadyExists, badField, failedPrecondition, invalidArgument, notFound } from "../../api/errors.js";
import { recordCreated } from "../../api/idempotency/scope.js";
import { projectName, type ResourceRef, resourceName } from "../../api/names.js";
import { type PageResult, readPage } from "../../api/pagination.js";
import type { Clock } from "../../clock.js";
import { isUniqueViolation } from "../../db/client.js";
import type { SipDomainRow } from "../../db/schema/index.js";
import {
  NO_SIP_USERS,
  resolveSipCall,
  type SipCallRequest,
  type SipCallResolution,
  type SipUserDirectory,
} from "./call-resolution.js";
import { sipDomainChangesOf } from "./changes.js";
import { findOverlapAcrossGroups } from "./cidr.js";
import {
  COLLAB_ALIAS_DISPLAY_NAME,
  COLLAB_ALIAS_ID,
  COLLAB_BLOCK_DISPLAY_NAME,
  collabVerificationStringProblem,
  platformAccepts,
} from "./collab.js";
import type { SipDomainsConfig } from "./config.js";
import {
  type CidrBlock,
  COLLECTION,
  DEFAULT_CHANNEL_LIMIT,
  type DomainType,
  type NewSipDomain,
  RESOURCE_TYPE,
  type SipDomain,
  type SipDomainSettings,
} from "./model.js";
import { SIP_DOMAIN_ID_KEY, type SipDomainsRepository, type VoiceStore } from "./repository.js";
import {
  cidrBlockViolations,
  newSipDomainViolations,
  SIP_DOMAIN_ID_PATTERN,
  sameBlocks,
  settingsViolations,
} from "./validation.js";

export interface PageParams {
  pageSize: number;
  pageToken: string;
}

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
    /**
     * Where `resolveSipCall` reads a named domain's row: the store by
     * default; the SIP edge passes its memory of rows (DomainCache), which
     * forgets a domain this process changes at once (`changing`).
     */
    private readonly rows: Pick<SipDomainsRepository, "findById"> = store.sipDomains,
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
    const violations = newSipDomainViolations(sipDomainId, input, type);
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
        // Idempotency-Key (src/api/idempotency/): committed with the domain.
        await recordCreated(s.db, name);
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
    return this.changing(ref.id, () =>
      this.store.transaction(async (s) => {
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
      }),
    );
  }

  /**
   * Soft delete: sets delete_time; returns the deleted domain. Its SIP
   * users stay (readable, frozen) but its REGISTER bindings are removed.
   */
  async delete(ref: ResourceRef): Promise<SipDomain> {
    return this.changing(ref.id, () =>
      this.store.transaction(async (s) => {
        await this.liveForUpdate(s, ref);
        await s.sipRegistrations.deleteForDomain(ref.id);
        const now = this.clock.now();
        const row = await s.sipDomains.update(ref.projectId, ref.id, { deleteTime: now, updateTime: now });
        return this.view(row!);
      }),
    );
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
    return this.changing(ref.id, () =>
      this.store.transaction(async (s) => {
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
      }),
    );
  }

  /** VerifyCollabDirectRouting; see the file comment. */
  async verifyCollabDirectRouting(ref: ResourceRef, verificationString: string): Promise<SipDomain> {
    const problem = collabVerificationStringProblem(verificationString);
    if (problem !== undefined) throw badField("verification_string", problem, "verification_string.format");
    return this.changing(ref.id, () =>
      this.store.transaction(async (s) => {
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
      }),
    );
  }

  /** The verification state of a collaboration domain (admin API). */
  async getCollabVerification(ref: ResourceRef): Promise<SipDomain> {
    const domain = await this.get(ref);
    this.requireCollab(domain);
    return domain;
  }

  /** The simulated platform accepts the published record (admin hook). */
  async acceptCollabVerification(ref: ResourceRef): Promise<SipDomain> {
    return this.changing(ref.id, () =>
      this.store.transaction(async (s) => {
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
      }),
    );
  }

  /**
   * Which domain a SIP call belongs to and whether it may proceed: by FQDN
   * when the call names a domain, otherwise by source network among the
   * live domain-optional domains (rule 4); then authorization rules 1-5
   * (`authorizeSipCall`) and, for the collaboration type, channel_limit.
   * See `resolveSipCall` in call-resolution.ts.
   */
  async resolveSipCall(call: SipCallRequest): Promise<SipCallResolution> {
    return resolveSipCall(
      {
        sipDomains: {
          findById: (id) => this.rows.findById(id),
          listDomainOptional: () => this.store.sipDomains.listDomainOptional(),
        },
        users: this.users,
        view: (row) => this.view(row),
        idOfFqdn: (fqdn) => this.idOfFqdn(fqdn),
      },
      call,
    );
  }

  /**
   * Runs a change of domain `id`; once it has committed (or failed), this
   * process's caches of domain rows forget the domain (sipDomainChangesOf;
   * the SIP edge's DomainCache), so the replica that changed it acts on the
   * change at once.
   */
  private async changing<T>(id: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } finally {
      sipDomainChangesOf(this.store.db).changed(id);
    }
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
