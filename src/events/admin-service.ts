/**
 * The operator's WebhookDeliveries service (admin API): each webhook event
 * of a project (call-control exchanges included, event CALL) with its
 * state, next attempt time and every request made; filterable (filter.ts).
 */
import { create } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type WebhookDeliveries,
  type WebhookDelivery,
  WebhookDelivery_State,
  WebhookDeliverySchema,
} from "../../gen/switchboard/admin/v1/webhooks_pb.js";
import { PROJECT_TYPE } from "../admin/projects.js";
import type { ProjectsRepository } from "../admin/projects-repository.js";
import { failedPrecondition, notFound } from "../api/errors.js";
import { parseParent, parseResourceName } from "../api/names.js";
import { type PageResult, readPage } from "../api/pagination.js";
import { type Clock, systemClock } from "../clock.js";
import { compileDeliveryFilter } from "./filter.js";
import type { DeliveryWithAttempts, WebhookEventsRepository } from "./repository.js";

const STATES = {
  PENDING: WebhookDelivery_State.PENDING,
  DELIVERED: WebhookDelivery_State.DELIVERED,
  FAILED: WebhookDelivery_State.FAILED,
} as const;

export function deliveryToProto({ event, attempts }: DeliveryWithAttempts): WebhookDelivery {
  return create(WebhookDeliverySchema, {
    name: `projects/${event.projectId}/webhookDeliveries/${event.id}`,
    webhookId: event.id,
    eventType: event.eventType,
    uris: event.uris,
    state: STATES[event.state],
    roundCount: event.attemptCount,
    ...(event.nextAttemptTime ? { nextAttemptTime: timestampFromDate(event.nextAttemptTime) } : {}),
    orderingKey: event.orderingKey ?? "",
    attempts: attempts.map((a) => ({
      round: a.round,
      uri: a.uri,
      statusCode: a.statusCode ?? 0,
      error: a.error ?? "",
      startTime: timestampFromDate(a.startTime),
      finishTime: timestampFromDate(a.finishTime),
      duration: durationFromMs(a.durationMs),
      responseBody: a.responseBody ?? "",
      responseTruncated: a.responseTruncated,
    })),
    createTime: timestampFromDate(event.createTime),
    ...(event.completeTime ? { completeTime: timestampFromDate(event.completeTime) } : {}),
    body: event.body,
    call: event.callId === null ? "" : `projects/${event.projectId}/calls/${event.callId}`,
  });
}

export const DELIVERY_TYPE = "admin.switchboard/WebhookDelivery";

/** The deliveries of a project: the operator's admin view and the project inspector (inspector-service.ts). */
export class WebhookDeliveriesDomain {
  constructor(
    private readonly repo: WebhookEventsRepository,
    private readonly projects: ProjectsRepository,
    private readonly clock: Clock = systemClock,
    private readonly kick: () => void = () => {},
  ) {}

  /** A page, newest first; `filter` as in filter.ts (bound into the page token). */
  async list(
    projectId: string,
    pageSize: number,
    pageToken: string,
    filter = "",
  ): Promise<PageResult<DeliveryWithAttempts>> {
    const where = compileDeliveryFilter(filter);
    if (!(await this.projects.get(projectId))) throw notFound(PROJECT_TYPE, `projects/${projectId}`);
    const page = await readPage(
      {
        pageSize,
        pageToken,
        query: { method: "ListWebhookDeliveries", parent: projectId, filter: filter.trim() },
      },
      async (after, limit) =>
        (await this.repo.list(projectId, after, limit, where)).map((d) => ({
          ...d,
          createTime: d.event.createTime,
          id: d.event.id,
        })),
    );
    return page;
  }

  /** One delivery of the project `name` names; NOT_FOUND otherwise. */
  async get(name: string): Promise<DeliveryWithAttempts> {
    const ref = parseResourceName(name, "webhookDeliveries", "name");
    const found = await this.repo.get(ref.id);
    if (found === undefined || found.event.projectId !== ref.projectId) throw notFound(DELIVERY_TYPE, name);
    return found;
  }

  /** One more round of a FAILED delivery, due now; FAILED_PRECONDITION otherwise. */
  async redeliver(name: string): Promise<DeliveryWithAttempts> {
    const current = await this.get(name);
    if (current.event.eventType === "CALL") {
      throw failedPrecondition(
        "CALL_CONTROL_NOT_REDELIVERABLE",
        "a call-control exchange is answered while the call waits and cannot be redelivered",
      );
    }
    const row = await this.repo.redeliver(current.event.id, this.clock.now());
    if (row === undefined) {
      throw failedPrecondition(
        "DELIVERY_NOT_FAILED",
        `only a FAILED delivery can be redelivered; ${name} is ${current.event.state}`,
        { state: current.event.state },
      );
    }
    this.kick();
    return { event: row, attempts: current.attempts };
  }
}

export function webhookDeliveriesService(
  domain: WebhookDeliveriesDomain,
): ServiceImpl<typeof WebhookDeliveries> {
  return {
    async listWebhookDeliveries(req) {
      const page = await domain.list(parseParent(req.parent), req.pageSize, req.pageToken, req.filter);
      return { webhookDeliveries: page.items.map(deliveryToProto), nextPageToken: page.nextPageToken };
    },
  };
}
