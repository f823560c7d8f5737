/**
 * Aliases of SIP domains: named routing targets whose calls are spread over
 * a load balancer of SIP endpoints, with call-control handlers as failover.
 *
 * Rules (violations are INVALID_ARGUMENT naming the proto field path):
 * - alias_id: chosen by the client, `^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`;
 *   unique within the domain (ALREADY_EXISTS, also under concurrent creates).
 * - display_name: at most 100 characters.
 * - load_balancer_config: required (it is the alias's only kind of config),
 *   with at least one endpoint or one failover call handler URI, so the
 *   alias routes somewhere.
 * - endpoints: at most 10; `uri` a `sip:` or `sips:` URI (no spaces), no two
 *   endpoints with the same URI; priority 0 to 65535 (lower first); weight 1
 *   to 65535, 0 or unset meaning 10 (stored and shown as 10); `enabled` as
 *   given (proto3 default false: a disabled endpoint is skipped).
 * - failover_call_handler_uris: at most 5 absolute http or https URIs.
 * - The parent domain must exist in the project (NOT_FOUND names it).
 *   Aliases of a deleted domain can be read but not created, changed or
 *   deleted (FAILED_PRECONDITION `SIP_DOMAIN_DELETED`).
 * - The alias the service creates for a DOMAIN_TYPE_COLLAB_DIRECT_ROUTING
 *   domain (`collab-proxies`) is read-only: update and delete are
 *   FAILED_PRECONDITION `ALIAS_READ_ONLY`. Its load balancer is the
 *   collaboration platform's SIP proxies (COLLAB_SIP_PROXIES), read from
 *   configuration on every read, all enabled, no failover handlers. Users
 *   may add aliases of their own to such a domain.
 * - Deleting an alias removes it (DeleteAlias returns Empty); lists are
 *   newest first.
 */

import {
  alreadyExists,
  type FieldViolation,
  failedPrecondition,
  invalidArgument,
  notFound,
} from "../../api/errors.js";
import { recordCreated } from "../../api/idempotency/scope.js";
import { charLength } from "../../api/labels.js";
import { type PageResult, readPage } from "../../api/pagination.js";
import type { Clock } from "../../clock.js";
import { isUniqueViolation } from "../../db/client.js";
import type { SipDomainAliasRow, SipDomainRow } from "../../db/schema/index.js";
import type { SipDomainsConfig } from "../sip-domains/config.js";
import { deletedError } from "../sip-domains/domain.js";
import { RESOURCE_TYPE as SIP_DOMAIN_TYPE, COLLECTION as SIP_DOMAINS } from "../sip-domains/model.js";
import type { VoiceStore } from "../sip-domains/repository.js";
import { isHttpUri } from "../sip-domains/validation.js";
import { ALIAS_KEY } from "./repository.js";

export const RESOURCE_TYPE = "voice.api.enfonica.com/Alias";
export const COLLECTION = "aliases";

export const ALIAS_ID_PATTERN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export const LIMITS = {
  displayName: 100,
  endpoints: 10,
  failoverUris: 5,
  priority: 65535,
  weight: 65535,
} as const;

export const DEFAULT_WEIGHT = 10;

export interface LoadBalancerEndpoint {
  uri: string;
  priority: number;
  weight: number;
  enabled: boolean;
}

export interface LoadBalancer {
  endpoints: LoadBalancerEndpoint[];
  failoverCallHandlerUris: string[];
}

/** A SIP domain (the parent) of a project. */
export interface DomainRef {
  projectId: string;
  sipDomainId: string;
}

export interface AliasRef extends DomainRef {
  id: string;
}

export interface Alias extends AliasRef {
  name: string;
  displayName: string;
  loadBalancer: LoadBalancer | undefined;
  /** Created and maintained by the service. */
  readOnly: boolean;
  createTime: Date;
}

export interface AliasSettings {
  displayName: string;
  loadBalancer: LoadBalancer | undefined;
}

export interface PageParams {
  pageSize: number;
  pageToken: string;
}

export function domainName(ref: DomainRef): string {
  return `projects/${ref.projectId}/${SIP_DOMAINS}/${ref.sipDomainId}`;
}

export function aliasName(ref: AliasRef): string {
  return `${domainName(ref)}/${COLLECTION}/${ref.id}`;
}

const SIP_URI = /^sips?:[^\s]+$/i;

export function aliasViolations(settings: AliasSettings): FieldViolation[] {
  const violations: FieldViolation[] = [];
  if (charLength(settings.displayName) > LIMITS.displayName) {
    violations.push({
      field: "alias.display_name",
      description: `must be at most ${LIMITS.displayName} characters`,
      reason: "string.max_len",
    });
  }
  const lb = settings.loadBalancer;
  const lbField = "alias.load_balancer_config";
  if (lb === undefined) {
    violations.push({
      field: lbField,
      description: "a load balancer configuration is required",
      reason: "required",
    });
    return violations;
  }
  if (lb.endpoints.length === 0 && lb.failoverCallHandlerUris.length === 0) {
    violations.push({
      field: lbField,
      description: "needs at least one endpoint or one failover call handler URI",
      reason: "required",
    });
  }
  const endpointsField = `${lbField}.endpoints`;
  if (lb.endpoints.length > LIMITS.endpoints) {
    violations.push({
      field: endpointsField,
      description: `at most ${LIMITS.endpoints} endpoints`,
      reason: "repeated.max_items",
    });
  }
  const seen = new Set<string>();
  lb.endpoints.forEach((e, i) => {
    const at = `${endpointsField}[${i}]`;
    if (!SIP_URI.test(e.uri)) {
      violations.push({
        field: `${at}.uri`,
        description: "must be a sip: or sips: URI, for example sip:pbx.example.com:5060",
        reason: "uri.sip",
      });
    } else if (seen.has(e.uri.toLowerCase())) {
      violations.push({
        field: `${at}.uri`,
        description: "another endpoint has this URI",
        reason: "repeated.unique",
      });
    }
    seen.add(e.uri.toLowerCase());
    if (!Number.isInteger(e.priority) || e.priority < 0 || e.priority > LIMITS.priority) {
      violations.push({
        field: `${at}.priority`,
        description: `must be 0 to ${LIMITS.priority}`,
        reason: "int32.range",
      });
    }
    if (!Number.isInteger(e.weight) || e.weight < 0 || e.weight > LIMITS.weight) {
      violations.push({
        field: `${at}.weight`,
        description: `must be 1 to ${LIMITS.weight} (0 means ${DEFAULT_WEIGHT})`,
        reason: "int32.range",
      });
    }
  });
  const failoverField = `${lbField}.failover_call_handler_uris`;
  if (lb.failoverCallHandlerUris.length > LIMITS.failoverUris) {
    violations.push({
      field: failoverField,
      description: `at most ${LIMITS.failoverUris} URIs`,
      reason: "repeated.max_items",
    });
  }
  lb.failoverCallHandlerUris.forEach((uri, i) => {
    if (!isHttpUri(uri)) {
      violations.push({
        field: `${failoverField}[${i}]`,
        description: "must be an absolute http or https URI",
        reason: "uri.http",
      });
    }
  });
  return violations;
}

function normalised(lb: LoadBalancer): LoadBalancer {
  return {
    endpoints: lb.endpoints.map((e) => ({ ...e, weight: e.weight === 0 ? DEFAULT_WEIGHT : e.weight })),
    failoverCallHandlerUris: [...lb.failoverCallHandlerUris],
  };
}

export class AliasesDomain {
  constructor(
    private readonly store: VoiceStore,
    private readonly clock: Clock,
    private readonly config: SipDomainsConfig,
  ) {}

  view(row: SipDomainAliasRow): Alias {
    const ref = { projectId: row.projectId, sipDomainId: row.sipDomainId, id: row.id };
    const loadBalancer: LoadBalancer | undefined = row.managed
      ? {
          endpoints: this.config.collab.sipProxies.map((p) => ({ ...p, enabled: true })),
          failoverCallHandlerUris: [],
        }
      : row.loadBalancer === null
        ? undefined
        : normalised(row.loadBalancer);
    return {
      ...ref,
      name: aliasName(ref),
      displayName: row.displayName,
      loadBalancer,
      readOnly: row.managed,
      createTime: row.createTime,
    };
  }

  async create(parent: DomainRef, aliasId: string, input: AliasSettings): Promise<Alias> {
    const violations: FieldViolation[] = [];
    if (!ALIAS_ID_PATTERN.test(aliasId)) {
      violations.push({
        field: "alias_id",
        description:
          "must be 1 to 63 lowercase letters, digits or hyphens, starting and ending with a letter or digit",
        reason: "string.pattern",
      });
    }
    violations.push(...aliasViolations(input));
    if (violations.length > 0) throw invalidArgument(violations);
    const ref = { ...parent, id: aliasId };
    try {
      const row = await this.store.transaction(async (s) => {
        await this.liveDomain(s, parent);
        const now = this.clock.now();
        const inserted = await s.aliases.insert({
          sipDomainId: parent.sipDomainId,
          id: aliasId,
          projectId: parent.projectId,
          displayName: input.displayName,
          loadBalancer: normalised(input.loadBalancer!),
          managed: false,
          createTime: now,
          updateTime: now,
        });
        // Idempotency-Key (src/api/idempotency/): committed with the alias.
        await recordCreated(s.db, aliasName(ref));
        return inserted;
      });
      return this.view(row);
    } catch (err) {
      if (isUniqueViolation(err, ALIAS_KEY)) {
        throw alreadyExists(RESOURCE_TYPE, aliasName(ref), `${aliasName(ref)} already exists`, {
          alias_id: aliasId,
        });
      }
      throw err;
    }
  }

  async get(ref: AliasRef): Promise<Alias> {
    const row = await this.store.aliases.find(ref.projectId, ref.sipDomainId, ref.id);
    if (row === undefined) throw notFound(RESOURCE_TYPE, aliasName(ref));
    return this.view(row);
  }

  /** The domain's aliases, newest first (the domain may be deleted). */
  async list(parent: DomainRef, page: PageParams): Promise<PageResult<Alias>> {
    await this.domain(this.store, parent);
    const query = { method: "ListAliases", parent: domainName(parent) };
    const result = await readPage({ ...page, query }, (after, limit) =>
      this.store.aliases.list(parent.sipDomainId, after, limit),
    );
    return { items: result.items.map((r) => this.view(r)), nextPageToken: result.nextPageToken };
  }

  /** Updates an alias; `plan` computes its new settings from the current alias, or undefined for no change. */
  async update(ref: AliasRef, plan: (current: Alias) => AliasSettings | undefined): Promise<Alias> {
    return this.store.transaction(async (s) => {
      await this.liveDomain(s, ref);
      const current = await this.writable(s, ref);
      const changes = plan(current);
      if (changes === undefined) return current;
      const violations = aliasViolations(changes);
      if (violations.length > 0) throw invalidArgument(violations);
      const row = await s.aliases.update(ref.sipDomainId, ref.id, {
        displayName: changes.displayName,
        loadBalancer: normalised(changes.loadBalancer!),
        updateTime: this.clock.now(),
      });
      return this.view(row!);
    });
  }

  async delete(ref: AliasRef): Promise<void> {
    await this.store.transaction(async (s) => {
      await this.liveDomain(s, ref);
      await this.writable(s, ref);
      await s.aliases.delete(ref.sipDomainId, ref.id);
    });
  }

  private async domain(s: VoiceStore, ref: DomainRef, lock = false): Promise<SipDomainRow> {
    const row = await s.sipDomains.find(ref.projectId, ref.sipDomainId, lock);
    if (row === undefined) throw notFound(SIP_DOMAIN_TYPE, domainName(ref));
    return row;
  }

  /** The parent domain, locked until the transaction ends; it must not be deleted. */
  private async liveDomain(s: VoiceStore, ref: DomainRef): Promise<SipDomainRow> {
    const row = await this.domain(s, ref, true);
    if (row.deleteTime !== null) throw deletedError(domainName(ref));
    return row;
  }

  private async writable(s: VoiceStore, ref: AliasRef): Promise<Alias> {
    const row = await s.aliases.find(ref.projectId, ref.sipDomainId, ref.id);
    if (row === undefined) throw notFound(RESOURCE_TYPE, aliasName(ref));
    const alias = this.view(row);
    if (alias.readOnly) {
      throw failedPrecondition(
        "ALIAS_READ_ONLY",
        `${alias.name} is maintained by the service for the collaboration platform and cannot be changed`,
        { resource: alias.name },
      );
    }
    return alias;
  }
}
