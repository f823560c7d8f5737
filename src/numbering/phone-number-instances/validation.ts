/**
 * Checks of the requests that create or change instances, before anything
 * is read or written; each returns the field violations (INVALID_ARGUMENT).
 *
 * Configuration (INVALID_ARGUMENT naming `phone_number_instance.<field>`):
 * display_name at most 100 characters; labels at most 50, keys 1 to 100
 * characters, values at most 1000; the handler lists as handler-uris.ts
 * says; call_recording_trigger UNSPECIFIED means DISABLED (the default).
 * `phone_number` is immutable; output-only fields are ignored.
 *
 * Requests also name things: the number of a create (`phone_number.name`
 * and/or `phone_number.phone_number`, which must agree), the start and size
 * of a range (at most MAX_RANGE_SIZE numbers, not changing the number of
 * digits), the number of a port-in (a valid E.164 number), and a
 * `regulatory_listing` to attach, which must be a listing of the instance's
 * project.
 */
import type { FieldViolation } from "../../api/errors.js";
import { charLength, labelViolations } from "../../api/labels.js";
import { projectName, type ResourceRef } from "../../api/names.js";
import { isE164, type NumberFacts, numberFacts, numberOfName, rangeEnd } from "../numbers.js";
import { handlerUriViolations } from "./handler-uris.js";
import type { InstanceConfig, NewInstance, NewPortIn, NewRange } from "./model.js";
import { MAX_RANGE_SIZE } from "./ranges.js";

export const MAX_DISPLAY_NAME = 100;

const RESOURCE_FIELD = "phone_number_instance";

/** The configuration rules (see the file comment), for the fields present in `config`. */
export function configViolations(
  config: Partial<InstanceConfig>,
  resourceField: string = RESOURCE_FIELD,
): FieldViolation[] {
  const violations: FieldViolation[] = [];
  if (config.displayName !== undefined && charLength(config.displayName) > MAX_DISPLAY_NAME) {
    violations.push({
      field: `${resourceField}.display_name`,
      description: `must be at most ${MAX_DISPLAY_NAME} characters`,
      reason: "string.max_len",
    });
  }
  if (config.labels !== undefined)
    violations.push(...labelViolations(config.labels, `${resourceField}.labels`));
  if (config.incomingMessageHandlerUris !== undefined) {
    violations.push(
      ...handlerUriViolations(
        "incoming_message_handler_uris",
        config.incomingMessageHandlerUris,
        resourceField,
      ),
    );
  }
  if (config.incomingCallHandlerUris !== undefined) {
    violations.push(
      ...handlerUriViolations("incoming_call_handler_uris", config.incomingCallHandlerUris, resourceField),
    );
  }
  return violations;
}

/** The number a create request names, or the violations saying why it names none. */
export function requestedNumber(input: NewInstance["phoneNumber"]): {
  number?: string;
  violations: FieldViolation[];
} {
  const field = `${RESOURCE_FIELD}.phone_number`;
  if (input === undefined || (input.name === "" && input.phoneNumber === "")) {
    return {
      violations: [
        {
          field,
          description: "is required: name the number by phone_number (E.164) or name (phoneNumbers/{number})",
          reason: "required",
        },
      ],
    };
  }
  const violations: FieldViolation[] = [];
  let fromName: string | undefined;
  if (input.name !== "") {
    fromName = numberOfName(input.name);
    if (fromName === undefined) {
      violations.push({
        field: `${field}.name`,
        description: "must be phoneNumbers/{number}, the number's E.164 digits (phoneNumbers/61255501234)",
        reason: "name.format",
      });
    }
  }
  if (input.phoneNumber !== "" && !isE164(input.phoneNumber)) {
    violations.push({
      field: `${field}.phone_number`,
      description: "must be a phone number in E.164 format, for example +61255501234",
      reason: "phone.e164",
    });
  }
  if (violations.length > 0) return { violations };
  if (fromName !== undefined && input.phoneNumber !== "" && fromName !== input.phoneNumber) {
    return {
      violations: [
        {
          field: `${field}.phone_number`,
          description: `does not match name (${input.name}); give one, or both naming the same number`,
          reason: "phone.mismatch",
        },
      ],
    };
  }
  return { number: input.phoneNumber !== "" ? input.phoneNumber : fromName!, violations: [] };
}

/** The last number of the range a provisioning request names, or the violations of its start and size. */
export function requestedRange(input: NewRange): { end: string | undefined; violations: FieldViolation[] } {
  const violations: FieldViolation[] = [];
  if (!isE164(input.startPhoneNumber)) {
    violations.push({
      field: "start_phone_number",
      description: "must be a phone number in E.164 format, for example +61255501000",
      reason: "phone.e164",
    });
  }
  const end = isE164(input.startPhoneNumber) ? rangeEnd(input.startPhoneNumber, input.size) : undefined;
  if (!Number.isInteger(input.size) || input.size < 1 || input.size > MAX_RANGE_SIZE) {
    violations.push({
      field: "size",
      description: `must be 1 to ${MAX_RANGE_SIZE}`,
      reason: "int32.range",
    });
  } else if (isE164(input.startPhoneNumber) && end === undefined) {
    violations.push({
      field: "size",
      description: "the range would change the number of digits; no such range exists",
      reason: "range.end",
    });
  }
  return { end, violations };
}

/** The facts of the number a port-in request names, or the violation saying it is not valid. */
export function requestedPortIn(input: NewPortIn): {
  facts: NumberFacts | undefined;
  violations: FieldViolation[];
} {
  const violations: FieldViolation[] = [];
  const facts = numberFacts(input.phoneNumber);
  if (facts === undefined) {
    violations.push({
      field: "phone_number",
      description: "must be a valid phone number in E.164 format, for example +61491570156",
      reason: "phone.e164",
    });
  }
  return { facts, violations };
}

/** Checks a listing name of a request; pushes a violation for another project's. */
export function listingRef(
  projectId: string,
  name: string,
  field: string,
  violations: FieldViolation[],
): ResourceRef | undefined {
  if (name === "") return undefined;
  const m = /^projects\/([^/]+)\/regulatoryListings\/([^/]+)$/.exec(name);
  if (m === null) {
    violations.push({
      field,
      description: "must be a listing name, projects/{project}/regulatoryListings/{regulatory_listing}",
      reason: "name.format",
    });
    return undefined;
  }
  if (m[1] !== projectId) {
    violations.push({
      field,
      description: `must be a listing of ${projectName(projectId)}, the instance's project`,
      reason: "listing.project",
    });
    return undefined;
  }
  return { projectId, id: m[2]! };
}
