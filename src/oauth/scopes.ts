/**
 * The `scope` of an assertion: space-separated entries (RFC 6749 section
 * 3.3), each naming one service as the official SDKs do,
 * `https://<service host>/<package.Service>`. The host is the deployment's
 * business (the SDKs use the real service's), so only the service name is
 * read, and it must be a service this server serves. An access token is
 * limited to the services its scope names.
 */
import { OAuthError } from "./errors.js";

const ENTRY = /^https:\/\/[^/\s]+\/([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)$/;
export const MAX_SCOPE_ENTRIES = 20;

export function scopeServices(scope: unknown, served: ReadonlySet<string>): string[] {
  if (typeof scope !== "string" || scope.trim() === "") {
    throw new OAuthError(
      "invalid_scope",
      "the assertion needs a scope naming the service, e.g. https://api.example.com/enfonica.voice.v1beta1.Calls",
    );
  }
  const entries = [...new Set(scope.trim().split(/ +/))];
  if (entries.length > MAX_SCOPE_ENTRIES) {
    throw new OAuthError("invalid_scope", `at most ${MAX_SCOPE_ENTRIES} scope entries`);
  }
  return entries.map((entry) => {
    const service = ENTRY.exec(entry)?.[1];
    if (service === undefined || !served.has(service)) {
      const shown = entry.length > 200 ? `${entry.slice(0, 200)}…` : entry;
      throw new OAuthError(
        "invalid_scope",
        `scope ${JSON.stringify(shown)} names no service served here (https://<host>/<package.Service>)`,
      );
    }
    return service;
  });
}
