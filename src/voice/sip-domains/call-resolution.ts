/**
 * Which SIP domain a call belongs to and whether it may proceed, for the
 * call engine (src/voice/calls/incoming.ts). SipDomainsDomain.resolveSipCall
 * (domain.ts) answers with `resolveSipCall` here: by FQDN when the call names
 * a domain, otherwise by source network among the live domain-optional
 * domains (rule 4, `matchDomainOptional`); then authorization rules 1-5
 * (`authorizeSipCall`, authorization.ts) and, for the collaboration type,
 * channel_limit (`channelLimitRefusal`): such a domain admits at most that
 * many simultaneous calls.
 */
import type { SipDomainRow } from "../../db/schema/index.js";
import { authorizeSipCall, matchDomainOptional, type SipCallDenialCode } from "./authorization.js";
import type { SipDomain } from "./model.js";
import type { SipDomainsRepository } from "./repository.js";

/** Whether users are defined on a domain (authorization rules 1-3); the call engine supplies the real one. */
export interface SipUserDirectory {
  hasUsers(domain: { projectId: string; id: string }): Promise<boolean>;
}

/** No SIP user credentials exist yet (the contract has no API for them): no domain has users. */
export const NO_SIP_USERS: SipUserDirectory = { hasUsers: async () => false };

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

/** What `resolveSipCall` needs of the SIP domains layer; SipDomainsDomain supplies it. */
export interface SipCallResolverContext {
  readonly sipDomains: Pick<SipDomainsRepository, "findById" | "listDomainOptional">;
  readonly users: SipUserDirectory;
  /** The domain as the API shows it (SipDomainsDomain.view). */
  view(row: SipDomainRow): SipDomain;
  /** The id of the domain an FQDN names (SipDomainsDomain.idOfFqdn). */
  idOfFqdn(fqdn: string): string | undefined;
}

/**
 * Which domain a SIP call belongs to and whether it may proceed: by FQDN
 * when the call names a domain, otherwise by source network among the
 * live domain-optional domains (rule 4); then authorization rules 1-5
 * (`authorizeSipCall`) and, for the collaboration type, channel_limit.
 */
export async function resolveSipCall(
  context: SipCallResolverContext,
  call: SipCallRequest,
): Promise<SipCallResolution> {
  const named = call.domainName !== undefined && call.domainName !== "";
  let row: SipDomainRow | undefined;
  if (named) {
    const id = context.idOfFqdn(call.domainName!);
    row = id === undefined ? undefined : await context.sipDomains.findById(id);
    if (row === undefined) {
      return refuse(undefined, "DOMAIN_NOT_FOUND", null, `no SIP domain is named ${call.domainName}`);
    }
  } else {
    const candidates = await context.sipDomains.listDomainOptional();
    const match = matchDomainOptional(
      candidates.map((c) => ({ id: c.id, cidrBlocks: c.cidrBlocks.map((b) => b.cidrBlock) })),
      call.sourceIp,
    );
    if (!match.matched) return refuse(undefined, match.code, null, match.reason);
    row = candidates.find((c) => c.id === match.id)!;
  }
  const domain = context.view(row);
  const decision = authorizeSipCall({
    domain: {
      cidrBlocks: domain.cidrBlocks.map((b) => b.cidrBlock),
      hasUsers: domain.deleteTime === undefined && (await context.users.hasUsers(domain)),
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
