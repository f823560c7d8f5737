/**
 * The Calls service: proto requests to the domain, rows back to protos.
 * Rules live in domain.ts (create, list filter in filter.ts); the engine
 * (engine.ts) drives created calls.
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { type Calls, ListCallsResponseSchema } from "../../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { badField } from "../../api/errors.js";
import { parseParent } from "../../api/names.js";
import { recordingFromProto } from "../sip-domains/service.js";
import type { CallsDomain } from "./domain.js";
import { callToProto } from "./proto.js";

export function callsService(domain: CallsDomain): Partial<ServiceImpl<typeof Calls>> {
  return {
    async createCall(req) {
      const projectId = parseParent(req.parent);
      const call = req.call;
      if (call === undefined) throw badField("call", "is required", "required");
      const o = call.options;
      const row = await domain.create(projectId, {
        to: call.to,
        from: call.from,
        labels: { ...call.labels },
        options:
          o === undefined
            ? undefined
            : {
                handlerUris: [...o.handlerUris],
                stateUpdateUri: o.stateUpdateUri,
                timeoutSeconds: o.timeoutSeconds,
                recording: recordingFromProto(o.recording),
              },
      });
      return callToProto(row);
    },
    async getCall(req) {
      return callToProto(await domain.get(req.name));
    },
    async listCalls(req) {
      const projectId = parseParent(req.parent);
      const page = await domain.list(projectId, {
        pageSize: req.pageSize,
        pageToken: req.pageToken,
        filter: req.filter,
      });
      return create(ListCallsResponseSchema, {
        calls: page.items.map(callToProto),
        nextPageToken: page.nextPageToken,
      });
    },
  };
}
