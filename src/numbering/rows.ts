/** The rows of a raw `db.execute(sql...)` on either driver (postgres-js: an array; PGlite: `{ rows }`). */
export function resultRows(result: unknown): unknown[] {
  if (Array.isArray(result)) return result;
  return (result as { rows?: unknown[] }).rows ?? [];
}
