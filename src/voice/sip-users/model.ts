/**
 * The SipUser resource as the domain layer sees it: names, limits and the
 * field rules of create and update (INVALID_ARGUMENT naming the proto field
 * path). The lifecycle lives in domain.ts.
 */
import type { FieldViolation } from "../../api/errors.js";
import { charLength } from "../../api/labels.js";
import { hasControlCharacters } from "../../api/safe-input.js";
import { COLLECTION as SIP_DOMAINS } from "../sip-domains/model.js";

export const RESOURCE_TYPE = "voice.switchboard/SipUser";
export const COLLECTION = "users";

export const SIP_USER_ID_PATTERN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * A SIP URI user part without escapes (RFC 3261 section 25.1: unreserved
 * and user-unreserved characters), 1 to 64 characters.
 */
export const USERNAME_PATTERN = /^[A-Za-z0-9\-_.!~*'()&=+$,;?/]{1,64}$/;

export const LIMITS = {
  displayName: 100,
  passwordMin: 8,
  passwordMax: 128,
} as const;

/** A SIP domain (the parent) of a project. */
export interface DomainRef {
  projectId: string;
  sipDomainId: string;
}

export interface SipUserRef extends DomainRef {
  id: string;
}

export interface SipUser extends SipUserRef {
  name: string;
  username: string;
  displayName: string;
  disabled: boolean;
  /** The realm the stored hashes cover. */
  realm: string;
  createTime: Date;
  updateTime: Date;
}

/** What a client sets; `password` empty means "unchanged" on update. */
export interface SipUserSettings {
  username: string;
  password: string;
  displayName: string;
  disabled: boolean;
}

export function domainName(ref: DomainRef): string {
  return `projects/${ref.projectId}/${SIP_DOMAINS}/${ref.sipDomainId}`;
}

export function sipUserName(ref: SipUserRef): string {
  return `${domainName(ref)}/${COLLECTION}/${ref.id}`;
}

/** Field rules of a user's settings; `passwordRequired` on create and when the username changes. */
export function settingsViolations(settings: SipUserSettings, passwordRequired: boolean): FieldViolation[] {
  const violations: FieldViolation[] = [];
  if (!USERNAME_PATTERN.test(settings.username)) {
    violations.push({
      field: "sip_user.username",
      description:
        "must be 1 to 64 characters allowed unescaped in a SIP URI user part: letters, digits and -_.!~*'()&=+$,;?/",
      reason: settings.username === "" ? "required" : "string.pattern",
    });
  }
  const passwordLength = charLength(settings.password);
  if (settings.password === "" && passwordRequired) {
    violations.push({
      field: "sip_user.password",
      description:
        "is required when a user is created or its username changes (the digest hashes cover the username)",
      reason: "required",
    });
  } else if (
    settings.password !== "" &&
    (passwordLength < LIMITS.passwordMin || passwordLength > LIMITS.passwordMax)
  ) {
    violations.push({
      field: "sip_user.password",
      description: `must be ${LIMITS.passwordMin} to ${LIMITS.passwordMax} characters`,
      reason: "string.len",
    });
  } else if (hasControlCharacters(settings.password)) {
    violations.push({
      field: "sip_user.password",
      description: "must not contain control characters",
      reason: "string.pattern",
    });
  }
  if (charLength(settings.displayName) > LIMITS.displayName) {
    violations.push({
      field: "sip_user.display_name",
      description: `must be at most ${LIMITS.displayName} characters`,
      reason: "string.max_len",
    });
  }
  return violations;
}
