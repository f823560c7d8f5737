/**
 * The outermost interceptor: a ConnectError passes through unchanged; any
 * other throwable is a defect, logged with its stack and answered as a bare
 * INTERNAL so that no internal message reaches a caller. Every call is
 * logged at debug level with its procedure, outcome and duration — never its
 * headers or body, so credentials cannot reach the log.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import { clip } from "./errors.js";

/** The longest error message a caller gets (anything longer is cut). */
export const MAX_MESSAGE_CHARS = 1024;

export function createErrorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const procedure = `${req.service.typeName}/${req.method.name}`;
    try {
      const res = await next(req);
      if (log.isLevelEnabled("debug")) {
        log.debug({ procedure, code: "ok", ms: Math.round(performance.now() - started) }, "rpc");
      }
      return res;
    } catch (err) {
      const ms = Math.round(performance.now() - started);
      if (err instanceof ConnectError && err.code !== Code.Internal && err.code !== Code.Unknown) {
        if (log.isLevelEnabled("debug")) {
          log.debug({ procedure, code: Code[err.code], reason: err.rawMessage, ms }, "rpc");
        }
        // A safety net for messages that echo client input at length: the
        // message is cut, the code and details are kept.
        if (err.rawMessage.length > MAX_MESSAGE_CHARS) {
          const cut = new ConnectError(clip(err.rawMessage, MAX_MESSAGE_CHARS), err.code, err.metadata);
          cut.details.push(...err.details);
          throw cut;
        }
        throw err;
      }
      log.error({ err, procedure, ms }, "internal error");
      throw new ConnectError("internal error", Code.Internal);
    }
  };
}
