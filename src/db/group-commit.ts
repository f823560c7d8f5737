/**
 * Group commit for the call engine's hot single-statement writes (a call's
 * transitions with their state updates, the records of its call-control
 * exchanges): the writes asked for in one turn of the event loop go to the
 * database together, as one transaction, instead of one transaction each.
 *
 * Each of these statements is its own transaction when sent alone, and a
 * transaction's cost is mostly not its statement: a round trip (a socket
 * write and read on both sides), and a commit that waits for its WAL flush.
 * At a few hundred calls a second the engine sends ~1,500 of them a second,
 * and they come in bursts (one turn of the loop handles many calls' events).
 * Sent as one transaction, a burst of N costs one BEGIN, one pipelined write
 * of the N statements and the COMMIT, and one flush.
 *
 * - When: a write waits for the end of the current turn (setImmediate), so
 *   an idle service adds no latency worth counting; at most LANES
 *   transactions are in flight, and writes asked for meanwhile go in the
 *   next one, so a busy service batches more (and sends fewer).
 * - Alone: a batch of one is the plain statement, as before.
 * - Failure: every statement of a batch answers on its own. When one fails
 *   in the database (a constraint, say), the transaction is rolled back
 *   with all of them, so each is sent again alone and settles with its own
 *   outcome: a batch never lends one statement's failure to another. When
 *   the connection fails, whether the batch committed is unknown, and each
 *   write fails with the connection's error, as it would have alone (the
 *   engine sends a transition again; its statements make a repeat
 *   harmless, writes.ts).
 * - What may use it: single statements that need no transaction of their
 *   own with anything else, each one's outcome independent of the others'
 *   (no two writes to the same row in one batch: each call's writes are
 *   queued one after another, ActiveCall.persist).
 *
 * The batches go on connections of their own (`useGroupCommit`, given by
 * openPostgres). Without them (a transaction, the embedded database, a
 * PGlite instance in tests) a write is `fixedRows`, one statement at a time.
 */
import type { ReservedSql, Sql } from "postgres";
import { timedStatement } from "../observability/metrics.js";
import type { DbOrTx } from "./client.js";
import { directRows, fixedRows } from "./direct.js";
import { sentByDatabase } from "./transient.js";

/** Transactions in flight at once: the writer's connections. */
export const LANES = 2;
/** Statements in one transaction at most. */
const MAX_BATCH = 100;

interface Write {
  text: string;
  params: readonly unknown[];
  resolve(rows: unknown[][]): void;
  reject(err: unknown): void;
}

type Outcome = { ok: true; rows: unknown[][] } | { ok: false; err: unknown };

class GroupCommit {
  private queue: Write[] = [];
  private scheduled = false;
  private inFlight = 0;
  /** Transactions sent with more than one statement (tests). */
  batches = 0;

  constructor(private readonly client: Sql) {}

  rows(text: string, params: readonly unknown[]): Promise<unknown[][]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ text, params, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= LANES || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.inFlight < LANES && this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        this.inFlight++;
        void this.send(batch).finally(() => {
          this.inFlight--;
          this.schedule();
        });
      }
    });
  }

  private async send(batch: Write[]): Promise<void> {
    if (batch.length === 1) {
      await this.alone(batch[0]!);
      return;
    }
    this.batches++;
    const settled = await this.transaction(batch);
    if (settled.every((o) => o.ok)) {
      settled.forEach((o, i) => {
        if (o.ok) batch[i]!.resolve(o.rows);
      });
      return;
    }
    const errors = settled.flatMap((o) => (o.ok ? [] : [o.err]));
    if (errors.some((e) => e === rolledBack || sentByDatabase(e))) {
      // The database refused something: the transaction was rolled back, nothing of it
      // written. Each alone, with its own outcome.
      await Promise.all(batch.map((w) => this.alone(w)));
      return;
    }
    // The connection failed: committed or not, unknown. Each fails as it would have alone.
    batch.forEach((w, i) => {
      w.reject((settled[i] as { err: unknown }).err);
    });
  }

  /** `w` as a statement of its own (its own transaction), settled with its outcome. */
  private alone(w: Write): Promise<void> {
    return directRows(this.client, w.text, w.params).then(w.resolve, w.reject);
  }

  /**
   * BEGIN, the batch's statements and COMMIT, pipelined on a reserved
   * connection: one write, and the replies in one turn (sql.begin would wait
   * for BEGIN's reply first: a turn and a round trip more per batch). Each
   * statement's outcome; every one fails when the transaction did not commit.
   *
   * A connection lost on the way fails what it had sent, but the driver
   * never settles what the reservation still held back (statements queued
   * behind one being prepared): the first such failure ends the wait, and
   * the connection, closed and back in the pool's hands, is not released.
   */
  private async transaction(batch: Write[]): Promise<Outcome[]> {
    let sql: ReservedSql;
    try {
      sql = await this.client.reserve();
    } catch (err) {
      return batch.map(() => ({ ok: false, err }));
    }
    let lost: (err: unknown) => void = () => {};
    const connectionLost = new Promise<{ lost: unknown }>((resolve) => {
      lost = (err) => resolve({ lost: err });
    });
    const watch = <T>(query: Promise<T>): Promise<T> => {
      query.catch((err: unknown) => {
        if (!sentByDatabase(err)) lost(err);
      });
      return query;
    };
    const begin = watch(sql.unsafe("begin").execute());
    const statements = batch.map((w) =>
      timedStatement(w.text, () =>
        watch(sql.unsafe(w.text, w.params as never[], { prepare: true }).values()),
      ),
    );
    const commit = watch(sql.unsafe("commit").execute());
    const settledAll = Promise.all([
      begin.then(() => ok([]), failure),
      ...statements.map((q) => q.then((rows) => ok(rows as unknown as unknown[][]), failure)),
      commit.then((result) => (result.command === "COMMIT" ? ok([]) : failure(rolledBack)), failure),
    ]);
    const outcome = await Promise.race([settledAll, connectionLost]);
    if (!Array.isArray(outcome)) return batch.map(() => ({ ok: false, err: outcome.lost }));
    sql.release();
    const [began, ...rest] = outcome;
    const committed = rest.pop()!;
    const failed = [began, committed].find((o) => !o!.ok) as { ok: false; err: unknown } | undefined;
    // A statement that failed aborted the transaction: COMMIT rolled it all back.
    const aborted = rest.find((o) => !o.ok);
    if (failed === undefined && aborted === undefined) return rest;
    return rest.map((o) => (o.ok ? (aborted ?? failed)! : o));
  }
}

const ok = (rows: unknown[][]): Outcome => ({ ok: true, rows });
const failure = (err: unknown): Outcome => ({ ok: false, err });
/** COMMIT answered ROLLBACK: a statement had failed (its own error says which). */
const rolledBack = new Error("the transaction was rolled back");

const groups = new WeakMap<object, GroupCommit>();

/**
 * Gives `db` its group commit, on `writer`: a client of its own (a pool of
 * LANES connections), so that the engine's writes never wait for a
 * connection behind the API's transactions (a project's creates, queued on
 * their admission lock, can hold every connection of the main pool).
 */
export function useGroupCommit(db: object, writer: Sql): void {
  groups.set(db, new GroupCommit(writer));
}

/**
 * `text`'s rows (arrays in column order), the statement committed with the
 * other writes asked for in this turn of the event loop (see above); on a
 * handle without a group commit (a transaction, the embedded database, a
 * PGlite instance in tests), `fixedRows`.
 */
export function groupedRows(db: DbOrTx, text: string, params: readonly unknown[]): Promise<unknown[][]> {
  const group = groups.get(db);
  if (group === undefined) return fixedRows(db, text, params);
  return group.rows(text, params);
}

/** Transactions of more than one statement sent for `db` so far (tests). */
export function groupedBatches(db: DbOrTx): number {
  return groups.get(db)?.batches ?? 0;
}
