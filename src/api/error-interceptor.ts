/**
 * The outermost interceptor: a ConnectError passes through unchanged; a
 * database that cannot be reached (or lost the connection, or is shutting
 * down, or stopped answering) is UNAVAILABLE, a transaction it rolled back
 * for a conflict (serialization failure, deadlock) ABORTED, and a statement
 * it cancelled for running too long (DATABASE_STATEMENT_TIMEOUT_MS)
 * DEADLINE_EXCEEDED: each says "try again" to a caller's retry policy, with
 * a message of ours; any other throwable is a
 * defect, logged with its stack and answered as a bare INTERNAL so that no
 * internal message reaches a caller. Every call is
 * logged at debug level with its procedure, outcome and duration — never its
 * headers or body, so credentials cannot reach the log. A streaming
 * response's messages are watched the same way: an error while streaming is
 * passed through or made INTERNAL likewise.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "pino";
import { transientDatabaseError } from "../db/transient.js";
import { boundedError } from "./errors.js";
import { procedureOf } from "./procedure.js";

export { MAX_MESSAGE_CHARS } from "./errors.js";

/** What a caller may see of `err`: a ConnectError (message cut) or a bare INTERNAL (logged). */
function safeError(log: Logger, err: unknown, procedure: string, started: number): ConnectError {
  const ms = Math.round(performance.now() - started);
  if (err instanceof ConnectError && err.code !== Code.Internal && err.code !== Code.Unknown) {
    if (log.isLevelEnabled("debug")) {
      log.debug({ procedure, code: Code[err.code], reason: err.rawMessage, ms }, "rpc");
    }
    // A safety net for errors that echo client input at length: the
    // message and the details are cut, the code is kept (errors.ts).
    return boundedError(err);
  }
  const transient = transientDatabaseError(err);
  if (transient === "unavailable") {
    log.warn({ err, procedure, ms }, "database unavailable");
    return new ConnectError("the database is unavailable: try again later", Code.Unavailable);
  }
  if (transient === "aborted") {
    log.warn({ err, procedure, ms }, "transaction aborted by a conflict");
    return new ConnectError("the request conflicted with another: try again", Code.Aborted);
  }
  if (transient === "timeout") {
    log.warn({ err, procedure, ms }, "database statement timed out");
    return new ConnectError("the database did not answer in time: try again later", Code.DeadlineExceeded);
  }
  log.error({ err, procedure, ms }, "internal error");
  return new ConnectError("internal error", Code.Internal);
}

/** The messages of a streaming response, its errors made safe. */
async function* safeMessages<T>(
  messages: AsyncIterable<T>,
  log: Logger,
  procedure: string,
  started: number,
): AsyncGenerator<T> {
  try {
    yield* messages;
  } catch (err) {
    throw safeError(log, err, procedure, started);
  }
}

export function createErrorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const procedure = procedureOf(req.method);
    try {
      const res = await next(req);
      if (log.isLevelEnabled("debug")) {
        log.debug({ procedure, code: "ok", ms: Math.round(performance.now() - started) }, "rpc");
      }
      if (res.stream) return { ...res, message: safeMessages(res.message, log, procedure, started) };
      return res;
    } catch (err) {
      throw safeError(log, err, procedure, started);
    }
  };
}
