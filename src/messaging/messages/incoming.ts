/**
 * Incoming messages: what happens when the network (the simulator, for now)
 * delivers a text message to a number.
 *
 * - `to` and `from` must be valid numbers written in E.164 (libphonenumber-js
 *   full metadata); `body` at most MAX_BODY_CHARS characters (code points),
 *   empty allowed. Violations are INVALID_ARGUMENT naming `to`, `from`,
 *   `body`.
 * - The message belongs to the phone number instance holding `to` (the
 *   range's instance for a number of a range). No holder, or a holder that
 *   is not ACTIVE, is FAILED_PRECONDITION `NUMBER_NOT_IN_SERVICE`: the
 *   network would not deliver it, and nothing is recorded. Likewise a
 *   number whose capabilities lack SMS (a voice-only landline):
 *   FAILED_PRECONDITION `NUMBER_NOT_SMS_CAPABLE` (numbering/capabilities.ts).
 * - In one transaction: the message is recorded (INCOMING, RECEIVED,
 *   encoding and segment count per encoding.ts); a body that is an opt-out
 *   keyword (OPT_OUT_KEYWORDS, after trimming whitespace, any case) makes
 *   `from` an unsubscriber of the project with method MESSAGE — unless it is
 *   one already, which is then left exactly as it is (also under concurrent
 *   deliveries: the unique index decides, nothing fails); and when the
 *   instance has incoming_message_handler_uris, an INCOMING_MESSAGE webhook
 *   whose body is the Message in proto3 JSON is queued to them, in order
 *   (falling through to the next URI is the delivery worker's job). The
 *   webhook is queued for opt-outs too: the application still sees the
 *   message.
 * - A reply: when the project's latest outgoing message from `to` to
 *   `from` has a `reply_url`, the INCOMING_MESSAGE webhook goes to that URL
 *   instead of the instance's handlers (so a conversation an application
 *   started comes back to it).
 * - After the commit the delivery worker is kicked, so the webhook leaves at
 *   once rather than at the next poll.
 */
import { toJsonString } from "@bufbuild/protobuf";
import { MessageSchema } from "../../../gen/enfonica/messaging/v1/messages_pb.js";
import { type FieldViolation, failedPrecondition, invalidArgument } from "../../api/errors.js";
import { newResourceId } from "../../api/ids.js";
import { charLength } from "../../api/labels.js";
import type { Clock } from "../../clock.js";
import type { Db } from "../../db/client.js";
import { enqueueWebhook } from "../../events/outbox.js";
import { capabilityRefusal } from "../../numbering/capabilities.js";
import type { PhoneNumberInstance } from "../../numbering/phone-number-instances/model.js";
import { parseE164 } from "../unsubscribers/domain.js";
import { UnsubscribersRepository } from "../unsubscribers/repository.js";
import { type Message, toMessage } from "./domain.js";
import { encodingOf } from "./encoding.js";
import { messageToProto } from "./proto.js";
import { MessagesRepository } from "./repository.js";

/** The longest body accepted, in characters (ten concatenated GSM-7 segments and then some). */
export const MAX_BODY_CHARS = 1600;

/** Bodies that opt the sender out (compared trimmed and upper-cased). */
export const OPT_OUT_KEYWORDS: ReadonlySet<string> = new Set([
  "STOP",
  "STOPALL",
  "UNSUBSCRIBE",
  "CANCEL",
  "END",
  "QUIT",
]);

export function isOptOut(body: string): boolean {
  return OPT_OUT_KEYWORDS.has(body.trim().toUpperCase());
}

export interface IncomingMessage {
  to: string;
  from: string;
  body: string;
}

/** Where incoming traffic to a number goes (the numbering area answers). */
export interface NumberDirectory {
  findByNumber(phoneNumber: string): Promise<PhoneNumberInstance | undefined>;
}

export interface IncomingMessagesDeps {
  db: Db;
  numbers: NumberDirectory;
  clock: Clock;
  /** Tells the webhook worker there is work (optional: without it the worker's poll finds it). */
  kickWebhooks?: () => void;
}

function phoneViolations(field: string, value: string): FieldViolation[] {
  if (value === "") return [{ field, description: "is required", reason: "required" }];
  if (parseE164(value) === undefined) {
    return [
      {
        field,
        description: "must be a valid phone number in E.164 format, for example +61491570156",
        reason: "phone.e164",
      },
    ];
  }
  return [];
}

export function incomingViolations(input: IncomingMessage): FieldViolation[] {
  const violations = [...phoneViolations("to", input.to), ...phoneViolations("from", input.from)];
  if (charLength(input.body) > MAX_BODY_CHARS) {
    violations.push({
      field: "body",
      description: `must be at most ${MAX_BODY_CHARS} characters`,
      reason: "string.max_len",
    });
  }
  return violations;
}

export class IncomingMessages {
  constructor(private readonly deps: IncomingMessagesDeps) {}

  /** Delivers `input` to the project of the instance holding `input.to`; returns the recorded message. */
  async receive(input: IncomingMessage): Promise<Message> {
    const violations = incomingViolations(input);
    if (violations.length > 0) throw invalidArgument(violations);

    const instance = await this.deps.numbers.findByNumber(input.to);
    if (instance === undefined || instance.lifecycleState !== "ACTIVE") {
      const metadata: Record<string, string> = { to: input.to };
      if (instance !== undefined) metadata.lifecycle_state = instance.lifecycleState;
      throw failedPrecondition(
        "NUMBER_NOT_IN_SERVICE",
        instance === undefined
          ? `${input.to} is not held by any phone number instance`
          : `${input.to} is held by an instance that is ${instance.lifecycleState}, not ACTIVE`,
        metadata,
      );
    }

    const incapable = capabilityRefusal(instance, input.to, "SMS");
    if (incapable !== undefined) throw incapable;

    const now = this.deps.clock.now();
    const { encoding, segmentCount } = encodingOf(input.body);
    const replyTo = await new MessagesRepository(this.deps.db).latestOutgoing(
      instance.projectId,
      input.to,
      input.from,
    );
    const uris =
      replyTo !== undefined && replyTo.replyUrl !== ""
        ? [replyTo.replyUrl]
        : instance.incomingMessageHandlerUris;
    const message = await this.deps.db.transaction(async (tx) => {
      const row = await new MessagesRepository(tx).insert({
        id: newResourceId(),
        projectId: instance.projectId,
        to: input.to,
        from: input.from,
        body: input.body,
        direction: "INCOMING",
        status: "RECEIVED",
        encoding,
        segmentCount,
        createTime: now,
      });
      const recorded = toMessage(row);
      if (isOptOut(input.body)) {
        await new UnsubscribersRepository(tx).insertIfAbsent({
          id: newResourceId(),
          projectId: instance.projectId,
          phone: input.from,
          unsubscribeMethod: "MESSAGE",
          labels: {},
          createTime: now,
          updateTime: now,
        });
      }
      if (uris.length > 0) {
        await enqueueWebhook(tx, {
          projectId: instance.projectId,
          eventType: "INCOMING_MESSAGE",
          uris,
          body: toJsonString(MessageSchema, messageToProto(recorded)),
          now,
        });
      }
      return recorded;
    });
    if (uris.length > 0) this.deps.kickWebhooks?.();
    return message;
  }
}
