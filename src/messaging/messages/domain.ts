/**
 * Messages: text messages of a project, incoming (the network delivers
 * them, see incoming.ts) and outgoing (sent through the API, outgoing.ts).
 *
 * - Get: NOT_FOUND for a message that is not in the project.
 * - List: newest first (keyset pagination on create_time, id); `start_time`
 *   (inclusive) and `end_time` (exclusive) bound create_time; `filter` is
 *   an AIP-160 subset (filter.ts), bound into the page token.
 */
import { and, gte, lt } from "drizzle-orm";
import { notFound } from "../../api/errors.js";
import { projectName, type ResourceRef, resourceName } from "../../api/names.js";
import { type PageResult, readPage } from "../../api/pagination.js";
import type {
  MessageClassificationValue,
  MessageDirectionValue,
  MessageEncodingValue,
  MessageRow,
  MessageStatusValue,
  UnsubscribeContentBehaviorValue,
} from "../../db/schema/index.js";
import type { Price } from "../../voice/calls/rates.js";
import { compileMessageFilter } from "./filter.js";
import type { MessagesRepository } from "./repository.js";

export const RESOURCE_TYPE = "messaging.api.enfonica.com/Message";
export const COLLECTION = "messages";

export interface Message {
  projectId: string;
  id: string;
  name: string;
  to: string;
  from: string;
  body: string;
  direction: MessageDirectionValue;
  status: MessageStatusValue;
  encoding: MessageEncodingValue;
  segmentCount: number;
  createTime: Date;
  statusUpdateUrl: string;
  replyUrl: string;
  validityPeriodSeconds: number;
  smartEncoding: boolean;
  errorCode: string;
  errorMessage: string;
  price: Price | undefined;
  createIdentity: string;
  sendTime: Date | undefined;
  deliverTime: Date | undefined;
  labels: Record<string, string>;
  classification: MessageClassificationValue | undefined;
  unsubscribeContentBehavior: UnsubscribeContentBehaviorValue | undefined;
}

export interface MessageListParams {
  pageSize: number;
  pageToken: string;
  startTime: Date | undefined;
  endTime: Date | undefined;
  filter: string;
}

export function toMessage(row: MessageRow): Message {
  const ref = { projectId: row.projectId, id: row.id };
  return {
    ...ref,
    name: resourceName(COLLECTION, ref),
    to: row.to,
    from: row.from,
    body: row.body,
    direction: row.direction,
    status: row.status,
    encoding: row.encoding,
    segmentCount: row.segmentCount,
    createTime: row.createTime,
    statusUpdateUrl: row.statusUpdateUrl,
    replyUrl: row.replyUrl,
    validityPeriodSeconds: row.validityPeriodSeconds,
    smartEncoding: row.smartEncoding,
    errorCode: row.errorCode,
    errorMessage: row.errorMessage,
    price:
      row.priceCurrency === null
        ? undefined
        : { currency: row.priceCurrency, units: row.priceUnits ?? 0, nanos: row.priceNanos ?? 0 },
    createIdentity: row.createIdentity,
    sendTime: row.sendTime ?? undefined,
    deliverTime: row.deliverTime ?? undefined,
    labels: row.labels,
    classification: row.classification ?? undefined,
    unsubscribeContentBehavior: row.unsubscribeContentBehavior ?? undefined,
  };
}

export class MessagesDomain {
  constructor(private readonly repository: MessagesRepository) {}

  async get(ref: ResourceRef): Promise<Message> {
    const row = await this.repository.find(ref.projectId, ref.id);
    if (row === undefined) throw notFound(RESOURCE_TYPE, resourceName(COLLECTION, ref));
    return toMessage(row);
  }

  async list(projectId: string, params: MessageListParams): Promise<PageResult<Message>> {
    const filter = compileMessageFilter(params.filter);
    const query = {
      method: "ListMessages",
      parent: projectName(projectId),
      startTime: params.startTime?.getTime() ?? "",
      endTime: params.endTime?.getTime() ?? "",
      filter: params.filter.trim(),
    };
    const { startTime, endTime } = params;
    const result = await readPage({ ...params, query }, (after, limit) =>
      this.repository.list(projectId, after, limit, (t) =>
        and(
          startTime === undefined ? undefined : gte(t.createTime, startTime),
          endTime === undefined ? undefined : lt(t.createTime, endTime),
          filter,
        ),
      ),
    );
    return { items: result.items.map(toMessage), nextPageToken: result.nextPageToken };
  }
}
