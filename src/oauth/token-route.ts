/**
 * `POST /oauth2/token` (and the path of OAUTH_TOKEN_URL, when it differs):
 * the OAuth 2.0 token endpoint (RFC 6749 section 3.2) with the JWT-bearer
 * grant (RFC 7523) only. A form-encoded body in; `{access_token,
 * token_type, expires_in}` or `{error, error_description}` out, never
 * cached (section 5.1).
 */

import type { Logger } from "../log.js";
import type { Fallback } from "../transport/fallback.js";
import { readBody } from "../transport/rest/body.js";
import type { NodeServerResponse } from "../transport/types.js";
import { OAuthError } from "./errors.js";
import { JWT_BEARER_GRANT, type TokenIssuer } from "./token-issuer.js";

export const TOKEN_PATH = "/oauth2/token";
/** A token request is a few kilobytes at most. */
export const MAX_TOKEN_REQUEST_BYTES = 64 * 1024;

function answer(res: NodeServerResponse, status: number, body: object, headers: Record<string, string> = {}) {
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    pragma: "no-cache",
    ...headers,
  });
  res.end(JSON.stringify(body));
}

function single(form: URLSearchParams, name: string): string | undefined {
  const values = form.getAll(name);
  if (values.length > 1) throw new OAuthError("invalid_request", `${name} is given more than once`);
  return values[0];
}

export interface TokenRouteOptions {
  issuer: TokenIssuer;
  /** The path of the configured token URL (served besides /oauth2/token). */
  tokenPath: () => string;
  log: Logger;
}

export function tokenRoute(options: TokenRouteOptions): Fallback {
  return async (req, res) => {
    const path = (req.url ?? "/").split("?", 1)[0];
    // The configured path takes POSTs only: other requests on it go on down the chain.
    if (path !== TOKEN_PATH && (path !== options.tokenPath() || req.method !== "POST")) return false;
    try {
      if (req.method !== "POST") {
        throw new OAuthError("invalid_request", "the token endpoint takes POST", 405);
      }
      const type = String(req.headers["content-type"] ?? "")
        .split(";", 1)[0]!
        .trim()
        .toLowerCase();
      if (type !== "application/x-www-form-urlencoded") {
        throw new OAuthError("invalid_request", "the body must be application/x-www-form-urlencoded");
      }
      let body: Uint8Array;
      try {
        body = await readBody(req, MAX_TOKEN_REQUEST_BYTES);
      } catch {
        throw new OAuthError(
          "invalid_request",
          `the body must be at most ${MAX_TOKEN_REQUEST_BYTES} bytes`,
          413,
        );
      }
      const form = new URLSearchParams(Buffer.from(body).toString("utf8"));
      const grantType = single(form, "grant_type");
      if (grantType === undefined || grantType === "")
        throw new OAuthError("invalid_request", "grant_type is missing");
      if (grantType !== JWT_BEARER_GRANT) {
        throw new OAuthError("unsupported_grant_type", `only ${JWT_BEARER_GRANT} is supported`);
      }
      const assertion = single(form, "assertion");
      if (assertion === undefined || assertion === "")
        throw new OAuthError("invalid_request", "assertion is missing");
      answer(res, 200, await options.issuer.exchange(assertion));
    } catch (err) {
      if (err instanceof OAuthError) {
        answer(
          res,
          err.status,
          { error: err.error, error_description: err.description },
          err.status === 405 ? { allow: "POST" } : {},
        );
      } else {
        options.log.error({ err }, "token endpoint failed");
        answer(res, 500, { error: "server_error", error_description: "internal error" });
      }
    }
    return true;
  };
}
