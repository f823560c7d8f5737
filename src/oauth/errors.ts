/**
 * The token endpoint's errors: RFC 6749 section 5.2 codes, each with its
 * HTTP status, answered as `{"error", "error_description"}`.
 */
export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "invalid_scope"
  | "server_error";

const STATUS: Record<OAuthErrorCode, number> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  invalid_scope: 400,
  server_error: 500,
};

export class OAuthError extends Error {
  override name = "OAuthError";
  readonly status: number;

  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    status?: number,
  ) {
    super(`${error}: ${description}`);
    this.status = status ?? STATUS[error];
  }
}

/** RFC 7523 section 3.1: every problem with the assertion itself is `invalid_grant`. */
export function invalidGrant(description: string): OAuthError {
  return new OAuthError("invalid_grant", description);
}
