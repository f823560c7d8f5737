/**
 * The operator's SimulatorAdmin service: proto <-> SimulatorRoutes (rules in
 * routes.ts), the network's incoming messages (rules in
 * src/messaging/messages/incoming.ts) and incoming calls (rules in
 * src/voice/calls/incoming.ts; a call the network would not connect is
 * FAILED_PRECONDITION with the rejection reason in ErrorInfo).
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type SimulatorAdmin,
  type SimulatorRoute,
  SimulatorRoute_Audio,
  SimulatorRoute_MessageOutcome,
  SimulatorRoute_Outcome,
  SimulatorRouteSchema,
} from "../../../gen/switchboard/admin/v1/simulator_pb.js";
import { badField } from "../../api/errors.js";
import type { IncomingMessages } from "../../messaging/messages/incoming.js";
import { messageToProto } from "../../messaging/messages/service.js";
import { callName } from "../../voice/calls/domain.js";
import type { IncomingCalls } from "../../voice/calls/incoming.js";
import type { MessageOutcome } from "./message-outcomes.js";
import { type Audio, type Outcome, ROUTE_COLLECTION, type Route, type SimulatorRoutes } from "./routes.js";

export function routeToProto(route: Route): SimulatorRoute {
  return create(SimulatorRouteSchema, {
    name: `${ROUTE_COLLECTION}/${route.id}`,
    prefix: route.prefix,
    outcome: SimulatorRoute_Outcome[route.outcome],
    ringSeconds: route.ringSeconds,
    talkSeconds: route.talkSeconds,
    audio: SimulatorRoute_Audio[route.audio],
    digits: route.digits,
    words: route.words,
    errorCode: route.errorCode,
    errorMessage: route.errorMessage,
    messageOutcome: SimulatorRoute_MessageOutcome[`MESSAGE_${route.messageOutcome}`],
    messageDeliverSeconds: route.messageDeliverSeconds,
    messageErrorCode: route.messageErrorCode,
    messageErrorMessage: route.messageErrorMessage,
    createTime: timestampFromDate(route.createTime),
  });
}

/** An enum value's name, undefined for UNSPECIFIED; an undefined number keeps its number so validation names it. */
function enumName<T extends string>(names: Record<number, string>, value: number): T | undefined {
  if (value === 0) return undefined;
  return (names[value] ?? String(value)) as T;
}

function routeId(name: string, field: string): string {
  const m = /^simulator\/routes\/([^/]+)$/.exec(name);
  if (!m) throw badField(field, `must be ${ROUTE_COLLECTION}/{route}`, "name.format");
  return m[1]!;
}

export function simulatorAdminService(
  routes: SimulatorRoutes,
  incoming: IncomingMessages,
  incomingCalls: IncomingCalls,
): ServiceImpl<typeof SimulatorAdmin> {
  return {
    async createRoute(req) {
      const r = req.route!;
      const route = await routes.create({
        prefix: r.prefix,
        outcome: enumName<Outcome>(SimulatorRoute_Outcome, r.outcome),
        ringSeconds: r.ringSeconds,
        talkSeconds: r.talkSeconds,
        audio: enumName<Audio>(SimulatorRoute_Audio, r.audio),
        digits: r.digits,
        words: r.words,
        errorCode: r.errorCode,
        errorMessage: r.errorMessage,
        messageOutcome: enumName<string>(SimulatorRoute_MessageOutcome, r.messageOutcome)?.replace(
          /^MESSAGE_/,
          "",
        ) as MessageOutcome | undefined,
        messageDeliverSeconds: r.messageDeliverSeconds,
        messageErrorCode: r.messageErrorCode,
        messageErrorMessage: r.messageErrorMessage,
      });
      return routeToProto(route);
    },
    async getRoute(req) {
      return routeToProto(await routes.get(routeId(req.name, "name")));
    },
    async listRoutes(req) {
      const page = await routes.list(req.pageSize, req.pageToken);
      return { routes: page.items.map(routeToProto), nextPageToken: page.nextPageToken };
    },
    async deleteRoute(req) {
      await routes.delete(routeId(req.name, "name"));
      return {};
    },
    async injectIncomingMessage(req) {
      return messageToProto(await incoming.receive({ to: req.to, from: req.from, body: req.body }));
    },
    async injectIncomingCall(req) {
      const row = await incomingCalls.receive({
        to: req.to,
        from: req.from,
        isPrivate: req.isPrivate,
        sipDomain: req.sipDomain,
        sourceIp: req.sourceIp,
        user: req.user,
      });
      return { call: callName(row) };
    },
  };
}
