/**
 * The outermost interceptor: a ConnectError passes through unchanged; any
 * other throwable is a defect, logged with its stack and answered as a bare
 * INTERNAL so that no internal message reaches a caller.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";

export function createErrorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      if (err instanceof ConnectError) {
        if (err.code === Code.Internal || err.code === Code.Unknown) {
          log.error({ err, procedure: req.method.name }, "internal error");
          return internal();
        }
        throw err;
      }
      log.error({ err, procedure: req.method.name }, "unhandled error");
      return internal();
    }
  };
}

function internal(): never {
  throw new ConnectError("internal error", Code.Internal);
}
