/**
 * Messages: text messages of a project. So far only incoming ones exist
 * (the network delivers them, see incoming.ts); sending (CreateMessage) is
 * not built yet and answers UNIMPLEMENTED.
 *
 * - Get: NOT_FOUND for a message that is not in the project.
 * - List: newest first (keyset pagination on create_time, id); `start_time`
 *   (inclusive) and `end_time` (exclusive) bound create_time; `filter` is not
 *   supported yet: a non-empty one is INVALID_ARGUMENT naming `filter`.
 */
import { and, gte, lt } from "drizzle-orm";
import { badField, notFound } from "../../api/errors.js";
import { projectName, type ResourceRef, resourceName } from "../../api/names.js";
import { type PageResult, readPage } from "../../api/pagination.js";
import type {
  MessageDirectionValue,
  MessageEncodingValue,
  MessageRow,
  MessageStatusValue,
} from "../../db/schema/index.js";
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
    if (params.filter !== "") throw badField("filter", "filters are not supported yet", "filter.unsupported");
    const query = {
      method: "ListMessages",
      parent: projectName(projectId),
      startTime: params.startTime?.getTime() ?? "",
      endTime: params.endTime?.getTime() ?? "",
    };
    const { startTime, endTime } = params;
    const result = await readPage({ ...params, query }, (after, limit) =>
      this.repository.list(projectId, after, limit, (t) =>
        and(
          startTime === undefined ? undefined : gte(t.createTime, startTime),
          endTime === undefined ? undefined : lt(t.createTime, endTime),
        ),
      ),
    );
    return { items: result.items.map(toMessage), nextPageToken: result.nextPageToken };
  }
}
