/**
 * The field rules of a SIP domain's create and update requests, as pure
 * functions returning FieldViolations; SipDomainsDomain (domain.ts) throws
 * them together as one INVALID_ARGUMENT naming the proto field paths.
 *
 * - sip_domain_id: chosen by the client on create, `^[a-z0-9][a-z0-9-]{0,28}[a-z0-9]$`.
 *   (Its uniqueness is domain.ts's: see there.)
 * - display_name, cidr_blocks[].display_name: at most 100 characters.
 * - call_termination_handler_uris: at most 5 absolute http or https URIs;
 *   at least one when call_termination_mode is PROGRAMMABLE (checked on the
 *   resulting domain, so an update cannot leave a PROGRAMMABLE domain
 *   without one). Kept whatever the mode.
 * - cidr_blocks: at most 100 IPv4 blocks in canonical CIDR notation with
 *   their host bits zero (cidr.ts). A block with host bits set (`10.0.0.1/24`) is
 *   refused with a hint naming the network (`10.0.0.0/24`) rather than
 *   silently normalised: the caller may have meant a single address, and the
 *   value read back is always the value written. Overlaps inside one domain
 *   are harmless and allowed. Not checked for DOMAIN_TYPE_COLLAB_DIRECT_ROUTING,
 *   whose blocks are the platform's; setting them on its create is
 *   INVALID_ARGUMENT.
 * - call_recording: recording_ready_uri and transcription_ready_uri are
 *   absolute http or https URIs when set.
 * - channel_limit: 1 to 100; 0 or unset means 1.
 */
import type { FieldViolation } from "../../api/errors.js";
import { charLength } from "../../api/labels.js";
import { MAX_CIDR_BLOCKS, validateCidrBlocks } from "./cidr.js";
import {
  type CidrBlock,
  DEFAULT_CHANNEL_LIMIT,
  type DomainType,
  type NewSipDomain,
  type SipDomainSettings,
} from "./model.js";

export const SIP_DOMAIN_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,28}[a-z0-9]$/;

export const LIMITS = {
  displayName: 100,
  handlerUris: 5,
  cidrBlocks: MAX_CIDR_BLOCKS,
  cidrBlockDisplayName: 100,
  channelLimit: 100,
} as const;

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

/** Whether two lists of blocks are the same, in the same order. */
export function sameBlocks(a: readonly CidrBlock[], b: readonly CidrBlock[]): boolean {
  return (
    a.length === b.length &&
    a.every((x, i) => x.cidrBlock === b[i]!.cidrBlock && x.displayName === b[i]!.displayName)
  );
}

/** Every rule a new domain (`sipDomainId`, `input`, of `type`) must meet; empty when it meets them all. */
export function newSipDomainViolations(
  sipDomainId: string,
  input: NewSipDomain,
  type: DomainType,
): FieldViolation[] {
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
  return violations;
}
