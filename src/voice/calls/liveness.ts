/**
 * Calls no process drives. A call is driven by the engine (process) that
 * created it, and its media lives in that process's carrier: when the
 * process dies, the call is gone from the network too. So that such calls
 * do not stay QUEUED, RINGING or IN_PROGRESS for ever, every engine
 *
 * - registers in `call_engines` (its id, heartbeat_time in wall-clock time:
 *   liveness is about processes, not call time) before it creates a call,
 *   and stamps its id on every call it creates (`calls.engine_id`, in the
 *   create's own insert);
 * - heartbeats every ENGINE_HEARTBEAT_SECONDS; a heartbeat that finds its
 *   row gone (swept: the database was out of its reach for 3 intervals, so
 *   the other engines ended its calls) registers again and hangs up the
 *   calls it still drives (their rows are ended already; `onSwept`). After a
 *   heartbeat that failed, the next new call does that first (`ready`);
 * - sweeps, at start and on every heartbeat: a call not ended whose engine
 *   has not heartbeaten for 3 intervals (or is not registered any more)
 *   ends FAILED with error_code ENGINE_LOST — end_time the sweep's call time,
 *   its state update enqueued in the same transaction. Stale engine rows are
 *   then deleted. Which engines live is read in the statement that ends
 *   calls: an engine registering meanwhile is not taken for dead.
 * - then ends the PENDING recordings (FAILED TIMEOUT) and transcriptions
 *   (FAILED) that no engine holds (src/work-holder.ts): those of an engine
 *   not alive (their audio was in its process; whatever call they belong
 *   to), and this engine's own that it let go unfinished (an insert that
 *   failed although it may have committed, processing that threw). Their
 *   webhooks are sent. One that cannot be ended now is tried at the next
 *   sweep.
 *
 * A live engine can lose a call too: a create whose transaction may have
 * committed although its reply never came (the connection was lost) was
 * answered UNAVAILABLE and never started. Its id is handed to
 * `inDoubt()`; the engine ends it the same way (FAILED ENGINE_LOST, when
 * it exists and is not ended) about a second later, trying again (1 s
 * doubling to 30 s, and at heartbeats) until the database answers. It is
 * not placed late: the client was told the create failed, and may have
 * created another.
 */
import { and, eq, gte, inArray, isNotNull, lt, notInArray, or, type SQLWrapper, sql } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import { type CallRow, callEngines, calls, recordings, transcriptions } from "../../db/schema/index.js";
import { enqueueWebhook } from "../../events/outbox.js";
import type { Logger } from "../../log.js";
import { engineHeartbeatsTotal } from "../../observability/metrics.js";
import type { RecordingsDomain } from "../../recordings/domain.js";
import type { WorkHolder } from "../../work-holder.js";
import { callName } from "./domain.js";
import { callJson } from "./proto.js";

export const ENGINE_LOST = "ENGINE_LOST";

const TERMINAL = ["COMPLETED", "FAILED", "NOT_ANSWERED", "BUSY", "REJECTED"] as const;

export const ENGINE_LOST_MESSAGE = "The service process driving the call stopped";
const IN_DOUBT_MESSAGE = "The call's creation did not complete; it was not placed";

/** How soon a call in doubt is ended (ms), doubling while the database does not answer, up to the max. */
const IN_DOUBT_FIRST_MS = 1_000;
const IN_DOUBT_MAX_MS = 30_000;

export interface LivenessOptions {
  db: Db;
  log: Logger;
  recordings: RecordingsDomain;
  /** What this engine holds (recordings, transcriptions): its sweep leaves those alone. */
  holder: WorkHolder;
  /** Seconds between heartbeats; an engine silent for 3 of them is dead. */
  heartbeatSeconds: number;
  /** Wall-clock time (tests pass their own). */
  now?: () => Date;
  /**
   * Call time (the engine's scheduler): the end_time of the calls a sweep
   * ends, and their state updates' time. Wall-clock time when absent.
   */
  callTime?: () => Date;
  kick?: () => void;
  /**
   * Told when a heartbeat finds this engine's row gone: the other engines
   * took it for dead (it was cut off from the database for 3 intervals)
   * and ended its calls. The engine hangs up what it still drives.
   */
  onSwept?: () => void;
}

export class EngineLiveness {
  private timer: NodeJS.Timeout | undefined;
  private registered: Promise<void> | undefined;
  private stopped = false;
  private readonly now: () => Date;
  private readonly callTime: () => Date;
  /** Calls this engine created but never started (their create's outcome unknown). */
  private readonly inDoubtIds = new Set<string>();
  private inDoubtTimer: NodeJS.Timeout | undefined;
  /** The last heartbeat failed: the next new call registers the engine again first (`ready`). */
  private beatFailed = false;

  constructor(
    readonly engineId: string,
    private readonly options: LivenessOptions,
  ) {
    this.now = options.now ?? (() => new Date());
    this.callTime = options.callTime ?? this.now;
  }

  /**
   * Registers the engine and starts heartbeating (once; later calls return
   * the same promise, or try again after a failure).
   */
  register(): Promise<void> {
    this.registered ??= (async () => {
      await this.upsert();
      if (this.options.heartbeatSeconds > 0 && !this.stopped) {
        this.timer = setInterval(() => {
          this.beat().then(
            () => engineHeartbeatsTotal.inc({ outcome: "ok" }),
            (err) => {
              engineHeartbeatsTotal.inc({ outcome: "error" });
              this.options.log.warn({ err }, "call engine heartbeat failed");
            },
          );
        }, this.options.heartbeatSeconds * 1000);
        this.timer.unref();
      }
    })().catch((err: unknown) => {
      this.registered = undefined;
      throw err;
    });
    return this.registered;
  }

  /** The engine's row, now its heartbeat: inserted again if a sweep deleted it. */
  private async upsert(): Promise<boolean> {
    const now = this.now();
    const [row] = await this.options.db
      .insert(callEngines)
      .values({ id: this.engineId, startTime: now, heartbeatTime: now })
      .onConflictDoUpdate({ target: callEngines.id, set: { heartbeatTime: now } })
      // xmax is 0 on a row version an insert made, not on one an update made.
      .returning({ inserted: sql<boolean>`xmax = 0` });
    return row?.inserted === true;
  }

  /**
   * A call this engine created and will not start: its create failed
   * after it may have committed. It is ended (if it exists) soon.
   */
  inDoubt(callId: string): void {
    this.inDoubtIds.add(callId);
    this.sweepInDoubt(IN_DOUBT_FIRST_MS);
  }

  private sweepInDoubt(delayMs: number): void {
    if (this.inDoubtTimer !== undefined || this.stopped) return;
    this.inDoubtTimer = setTimeout(() => {
      this.inDoubtTimer = undefined;
      if (this.inDoubtIds.size === 0) return;
      this.sweep().catch((err) => {
        this.options.log.warn({ err }, "could not end the calls whose create is in doubt");
        this.sweepInDoubt(Math.min(IN_DOUBT_MAX_MS, delayMs * 2));
      });
    }, delayMs);
    this.inDoubtTimer.unref();
  }

  /** Registers (heartbeating from then on) and ends the calls of dead engines. */
  async start(): Promise<void> {
    await this.register();
    await this.sweep();
  }

  async beat(): Promise<void> {
    await this.register();
    try {
      await this.refresh();
      await this.sweep();
    } catch (err) {
      this.beatFailed = true;
      throw err;
    }
  }

  /**
   * Registered, and after a heartbeat that failed, registered again now: a
   * call created with this engine's id must not carry the id of an engine
   * the others swept while the database was out of its reach.
   */
  async ready(): Promise<void> {
    await this.register();
    if (this.beatFailed) await this.refresh();
  }

  /** The heartbeat's write; finding its row gone means the others took this engine for dead. */
  private async refresh(): Promise<void> {
    const swept = await this.upsert();
    this.beatFailed = false;
    if (!swept) return;
    this.options.log.warn({ engine: this.engineId }, "this engine was taken for dead; its calls were ended");
    this.options.onSwept?.();
  }

  /** Stops heartbeating and unregisters (a clean shutdown: its calls were ended first). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    if (this.inDoubtTimer !== undefined) clearTimeout(this.inDoubtTimer);
    this.inDoubtTimer = undefined;
    // Calls still in doubt keep this engine's id: once its row is gone, any
    // engine's sweep ends them.
    if (this.registered === undefined) return;
    await this.registered.catch(() => {});
    try {
      await this.options.db.delete(callEngines).where(eq(callEngines.id, this.engineId));
    } catch (err) {
      // The database may be gone already; the row then goes stale and is swept.
      this.options.log.warn({ err }, "could not unregister the call engine");
    }
  }

  /**
   * Ends the calls of dead engines, and this engine's calls in doubt
   * (returns them); then the recordings and transcriptions no engine holds.
   */
  async sweep(): Promise<CallRow[]> {
    const now = this.now();
    const at = this.callTime();
    const inDoubt = [...this.inDoubtIds];
    // Without heartbeats (0) only an unregistered engine is dead. Replicas share the setting.
    const cutoff =
      this.options.heartbeatSeconds > 0
        ? new Date(now.getTime() - 3 * this.options.heartbeatSeconds * 1000)
        : new Date(0);
    const db = this.options.db;
    // A subquery, not a list read first: an engine that registered since (and created calls) is alive.
    const live: SQLWrapper = db
      .select({ id: callEngines.id })
      .from(callEngines)
      .where(gte(callEngines.heartbeatTime, cutoff));
    const ended = await db.transaction(async (tx) => {
      const rows = await tx
        .update(calls)
        .set({
          state: "FAILED",
          errorCode: ENGINE_LOST,
          // This engine's own calls are matched only when in doubt.
          errorMessage: sql`case when ${calls.engineId} = ${this.engineId} then ${IN_DOUBT_MESSAGE} else ${ENGINE_LOST_MESSAGE} end`,
          endTime: at,
        })
        .where(
          and(
            isNotNull(calls.engineId),
            notInArray(calls.state, [...TERMINAL]),
            or(
              notInArray(calls.engineId, live),
              inDoubt.length === 0
                ? undefined
                : and(eq(calls.engineId, this.engineId), inArray(calls.id, inDoubt)),
            ),
          ),
        )
        .returning();
      for (const row of rows) {
        if (row.stateUpdateUri === "") continue;
        await enqueueWebhook(tx, {
          projectId: row.projectId,
          eventType: "CALL_STATE_UPDATE",
          uris: [row.stateUpdateUri],
          body: callJson(row),
          orderingKey: callName(row),
          now: at,
        });
      }
      await tx.delete(callEngines).where(lt(callEngines.heartbeatTime, cutoff));
      return rows;
    });
    for (const id of inDoubt) this.inDoubtIds.delete(id);
    if (ended.length > 0) {
      this.options.log.warn({ calls: ended.map(callName) }, "ended calls whose engine stopped");
      this.options.kick?.();
    }
    await this.sweepWork(live);
    return ended;
  }

  /** Ends the PENDING recordings and transcriptions no engine holds (see the header). */
  private async sweepWork(live: SQLWrapper): Promise<void> {
    const { recordings: recordingsDomain } = this.options;
    await this.endUnheld("recording", recordings, live, (id) => recordingsDomain.fail(id, "TIMEOUT"));
    const transcriptionsDomain = recordingsDomain.transcriptions;
    if (transcriptionsDomain !== undefined) {
      await this.endUnheld("transcription", transcriptions, live, (id) => transcriptionsDomain.fail(id));
    }
  }

  /** Ends (`end`) each PENDING row of `table` whose engine is not `live`, and this engine's own it does not hold. */
  private async endUnheld(
    kind: "recording" | "transcription",
    table: typeof recordings | typeof transcriptions,
    live: SQLWrapper,
    end: (id: string) => Promise<unknown>,
  ): Promise<void> {
    const { db, holder, log } = this.options;
    const rows = await db
      .select({ id: table.id, engineId: table.engineId })
      .from(table)
      .where(
        and(
          sql`${table.state} = 'PENDING'`,
          or(eq(table.engineId, this.engineId), notInArray(table.engineId, live)),
        ),
      );
    for (const row of rows) {
      if (row.engineId === this.engineId && holder.holds(row.id)) continue;
      try {
        await end(row.id);
        log.warn({ [kind]: row.id, engine: row.engineId }, `ended a ${kind} no engine held`);
      } catch (err) {
        // Ended meanwhile (FAILED_PRECONDITION), deleted (NOT_FOUND), or the database: the next sweep sees.
        log.warn({ err, [kind]: row.id }, `could not end a ${kind} no engine held`);
      }
    }
  }
}
