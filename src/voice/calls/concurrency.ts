/**
 * The cap on a project's calls in flight (CALL_CONCURRENCY_LIMIT, like a
 * carrier's concurrent-call limit): CreateCall is refused with
 * RESOURCE_EXHAUSTED, ErrorInfo reason CONCURRENT_CALL_LIMIT, while the
 * project has that many calls not yet ended (QUEUED, STARTING, RINGING,
 * IN_PROGRESS — of every kind: API, incoming and child calls all count,
 * though only CreateCall is refused). Exact under concurrency on any number
 * of replicas: the count and the insert run in one transaction holding a
 * transaction-level advisory lock keyed by the project, as the SIP domain
 * channel limit does (incoming.ts).
 */
import { Code } from "@connectrpc/connect";
import { and, count, eq, sql } from "drizzle-orm";
import { rpcError } from "../../api/errors.js";
import type { Tx } from "../../db/client.js";
import { calls } from "../../db/schema/index.js";

/** Default of CALL_CONCURRENCY_LIMIT; 0 means no limit. */
export const DEFAULT_CALL_CONCURRENCY_LIMIT = 100;

/** The states of a call in flight (the predicate of the partial index calls_project_in_flight_idx). */
const IN_FLIGHT = sql`${calls.state} in ('QUEUED', 'STARTING', 'RINGING', 'IN_PROGRESS')`;

/**
 * Inside the transaction that inserts the call: waits for the project's
 * other admissions, then throws unless it has fewer than `limit` calls in
 * flight. `limit` 0 admits everything (and takes no lock).
 */
export async function admitCall(tx: Tx, projectId: string, limit: number): Promise<void> {
  if (limit <= 0) return;
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`project_calls:${projectId}`}))`);
  const [row] = await tx
    .select({ n: count() })
    .from(calls)
    .where(and(eq(calls.projectId, projectId), IN_FLIGHT));
  const inFlight = row?.n ?? 0;
  if (inFlight >= limit) {
    throw rpcError(
      Code.ResourceExhausted,
      "CONCURRENT_CALL_LIMIT",
      `projects/${projectId} has ${inFlight} calls in flight, its limit: wait for one to end`,
      { limit: String(limit), project: `projects/${projectId}` },
    );
  }
}
