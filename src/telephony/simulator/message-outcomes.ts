/**
 * What the simulated network does with an outgoing message, per route
 * (the route of the message's `to`, longest prefix, as for calls):
 *
 * - DELIVER (default): accepted (SENT) and delivered to the handset
 *   `deliverSeconds` later (default 1);
 * - FAIL: refused at once (FAILED) with the error code (default
 *   `CARRIER_REJECTED`);
 * - UNDELIVERED: accepted (SENT), then UNDELIVERED with the error code
 *   (default `UNREACHABLE`) `deliverSeconds` later.
 *
 * `deliverSeconds` 0..86400; an error code (letters, digits, `_ . -`, at
 * most 64) and message (at most 500 characters) only for FAIL and
 * UNDELIVERED. Violations are INVALID_ARGUMENT naming
 * `route.message_outcome` and so on.
 */
import type { FieldViolation } from "../../api/errors.js";

export const MESSAGE_OUTCOMES = ["DELIVER", "FAIL", "UNDELIVERED"] as const;
export type MessageOutcome = (typeof MESSAGE_OUTCOMES)[number];

export const DEFAULT_MESSAGE_DELIVER_SECONDS = 1;
export const MAX_MESSAGE_DELIVER_SECONDS = 86_400;

export const DEFAULT_MESSAGE_ERRORS: Readonly<
  Record<Exclude<MessageOutcome, "DELIVER">, { code: string; message: string }>
> = {
  FAIL: { code: "CARRIER_REJECTED", message: "The network refused the message" },
  UNDELIVERED: { code: "UNREACHABLE", message: "The handset could not be reached" },
};

/** A route's behaviour for messages. */
export interface MessageBehaviour {
  messageOutcome: MessageOutcome;
  messageDeliverSeconds: number;
  messageErrorCode: string;
  messageErrorMessage: string;
}

export const DEFAULT_MESSAGE_BEHAVIOUR: Readonly<MessageBehaviour> = Object.freeze({
  messageOutcome: "DELIVER",
  messageDeliverSeconds: DEFAULT_MESSAGE_DELIVER_SECONDS,
  messageErrorCode: "",
  messageErrorMessage: "",
});

/** What a create request says about messages; undefined or empty means "the default". */
export interface MessageBehaviourInput {
  messageOutcome?: MessageOutcome | undefined;
  messageDeliverSeconds?: number | undefined;
  messageErrorCode?: string | undefined;
  messageErrorMessage?: string | undefined;
}

const ERROR_CODE = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_ERROR_MESSAGE = 500;

/** Adds the violations of `input` to `violations` (fields named by `at`) and returns the behaviour with defaults. */
export function validateMessageBehaviour(
  input: MessageBehaviourInput,
  at: (name: string) => string,
  violations: FieldViolation[],
): MessageBehaviour {
  const outcome = input.messageOutcome ?? "DELIVER";
  if (!MESSAGE_OUTCOMES.includes(outcome)) {
    violations.push({
      field: at("message_outcome"),
      description: `must be one of ${MESSAGE_OUTCOMES.map((o) => `MESSAGE_${o}`).join(", ")}`,
    });
  }
  const seconds = input.messageDeliverSeconds;
  if (
    seconds !== undefined &&
    (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_MESSAGE_DELIVER_SECONDS)
  ) {
    violations.push({
      field: at("message_deliver_seconds"),
      description: `must be a whole number from 0 to ${MAX_MESSAGE_DELIVER_SECONDS}`,
    });
  }
  const code = input.messageErrorCode ?? "";
  const text = input.messageErrorMessage ?? "";
  if (outcome === "DELIVER") {
    if (code !== "") {
      violations.push({
        field: at("message_error_code"),
        description: "only MESSAGE_FAIL and MESSAGE_UNDELIVERED have one",
      });
    }
    if (text !== "") {
      violations.push({
        field: at("message_error_message"),
        description: "only MESSAGE_FAIL and MESSAGE_UNDELIVERED have one",
      });
    }
  } else {
    if (code !== "" && !ERROR_CODE.test(code)) {
      violations.push({
        field: at("message_error_code"),
        description: "must be 1 to 64 letters, digits, _, . or -",
      });
    }
    if (text.length > MAX_ERROR_MESSAGE) {
      violations.push({
        field: at("message_error_message"),
        description: `must be at most ${MAX_ERROR_MESSAGE} characters`,
      });
    }
  }
  const defaults =
    outcome === "DELIVER" || !MESSAGE_OUTCOMES.includes(outcome)
      ? { code: "", message: "" }
      : DEFAULT_MESSAGE_ERRORS[outcome];
  return {
    messageOutcome: outcome,
    messageDeliverSeconds: seconds ?? DEFAULT_MESSAGE_DELIVER_SECONDS,
    messageErrorCode: code || defaults.code,
    messageErrorMessage: text || defaults.message,
  };
}
