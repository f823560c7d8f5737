/**
 * The outermost interceptor: tells the request's context (the access log,
 * metrics, tracing) which RPC runs, on which project, for which credential,
 * and how it ended; and puts the request id in the `ErrorInfo.metadata` of
 * every error (`requestId`), so a user quoting an error quotes the id an
 * operator finds in the log. Outside an HTTP request (in-process tests) it
 * only does the latter, with the caller's `x-request-id` when given.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { ERROR_DOMAIN } from "../api/errors.js";
import { procedureOf } from "../api/procedure.js";
import {
  credentialName,
  type Policies,
  type Principal,
  principalKey,
  projectOf,
  readPath,
} from "../auth/interceptor.js";
import { codeName, currentRequest, requestIdFrom } from "./request-context.js";

interface DetailLike {
  desc?: { typeName?: string };
  value?: { metadata?: Record<string, string> };
}

/** Adds `requestId` to the error's ErrorInfo (one is added when it has none). */
function tagError(err: ConnectError, requestId: string): void {
  let tagged = false;
  for (const d of err.details as DetailLike[]) {
    if (d.desc?.typeName === ErrorInfoSchema.typeName && d.value?.metadata !== undefined) {
      d.value.metadata.requestId = requestId;
      tagged = true;
    }
  }
  if (!tagged) {
    err.details.push({
      desc: ErrorInfoSchema,
      value: create(ErrorInfoSchema, {
        reason: codeName(Code[err.code]),
        domain: ERROR_DOMAIN,
        metadata: { requestId },
      }),
    });
  }
}

/**
 * Adds the current request's id to an error answered outside the RPC
 * interceptors (the REST layer's own 404, 405 and 413), unless it already
 * has an ErrorInfo that came through them (those carry it, possibly still
 * encoded).
 */
export function tagWithCurrentRequestId(err: ConnectError): void {
  const ctx = currentRequest();
  if (ctx === undefined) return;
  const infos = (err.details as (DetailLike & { type?: string })[]).filter(
    (d) => (d.desc?.typeName ?? d.type) === ErrorInfoSchema.typeName,
  );
  if (infos.some((d) => d.desc === undefined || d.value?.metadata?.requestId !== undefined)) return;
  tagError(err, ctx.id);
}

export function createObserveInterceptor(policies: Policies): Interceptor {
  return (next) => async (req) => {
    const ctx = currentRequest();
    const requestId = ctx?.id ?? requestIdFrom(req.header.get("x-request-id") ?? undefined);
    if (ctx !== undefined) {
      ctx.service = req.service.typeName;
      ctx.method = req.method.name;
      // Connect unary looks like plain HTTP at the HTTP layer; REST was marked before.
      if (ctx.transport === "http") ctx.transport = "connect";
      const policy = policies[procedureOf(req.method)];
      const path = policy?.projects[0];
      if (path !== undefined && !req.stream) {
        const project = projectOf(readPath(req.method.input, req.message, path));
        if (project !== undefined) ctx.project = project;
      }
    }
    try {
      const res = await next(req);
      if (ctx !== undefined) {
        ctx.code = "OK";
        credentialOf(req.contextValues.get(principalKey), ctx);
      }
      return res;
    } catch (err) {
      const ce = ConnectError.from(err);
      tagError(ce, requestId);
      if (ctx !== undefined) {
        ctx.code = codeName(Code[ce.code]);
        credentialOf(req.contextValues.get(principalKey), ctx);
      }
      throw ce;
    }
  };
}

function credentialOf(principal: Principal | undefined, ctx: { credential?: string }): void {
  if (principal === undefined) return;
  ctx.credential = credentialName(principal);
}
