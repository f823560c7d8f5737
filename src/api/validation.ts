/**
 * The protovalidate interceptor for the whole router: every request message
 * is checked against the `buf.validate` rules of its schema before any
 * handler runs. Violations become INVALID_ARGUMENT with a BadRequest naming
 * each field by its proto path (`regulatory_listing.address.address_lines[0]`).
 * Rules that depend on other data (region-dependent postcodes, URI kinds,
 * required-on-create) live in the domain layer and use the same error shape.
 *
 * Before the rules, one generic check of every string and timestamp in the
 * message (src/api/safe-input.ts): NUL characters, lone surrogates and
 * out-of-range timestamps, which the database cannot store, are
 * INVALID_ARGUMENT naming the field instead of a database error.
 */

import type { DescMessage, Message } from "@bufbuild/protobuf";
import { pathToString } from "@bufbuild/protobuf/reflect";
import { createValidator, type Validator } from "@bufbuild/protovalidate";
import type { Interceptor } from "@connectrpc/connect";
import { type FieldViolation, invalidArgument } from "./errors.js";
import { nativeRegexMatch } from "./native-regex.js";
import { unsafeInput } from "./safe-input.js";

export function validateMessage(validator: Validator, desc: DescMessage, message: Message): void {
  const unsafe = unsafeInput(desc, message);
  if (unsafe.length > 0) throw invalidArgument(unsafe);
  const result = validator.validate(desc, message);
  if (result.kind === "valid") return;
  if (result.kind === "invalid") {
    const violations: FieldViolation[] = result.error.violations.map((v) => ({
      field: pathToString(v.field) || desc.name,
      description: v.forKey ? `key ${v.message}` : v.message,
      reason: v.ruleId,
    }));
    throw invalidArgument(violations);
  }
  // A rule that could not be evaluated is a defect of ours, not the caller's.
  throw result.error;
}

/** The validator of every request: patterns on the platform's RegExp (native-regex.ts). */
export function createRequestValidator(): Validator {
  return createValidator({ regexMatch: nativeRegexMatch });
}

export function createValidationInterceptor(validator: Validator = createRequestValidator()): Interceptor {
  return (next) => (req) => {
    if (!req.stream) {
      validateMessage(validator, req.method.input, req.message);
      return next(req);
    }
    return next(req);
  };
}
