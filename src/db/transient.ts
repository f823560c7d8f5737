/**
 * Whether a database error says "try again" rather than "this statement is
 * wrong", and which kind of again:
 * - `unavailable`: the connection failed or was lost (the statement may or
 *   may not have run), the server is shutting down or starting, or it is
 *   out of connections or resources;
 * - `aborted`: a serialization failure or deadlock rolled the transaction
 *   back;
 * - `timeout`: the server cancelled the statement for taking too long
 *   (`statement_timeout`, or waiting for a lock that long); its transaction
 *   is rolled back.
 * A statement refused for what it says (a constraint, a type, a syntax
 * error) fails the same way every time it is sent: undefined.
 */
export function transientDatabaseError(err: unknown): "unavailable" | "aborted" | "timeout" | undefined {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === "object" && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") {
      if (UNAVAILABLE.test(code)) return "unavailable";
      if (code === "40001" || code === "40P01") return "aborted";
      if (code === "57014") return "timeout";
    }
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export function isTransientDatabaseError(err: unknown): boolean {
  return transientDatabaseError(err) !== undefined;
}

/**
 * An error the database sent (it has a SQLSTATE and a severity), not one of
 * the connection: the server ran the statement and refused it, so its
 * transaction did not commit.
 */
export function sentByDatabase(err: unknown): boolean {
  const e = err as { severity?: unknown; code?: unknown } | null;
  return typeof e?.severity === "string" && typeof e.code === "string";
}

/**
 * SQLSTATE classes 08 (connection exception) and 53 (insufficient
 * resources), 57P01-57P03 (shutting down, cannot connect now), 25P03 and
 * 57P05 (the server ended a session idle too long, in a transaction or
 * not); postgres.js's own connection errors, REPLY_TIMEOUT (a connection
 * that stopped answering: the patch's `reply_timeout`); and the socket's.
 */
const UNAVAILABLE =
  /^(08...|53...|57P0[1235]|25P03|CONNECTION_(CLOSED|DESTROYED|ENDED)|CONNECT_TIMEOUT|REPLY_TIMEOUT|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN)$/;

export interface RetryOptions {
  /** Whether to go on trying after a transient failure (false: the error is thrown). */
  keepGoing: () => boolean;
  /** Told of each failure that will be tried again, and when. */
  onRetry: (err: unknown, retryInMs: number) => void;
  /** The first wait (ms), doubling each time up to `maxMs`. Defaults 50 and 5,000. */
  firstMs?: number;
  maxMs?: number;
}

/**
 * Runs `attempt` (given its number, 0 first) until it succeeds, waiting
 * between tries, for as long as it fails transiently and `keepGoing()`
 * says so. Any other failure is thrown at once. `attempt` must be safe to
 * repeat: a lost reply leaves it unknown whether the last try took effect.
 */
export async function retryWhileTransient<T>(
  attempt: (n: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  const first = options.firstMs ?? 50;
  const max = options.maxMs ?? 5_000;
  for (let n = 0; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (!isTransientDatabaseError(err) || !options.keepGoing()) throw err;
      const delay = Math.min(max, first * 2 ** n);
      options.onRetry(err, delay);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/** How long background work that must not be dropped (a recording's end, say) is tried again (ms). */
export const BACKGROUND_RETRY_MS = 60_000;

/** retryWhileTransient for up to `ms` from now (default BACKGROUND_RETRY_MS). */
export function retryTransientFor<T>(
  attempt: (n: number) => Promise<T>,
  onRetry: RetryOptions["onRetry"],
  ms = BACKGROUND_RETRY_MS,
): Promise<T> {
  const deadline = Date.now() + ms;
  return retryWhileTransient(attempt, { keepGoing: () => Date.now() < deadline, onRetry });
}
