/**
 * A failed call as the API reported it: the status code's name, the
 * server's message, the fields it named (BadRequest) and the request id an
 * operator finds in the access log (ErrorInfo.metadata.requestId).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";

export interface ApiError {
  /** `PERMISSION_DENIED`, `INVALID_ARGUMENT`, ... */
  code: string;
  message: string;
  fields: { field: string; description: string }[];
  requestId: string | undefined;
}

/** `PermissionDenied` -> `PERMISSION_DENIED`. */
export function codeName(code: Code): string {
  return (Code[code] ?? "UNKNOWN").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

export function describeError(err: unknown): ApiError {
  const ce = ConnectError.from(err);
  return {
    code: codeName(ce.code),
    message: ce.rawMessage,
    fields: ce
      .findDetails(BadRequestSchema)
      .flatMap((d) => d.fieldViolations.map((v) => ({ field: v.field, description: v.description }))),
    requestId: ce.findDetails(ErrorInfoSchema).find((d) => d.metadata.requestId)?.metadata.requestId,
  };
}

/** Whether `err` is a refusal of the credential (it may not do this), not a failure of the request. */
export function isRefusal(err: unknown): boolean {
  const code = ConnectError.from(err).code;
  return code === Code.PermissionDenied || code === Code.Unauthenticated;
}

export function ErrorBanner({ error, title }: { error: unknown; title?: string }) {
  if (error === null || error === undefined) return null;
  const e = describeError(error);
  return (
    <div className="error" role="alert">
      <p>
        <strong>{title ?? "The request failed"}</strong>: <code className="code">{e.code}</code> {e.message}
      </p>
      {e.fields.length > 0 && (
        <ul>
          {e.fields.map((f) => (
            <li key={f.field}>
              <code>{f.field}</code>: {f.description}
            </li>
          ))}
        </ul>
      )}
      {e.requestId !== undefined && <p className="muted">Request id: {e.requestId}</p>}
    </div>
  );
}
