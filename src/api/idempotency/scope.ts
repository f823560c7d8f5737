/**
 * The idempotency key of the request being served, carried from the
 * interceptor (interceptor.ts) to the transaction that creates the resource
 * by an AsyncLocalStorage, and `recordCreated`, which a create calls inside
 * that transaction: the key is committed with the resource or not at all,
 * so a retry after a crash between commit and response finds it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { DbOrTx } from "../../db/client.js";
import { idempotencyKeys } from "../../db/schema/index.js";

export interface IdempotencyScope {
  projectId: string;
  key: string;
  /** `package.Service/Method`. */
  method: string;
  requestHash: string;
  createTime: Date;
  expireTime: Date;
  /** Set once `recordCreated` wrote the row (in a transaction that may still roll back). */
  recorded: boolean;
}

export const idempotencyScope = new AsyncLocalStorage<IdempotencyScope>();

/**
 * Whether `recordCreated` would write now (the request has a key not yet
 * recorded). A create of one row with nothing to record needs no
 * transaction of its own: the single statement is atomic.
 */
export function hasCreateToRecord(): boolean {
  const scope = idempotencyScope.getStore();
  return scope !== undefined && !scope.recorded;
}

/**
 * Records the idempotency key of the current request, if it has one, as
 * having created `resourceName`. Call it inside the create's transaction,
 * with that transaction (`tx`). Once per request: later calls (and calls
 * from work the request started, such as a call's engine) do nothing.
 *
 * A concurrent request with the same key that committed first makes this
 * insert fail (after waiting for that commit, on PostgreSQL): the create
 * rolls back and the interceptor replays the winner's result.
 */
export async function recordCreated(tx: DbOrTx, resourceName: string): Promise<void> {
  const scope = idempotencyScope.getStore();
  if (scope === undefined || scope.recorded) return;
  scope.recorded = true;
  await tx.insert(idempotencyKeys).values({
    projectId: scope.projectId,
    key: scope.key,
    method: scope.method,
    requestHash: scope.requestHash,
    resourceName,
    response: null,
    createTime: scope.createTime,
    expireTime: scope.expireTime,
  });
}
