/**
 * `GET /metrics`: the Prometheus exposition of metrics.ts, on the one port,
 * behind the operator token (`Authorization: Bearer <operator token>`; in
 * Prometheus: `authorization: {credentials_file: ...}`). Metrics carry no
 * project data, but they describe the whole service, which is the
 * operator's.
 */
import { bearer } from "../auth/interceptor.js";
import { safeEqual } from "../auth/secrets.js";
import type { Fallback } from "../transport/fallback.js";
import { registry } from "./metrics.js";

export function metricsRoute(operatorToken: string): Fallback {
  return (req, res) => {
    const path = (req.url ?? "/").split("?", 1)[0];
    if (path !== "/metrics") return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "application/json" });
      res.end('{"error":{"code":405,"message":"method not allowed","status":"UNIMPLEMENTED"}}');
      return true;
    }
    const secret = bearer(typeof req.headers.authorization === "string" ? req.headers.authorization : null);
    if (secret === undefined || !safeEqual(secret, operatorToken)) {
      res.writeHead(401, { "content-type": "application/json", "www-authenticate": "Bearer" });
      res.end(
        '{"error":{"code":401,"message":"the metrics need the operator token","status":"UNAUTHENTICATED"}}',
      );
      return true;
    }
    return registry.metrics().then((text) => {
      res.writeHead(200, { "content-type": registry.contentType });
      if (req.method === "HEAD") res.end();
      else res.end(text);
      return true;
    });
  };
}
