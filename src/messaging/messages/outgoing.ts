/**
 * Outgoing messages: CreateMessage.
 *
 * Rules (violations are INVALID_ARGUMENT naming the proto field path, all
 * reported together; nothing is recorded):
 * - `message.to`: required; a valid number written in E.164.
 * - `message.from`: required; a valid number in E.164 held by an ACTIVE
 *   phone number instance of the project (a number of a range included).
 *   Alphanumeric sender IDs are not supported. A number without the SMS
 *   capability is FAILED_PRECONDITION `NUMBER_NOT_SMS_CAPABLE`.
 * - `message.body`: 1 to MAX_BODY_CHARS characters (code points).
 * - `message.status_update_url`, `message.reply_url`: empty or an absolute
 *   http(s) URL of at most 2000 characters.
 * - `message.validity_period_seconds`: 0 (= 36000) or 1..36000.
 * - `message.labels`: as everywhere (at most 50; keys 1..100, values ..1000).
 * - `message.classification`, `message.unsubscribe_content_behavior`: a
 *   defined value; UNSPECIFIED means UNCLASSIFIED and NONE.
 * - Output-only fields (name, direction, status, times, price, ...) are
 *   ignored.
 *
 * The unsubscriber rule: a MARKETING or UNCLASSIFIED message to a number
 * that is an unsubscriber of the project is FAILED_PRECONDITION with reason
 * `RECIPIENT_UNSUBSCRIBED` (metadata `to`, `unsubscriber`,
 * `classification`): opting out stops everything that is not known to be
 * transactional. TRANSACTIONAL messages (one-time codes, receipts, alerts
 * the recipient asked for) are sent to unsubscribers too. The check and the
 * insert are one transaction.
 *
 * The body as sent: with `smart_encoding`, look-alikes replaced
 * (smart-encoding.ts); with APPEND_URL, `\nOpt out: <link>` appended
 * (opt-out-links.ts). Encoding and segment count are those of that body
 * (encoding.ts); the price is the rate of `to` times the segments
 * (rates.ts). The message is recorded QUEUED, direction OUTGOING, with its
 * QUEUED status update (when `status_update_url` is set) and the
 * Idempotency-Key in the same transaction, then handed to the network.
 */
import { toJsonString } from "@bufbuild/protobuf";
import { MessageSchema } from "../../../gen/enfonica/messaging/v1/messages_pb.js";
import { type FieldViolation, failedPrecondition, invalidArgument } from "../../api/errors.js";
import { recordCreated } from "../../api/idempotency/scope.js";
import { newResourceId } from "../../api/ids.js";
import { charLength, labelViolations } from "../../api/labels.js";
import { projectName, resourceName } from "../../api/names.js";
import type { Clock } from "../../clock.js";
import type { Db, DbOrTx } from "../../db/client.js";
import {
  MESSAGE_CLASSIFICATIONS,
  type MessageClassificationValue,
  type MessageRow,
  UNSUBSCRIBE_CONTENT_BEHAVIORS,
  type UnsubscribeContentBehaviorValue,
} from "../../db/schema/index.js";
import { enqueueWebhook } from "../../events/outbox.js";
import { capabilityRefusal } from "../../numbering/capabilities.js";
import { parseE164 } from "../unsubscribers/domain.js";
import { UnsubscribersRepository } from "../unsubscribers/repository.js";
import { COLLECTION, type Message, toMessage } from "./domain.js";
import { encodingOf } from "./encoding.js";
import type { NumberDirectory } from "./incoming.js";
import { MAX_BODY_CHARS } from "./incoming.js";
import { hashOptOutToken, newOptOutToken, optOutSuffix, optOutUrl } from "./opt-out-links.js";
import { messageToProto } from "./proto.js";
import { type MessageRates, messagePrice } from "./rates.js";
import { MessagesRepository } from "./repository.js";
import { smartEncode } from "./smart-encoding.js";

export const MAX_VALIDITY_PERIOD_SECONDS = 36_000;
export const MAX_URL_CHARS = 2000;

export interface NewOutgoingMessage {
  to: string;
  from: string;
  body: string;
  statusUpdateUrl: string;
  replyUrl: string;
  validityPeriodSeconds: number;
  smartEncoding: boolean;
  labels: Record<string, string>;
  /** undefined: UNCLASSIFIED; a name outside MESSAGE_CLASSIFICATIONS is a violation. */
  classification: string | undefined;
  /** undefined: NONE. */
  unsubscribeContentBehavior: string | undefined;
}

/** Where sent messages go: the (simulated) network. */
export interface MessageNetwork {
  send(message: MessageRow): void;
}

export interface OutgoingMessagesDeps {
  db: Db;
  clock: Clock;
  numbers: NumberDirectory;
  network: MessageNetwork;
  rates: MessageRates;
  /** The origin opt-out links start with (`https://sms.example.com`). */
  publicBaseUrl: () => string;
  kickWebhooks?: () => void;
}

function isHttpUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
}

function phoneViolation(field: string, value: string, example: string): FieldViolation[] {
  if (value === "") return [{ field, description: "is required", reason: "required" }];
  if (parseE164(value) === undefined) {
    return [
      {
        field,
        description: `must be a valid phone number in E.164 format, for example ${example}`,
        reason: "phone.e164",
      },
    ];
  }
  return [];
}

/** Everything wrong with `input` that can be told without the database. */
export function outgoingViolations(input: NewOutgoingMessage): FieldViolation[] {
  const v: FieldViolation[] = [
    ...phoneViolation("message.to", input.to, "+61491570156"),
    ...phoneViolation("message.from", input.from, "+61491570157 (alphanumeric sender IDs are not supported)"),
  ];
  const chars = charLength(input.body);
  if (chars === 0) v.push({ field: "message.body", description: "is required", reason: "required" });
  else if (chars > MAX_BODY_CHARS) {
    v.push({
      field: "message.body",
      description: `must be at most ${MAX_BODY_CHARS} characters`,
      reason: "string.max_len",
    });
  }
  for (const [field, url] of [
    ["message.status_update_url", input.statusUpdateUrl],
    ["message.reply_url", input.replyUrl],
  ] as const) {
    if (url !== "" && (url.length > MAX_URL_CHARS || !isHttpUrl(url))) {
      v.push({
        field,
        description: `must be an absolute http or https URL of at most ${MAX_URL_CHARS} characters`,
        reason: "string.uri",
      });
    }
  }
  const validity = input.validityPeriodSeconds;
  if (!Number.isInteger(validity) || validity < 0 || validity > MAX_VALIDITY_PERIOD_SECONDS) {
    v.push({
      field: "message.validity_period_seconds",
      description: `must be 1 to ${MAX_VALIDITY_PERIOD_SECONDS} (0 means ${MAX_VALIDITY_PERIOD_SECONDS})`,
      reason: "int32.range",
    });
  }
  v.push(...labelViolations(input.labels, "message.labels"));
  if (
    input.classification !== undefined &&
    !(MESSAGE_CLASSIFICATIONS as readonly string[]).includes(input.classification)
  ) {
    v.push({
      field: "message.classification",
      description: `must be one of ${MESSAGE_CLASSIFICATIONS.join(", ")}`,
      reason: "enum.defined_only",
    });
  }
  if (
    input.unsubscribeContentBehavior !== undefined &&
    !(UNSUBSCRIBE_CONTENT_BEHAVIORS as readonly string[]).includes(input.unsubscribeContentBehavior)
  ) {
    v.push({
      field: "message.unsubscribe_content_behavior",
      description: `must be one of ${UNSUBSCRIBE_CONTENT_BEHAVIORS.join(", ")}`,
      reason: "enum.defined_only",
    });
  }
  return v;
}

/** Queues the MESSAGE_STATUS_UPDATE of `row` (its current status) when it has a status URL. */
export async function enqueueStatusUpdate(tx: DbOrTx, row: MessageRow, now: Date): Promise<boolean> {
  if (row.statusUpdateUrl === "") return false;
  const message = toMessage(row);
  await enqueueWebhook(tx, {
    projectId: row.projectId,
    eventType: "MESSAGE_STATUS_UPDATE",
    uris: [row.statusUpdateUrl],
    body: toJsonString(MessageSchema, messageToProto(message)),
    orderingKey: message.name,
    now,
  });
  return true;
}

export class OutgoingMessages {
  constructor(private readonly deps: OutgoingMessagesDeps) {}

  /** Sends `input` from the project; returns the message, QUEUED. `identity` becomes `create_identity`. */
  async create(projectId: string, input: NewOutgoingMessage, identity: string): Promise<Message> {
    const violations = outgoingViolations(input);
    const instance = violations.some((v) => v.field === "message.from")
      ? undefined
      : await this.deps.numbers.findByNumber(input.from);
    if (
      !violations.some((v) => v.field === "message.from") &&
      (instance === undefined || instance.projectId !== projectId || instance.lifecycleState !== "ACTIVE")
    ) {
      violations.push({
        field: "message.from",
        description: "must be a number of an ACTIVE phone number instance of this project",
        reason: "from.not_owned",
      });
    }
    if (violations.length > 0) throw invalidArgument(violations);
    const incapable = instance && capabilityRefusal(instance, input.from, "SMS", "message.from");
    if (incapable !== undefined) throw incapable;

    const classification = (input.classification ?? "UNCLASSIFIED") as MessageClassificationValue;
    const behaviour = (input.unsubscribeContentBehavior ?? "NONE") as UnsubscribeContentBehaviorValue;
    let body = input.smartEncoding ? smartEncode(input.body) : input.body;
    let optOutTokenHash: string | null = null;
    if (behaviour === "APPEND_URL") {
      const token = newOptOutToken();
      optOutTokenHash = hashOptOutToken(token);
      body += optOutSuffix(optOutUrl(this.deps.publicBaseUrl(), token));
    }
    const { encoding, segmentCount } = encodingOf(body);
    const price = messagePrice(this.deps.rates, input.to, segmentCount);
    const now = this.deps.clock.now();
    const id = newResourceId();

    const row = await this.deps.db.transaction(async (tx) => {
      if (classification !== "TRANSACTIONAL") {
        const unsubscriber = await new UnsubscribersRepository(tx).findByPhone(projectId, input.to);
        if (unsubscriber !== undefined) {
          throw failedPrecondition(
            "RECIPIENT_UNSUBSCRIBED",
            `${input.to} unsubscribed from the messages of ${projectName(projectId)}; only TRANSACTIONAL messages may be sent to it`,
            {
              to: input.to,
              unsubscriber: resourceName("unsubscribers", unsubscriber),
              classification,
            },
          );
        }
      }
      const inserted = await new MessagesRepository(tx).insert({
        id,
        projectId,
        to: input.to,
        from: input.from,
        body,
        direction: "OUTGOING",
        status: "QUEUED",
        encoding,
        segmentCount,
        createTime: now,
        statusUpdateUrl: input.statusUpdateUrl,
        replyUrl: input.replyUrl,
        validityPeriodSeconds: input.validityPeriodSeconds,
        smartEncoding: input.smartEncoding,
        priceCurrency: price.currency,
        priceUnits: price.units,
        priceNanos: price.nanos,
        createIdentity: identity,
        labels: input.labels,
        classification,
        unsubscribeContentBehavior: behaviour,
        optOutTokenHash,
      });
      // Idempotency-Key (src/api/idempotency/): committed with the message.
      await recordCreated(tx, resourceName(COLLECTION, { projectId, id }));
      await enqueueStatusUpdate(tx, inserted, now);
      return inserted;
    });
    if (row.statusUpdateUrl !== "") this.deps.kickWebhooks?.();
    this.deps.network.send(row);
    return toMessage(row);
  }
}
