/**
 * The project's webhook inspector (`switchboard.webhooks.v1.WebhookDeliveries`):
 * the same deliveries as the operator's admin view, read and redelivered
 * by the project's own keys (`voice.webhookDeliveries.list` / `.get` /
 * `.redeliver`; the authorization interceptor checks the project the
 * request names, so a key sees its own projects only).
 */
import type { ServiceImpl } from "@connectrpc/connect";
import type { WebhookDeliveries } from "../../gen/switchboard/webhooks/v1/webhook_deliveries_pb.js";
import { parseParent } from "../api/names.js";
import { deliveryToProto, type WebhookDeliveriesDomain } from "./admin-service.js";

export function webhookInspectorService(
  domain: WebhookDeliveriesDomain,
): ServiceImpl<typeof WebhookDeliveries> {
  return {
    async listWebhookDeliveries(req) {
      const page = await domain.list(parseParent(req.parent), req.pageSize, req.pageToken, req.filter);
      return { webhookDeliveries: page.items.map(deliveryToProto), nextPageToken: page.nextPageToken };
    },
    async getWebhookDelivery(req) {
      return deliveryToProto(await domain.get(req.name));
    },
    async redeliverWebhookDelivery(req) {
      return deliveryToProto(await domain.redeliver(req.name));
    },
  };
}
