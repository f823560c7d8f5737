/**
 * The operator's WebhookDeliveries service (admin API): each webhook event
 * of a project with its state, next attempt time and every request made.
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
import { notFound } from "../api/errors.js";
import { parseParent } from "../api/names.js";
import { type PageResult, readPage } from "../api/pagination.js";
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
    })),
    createTime: timestampFromDate(event.createTime),
    ...(event.completeTime ? { completeTime: timestampFromDate(event.completeTime) } : {}),
    body: event.body,
  });
}

export class WebhookDeliveriesDomain {
  constructor(
    private readonly repo: WebhookEventsRepository,
    private readonly projects: ProjectsRepository,
  ) {}

  async list(
    projectId: string,
    pageSize: number,
    pageToken: string,
  ): Promise<PageResult<DeliveryWithAttempts>> {
    if (!(await this.projects.get(projectId))) throw notFound(PROJECT_TYPE, `projects/${projectId}`);
    const page = await readPage(
      { pageSize, pageToken, query: { method: "ListWebhookDeliveries", parent: projectId } },
      async (after, limit) =>
        (await this.repo.list(projectId, after, limit)).map((d) => ({
          ...d,
          createTime: d.event.createTime,
          id: d.event.id,
        })),
    );
    return page;
  }
}

export function webhookDeliveriesService(
  domain: WebhookDeliveriesDomain,
): ServiceImpl<typeof WebhookDeliveries> {
  return {
    async listWebhookDeliveries(req) {
      const page = await domain.list(parseParent(req.parent), req.pageSize, req.pageToken);
      return { webhookDeliveries: page.items.map(deliveryToProto), nextPageToken: page.nextPageToken };
    },
  };
}
