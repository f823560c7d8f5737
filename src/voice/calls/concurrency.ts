/**
 * The cap on a project's calls in flight (CALL_CONCURRENCY_LIMIT, like a
 * carrier's concurrent-call limit): CreateCall is refused with
 * RESOURCE_EXHAUSTED, ErrorInfo reason CONCURRENT_CALL_LIMIT, while the
 * project has that many calls not yet ended (QUEUED, STARTING, RINGING,
 * IN_PROGRESS — of every kind: API, incoming and child calls all count,
 * though only CreateCall is refused). Exact under concurrency on any number
 * of replicas: the insert and the count run in one transaction, the count
 * (which includes the new call) under a transaction-level advisory lock
 * keyed by the project, as the SIP domain channel limit does (incoming.ts).
 * The lock is taken last, after the call's writes, so it is held for the
 * count and the commit only: concurrent creates of a project wait for each
 * other that long, and not for each other's whole transaction. On
 * PostgreSQL's direct path the count and the refusal run in the database
 * (switchboard_admit_call), sent with the COMMIT (admitCallDirect).
 */
import { Code } from "@connectrpc/connect";
import { and, count, eq, sql } from "drizzle-orm";
import type { TransactionSql } from "postgres";
import { rpcError } from "../../api/errors.js";
import type { Tx } from "../../db/client.js";
import { calls } from "../../db/schema/index.js";

/** Default of CALL_CONCURRENCY_LIMIT; 0 means no limit. */
export const DEFAULT_CALL_CONCURRENCY_LIMIT = 100;

/** The states of a call in flight (the predicate of the partial index calls_project_in_flight_idx). */
const IN_FLIGHT = sql`${calls.state} in ('QUEUED', 'STARTING', 'RINGING', 'IN_PROGRESS')`;

/**
 * Inside the transaction that inserted the call, after its writes: waits
 * for the project's other admissions (they committed or rolled back by
 * then, and the count, a statement started after the lock, sees them),
 * then throws unless the project has at most `limit` calls in flight, the
 * new one included. `limit` 0 admits everything (and takes no lock).
 */
export async function admitCall(tx: Tx, projectId: string, limit: number): Promise<void> {
  if (limit <= 0) return;
  // Sent together (pipelined on the transaction's connection): the count,
  // a statement of its own, starts once the lock is granted, with no round
  // trip to this process in between while the lock is held.
  const [, [row]] = await Promise.all([
    tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`project_calls:${projectId}`}))`),
    tx
      .select({ n: count() })
      .from(calls)
      .where(and(eq(calls.projectId, projectId), IN_FLIGHT)),
  ]);
  refuseOver(projectId, limit, row?.n ?? 1);
}

const ADMIT = "select switchboard_admit_call($1, $2)";
/** The SQLSTATE switchboard_admit_call raises over the limit (migration 0008); DETAIL: the others in flight. */
const OVER_LIMIT = "SB429";

/**
 * `admitCall` on a postgres.js transaction (domain.ts's direct path), decided
 * in the database: switchboard_admit_call takes the lock, counts in a
 * statement of its own and raises SB429 when over the limit. The caller
 * sends it after the call's writes and does not wait for it before COMMIT,
 * so lock, count and commit go out in one pipeline: the lock is never held
 * across a round trip to this process (under load, a turn of a busy event
 * loop: creates of one project queued on the lock, and the engine fell
 * behind for good; docs/performance.md). Resolves when admitted; rejects with
 * the RESOURCE_EXHAUSTED error when not (the transaction is then aborted,
 * and its COMMIT rolls back), or with the statement's own error.
 */
export function admitCallDirect(sql: TransactionSql, projectId: string, limit: number): Promise<void> {
  return sql
    .unsafe(ADMIT, [projectId, limit], { prepare: true })
    .execute()
    .then(
      () => undefined,
      (err: unknown) => {
        const e = err as { code?: unknown; detail?: unknown };
        if (e?.code === OVER_LIMIT) refuseOver(projectId, limit, Number(e.detail) + 1);
        throw err;
      },
    );
}

/** Throws unless `counted` (the new call included) leaves the project within `limit`. */
function refuseOver(projectId: string, limit: number, counted: number): void {
  // The others: the count includes the call being admitted.
  const inFlight = counted - 1;
  if (inFlight >= limit) {
    throw rpcError(
      Code.ResourceExhausted,
      "CONCURRENT_CALL_LIMIT",
      `projects/${projectId} has ${inFlight} calls in flight, its limit: wait for one to end`,
      { limit: String(limit), project: `projects/${projectId}` },
    );
  }
}
