/**
 * Whether a database error says "try again" rather than "this statement is
 * wrong": the connection failed or was lost (the statement may or may not
 * have run), the server is shutting down or starting, out of connections or
 * resources, or a serialization failure or deadlock rolled it back. A
 * statement refused for what it says (a constraint, a type, a syntax error)
 * fails the same way every time it is sent.
 */
export function isTransientDatabaseError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === "object" && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && TRANSIENT.test(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * SQLSTATE classes 08 (connection exception), 53 (insufficient resources),
 * 57P01-57P03 (shutting down, cannot connect now), 40001 and 40P01
 * (serialization failure, deadlock); postgres.js's own connection errors;
 * and the socket's.
 */
const TRANSIENT =
  /^(08...|53...|57P0[123]|40001|40P01|CONNECTION_(CLOSED|DESTROYED|ENDED)|CONNECT_TIMEOUT|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN)$/;
