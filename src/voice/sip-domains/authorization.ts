/**
 * Who may place a call through a SIP domain: authorization rules 1-5 of the
 * interface document (SipDomain, "Authorization rules driven by cidrBlocks
 * and users"), as pure functions. The call engine asks `matchDomainOptional`
 * which domain an unnamed call belongs to, then `authorizeSipCall` whether
 * the call may proceed; only then does it look at callTerminationMode
 * (TERMINATION_MODE_DISABLED is the engine's concern, not this module's).
 *
 * Interpretations (the interface document is silent on these):
 *   - "Users are defined" is `hasUsers`: the domain has at least one SIP user
 *     credential. How users are stored is not this module's business.
 *   - Users defined but cidrBlocks empty: denied (DOMAIN_UNUSABLE, rule 3).
 *     Rule 3 says authentication "only succeeds from an IP matching the
 *     list"; an empty list matches no IP, so no call can succeed. Reading the
 *     empty list as "any address" would silently open a domain to the whole
 *     internet the moment its last block is removed, so we fail closed. The
 *     code is DOMAIN_UNUSABLE rather than SOURCE_IP_NOT_ALLOWED because no
 *     source address could ever succeed: the fix is the domain's, not the
 *     caller's.
 *   - A deleted domain (deleteTime set; delete is a soft delete) accepts no
 *     calls, whatever its blocks and users.
 *   - A stored block that does not parse (it never should: blocks are
 *     validated on write) matches no address; an invalid source address
 *     matches no block. Both fail closed.
 *   - `authenticatedUser` without `hasUsers` cannot really happen (there is
 *     no one to authenticate as); it is ignored and rule 2 applies.
 *   - Order of checks: deleted, rule 5 (addressing), rule 1 (usable at all),
 *     source address, then authentication. The address is checked before
 *     authentication so a caller outside the blocks learns only that its
 *     address is not allowed, not whether the domain has users.
 */

import { contains, parseIpv4 } from "./cidr.js";

/** The parts of a SipDomain that decide authorization. */
export interface SipDomainAuthorizationFacts {
  /** SipDomain.cidrBlocks[].cidrBlock, as stored. */
  readonly cidrBlocks: readonly string[];
  /** Whether the domain has at least one user ("users are defined"). */
  readonly hasUsers: boolean;
  /** SipDomain.domainOptional. */
  readonly domainOptional: boolean;
  /** Whether SipDomain.deleteTime is set. */
  readonly deleted: boolean;
}

export interface SipCallAuthorizationInput {
  readonly domain: SipDomainAuthorizationFacts;
  /** The dotted-quad IPv4 address the SIP request came from. */
  readonly sourceIp: string;
  /** Whether the request authenticated successfully as one of the domain's users. */
  readonly authenticatedUser: boolean;
  /**
   * Whether the request named the domain (its FQDN in the Request-URI);
   * false when it was sent to the service's SIP addresses and matched to the
   * domain by source network (`matchDomainOptional`).
   */
  readonly namedDomain: boolean;
}

/** Stable machine codes of a denial. */
export type SipCallDenialCode =
  /** The domain is deleted. */
  | "DOMAIN_DELETED"
  /** Rule 5: domainOptional is false and the call did not name the domain. */
  | "DOMAIN_NAME_REQUIRED"
  /** Rule 1 (no blocks, no users), or rule 3 with no blocks: no call can ever be allowed. */
  | "DOMAIN_UNUSABLE"
  /** The source address is not a valid IPv4 address. */
  | "INVALID_SOURCE_IP"
  /** Rules 2 and 3: the source address is in none of cidrBlocks. */
  | "SOURCE_IP_NOT_ALLOWED"
  /** Rule 3: the domain has users and the request did not authenticate as one. */
  | "AUTHENTICATION_REQUIRED";

export type SipCallAuthorization =
  | {
      readonly allow: true;
      /** 2: allowed by address alone (no users); 3: by address and user authentication. */
      readonly rule: 2 | 3;
      /** The first of the domain's blocks (in stored order) that contains the source address. */
      readonly matchedBlock: string;
    }
  | {
      readonly allow: false;
      /** The rule that denied the call; null when no numbered rule did (deleted, invalid address). */
      readonly rule: 1 | 2 | 3 | 5 | null;
      readonly code: SipCallDenialCode;
      /** For people and logs; wording may change, `code` will not. */
      readonly reason: string;
    };

/** Decides whether a SIP call may use a domain. Pure: no I/O, no clock, no exceptions. */
export function authorizeSipCall(input: SipCallAuthorizationInput): SipCallAuthorization {
  const { domain, sourceIp, authenticatedUser, namedDomain } = input;

  if (domain.deleted) {
    return deny(null, "DOMAIN_DELETED", "the SIP domain has been deleted");
  }

  // Rule 5: when domainOptional is false, calls must use the domain name.
  // Rule 4: when it is true, a call need not name the domain; it was matched
  // to this domain by its source network, and rules 1-3 still apply below
  // (in particular, users must still authenticate).
  if (!domain.domainOptional && !namedDomain) {
    return deny(5, "DOMAIN_NAME_REQUIRED", "calls to this SIP domain must name the domain");
  }

  // Rule 1: no cidrBlocks and no users: the domain cannot be used.
  if (domain.cidrBlocks.length === 0) {
    return domain.hasUsers
      ? deny(
          3,
          "DOMAIN_UNUSABLE",
          "the SIP domain has users but no CIDR blocks; user authentication only succeeds from an address in its CIDR blocks",
        )
      : deny(1, "DOMAIN_UNUSABLE", "the SIP domain has neither CIDR blocks nor users");
  }

  // Rules 2 and 3 both require the source address to match the list.
  const rule = domain.hasUsers ? 3 : 2;
  const source = parseIpv4(sourceIp);
  if (!source.ok) {
    return deny(null, "INVALID_SOURCE_IP", `invalid source address: ${source.error}`);
  }
  const matchedBlock = domain.cidrBlocks.find((block) => contains(block, source.value));
  if (matchedBlock === undefined) {
    return deny(
      rule,
      "SOURCE_IP_NOT_ALLOWED",
      `source address ${sourceIp} is not in the SIP domain's CIDR blocks`,
    );
  }

  // Rule 2: blocks and no users: any matching address calls without authentication.
  if (!domain.hasUsers) {
    return { allow: true, rule: 2, matchedBlock };
  }

  // Rule 3: blocks and users: authentication is required, from a matching address.
  if (!authenticatedUser) {
    return deny(
      3,
      "AUTHENTICATION_REQUIRED",
      "the SIP domain has users; the request must authenticate as one",
    );
  }
  return { allow: true, rule: 3, matchedBlock };
}

/** A domain-optional SIP domain as seen by `matchDomainOptional`. */
export interface DomainOptionalCandidate {
  readonly id: string;
  readonly cidrBlocks: readonly string[];
}

export type DomainOptionalMatch =
  | { readonly matched: true; readonly id: string; readonly cidrBlock: string }
  | {
      readonly matched: false;
      /**
       * NO_MATCHING_DOMAIN: no domain's blocks contain the address.
       * AMBIGUOUS_DOMAIN: several do (overlaps are refused on write, so this
       * means inconsistent data; we refuse rather than guess).
       * INVALID_SOURCE_IP: the address does not parse.
       */
      readonly code: "NO_MATCHING_DOMAIN" | "AMBIGUOUS_DOMAIN" | "INVALID_SOURCE_IP";
      /** The ids of the domains that matched (two or more for AMBIGUOUS_DOMAIN, else empty). */
      readonly candidates: readonly string[];
      readonly reason: string;
    };

/**
 * Rule 4: a call sent to the service's SIP addresses without naming a domain
 * is matched to the one domain-optional domain whose cidrBlocks contain the
 * source address. Pass only live (not deleted) domains with domainOptional
 * true. The match is unambiguous because overlapping blocks across
 * domain-optional domains are refused on write (`findOverlapAcrossGroups`
 * in ./cidr.ts, checked when domainOptional is enabled or such a domain's
 * blocks change). Several blocks of the same domain may contain the address;
 * that is one match. The matched domain must still pass `authorizeSipCall`
 * with `namedDomain: false`.
 */
export function matchDomainOptional(
  domains: readonly DomainOptionalCandidate[],
  sourceIp: string,
): DomainOptionalMatch {
  const source = parseIpv4(sourceIp);
  if (!source.ok) {
    return noMatch("INVALID_SOURCE_IP", [], `invalid source address: ${source.error}`);
  }
  const matches: { id: string; cidrBlock: string }[] = [];
  for (const domain of domains) {
    const cidrBlock = domain.cidrBlocks.find((block) => contains(block, source.value));
    if (cidrBlock !== undefined) matches.push({ id: domain.id, cidrBlock });
  }
  const [only, ...others] = matches;
  if (only === undefined) {
    return noMatch("NO_MATCHING_DOMAIN", [], `no domain-optional SIP domain accepts calls from ${sourceIp}`);
  }
  if (others.length > 0) {
    const ids = matches.map((m) => m.id);
    return noMatch(
      "AMBIGUOUS_DOMAIN",
      ids,
      `source address ${sourceIp} is in the CIDR blocks of several domain-optional SIP domains: ${ids.join(", ")}`,
    );
  }
  return { matched: true, id: only.id, cidrBlock: only.cidrBlock };
}

function deny(
  rule: 1 | 2 | 3 | 5 | null,
  code: SipCallDenialCode,
  reason: string,
): Extract<SipCallAuthorization, { allow: false }> {
  return { allow: false, rule, code, reason };
}

function noMatch(
  code: "NO_MATCHING_DOMAIN" | "AMBIGUOUS_DOMAIN" | "INVALID_SOURCE_IP",
  candidates: readonly string[],
  reason: string,
): DomainOptionalMatch {
  return { matched: false, code, candidates, reason };
}
