/**
 * Calls whose process died. A call is driven by the engine (process) that
 * started it, and its media lives in that process's carrier: when the
 * process dies, the call is gone from the network too. So that such calls
 * do not stay RINGING or IN_PROGRESS for ever, every engine
 *
 * - registers in `call_engines` (its id, heartbeat_time in wall-clock time:
 *   liveness is about processes, not call time) and stamps its id on every
 *   call it drives (`calls.engine_id`, the call's first write);
 * - heartbeats every ENGINE_HEARTBEAT_SECONDS;
 * - sweeps, at start and on every heartbeat: a call not ended whose engine
 *   has not heartbeaten for 3 intervals (or is not registered any more)
 *   ends FAILED with error_code ENGINE_LOST — end_time the sweep's time,
 *   its state update enqueued in the same transaction — and its PENDING
 *   recordings end FAILED TIMEOUT (their audio was in the dead process).
 *   Stale engine rows are then deleted.
 * A call created but never started (the process died between the create's
 * commit and the engine's first write) has no engine_id and is left as it
 * is (QUEUED).
 */
import { and, eq, gte, inArray, isNotNull, lt, notInArray } from "drizzle-orm";
import type { Db } from "../../db/client.js";
import { type CallRow, callEngines, calls, recordings } from "../../db/schema/index.js";
import { enqueueWebhook } from "../../events/outbox.js";
import type { Logger } from "../../log.js";
import { engineHeartbeatsTotal } from "../../observability/metrics.js";
import type { RecordingsDomain } from "../../recordings/domain.js";
import { callName } from "./domain.js";
import { callJson } from "./proto.js";

export const ENGINE_LOST = "ENGINE_LOST";

const TERMINAL = ["COMPLETED", "FAILED", "NOT_ANSWERED", "BUSY", "REJECTED"] as const;

export interface LivenessOptions {
  db: Db;
  log: Logger;
  recordings: RecordingsDomain;
  /** Seconds between heartbeats; an engine silent for 3 of them is dead. */
  heartbeatSeconds: number;
  /** Wall-clock time (tests pass their own). */
  now?: () => Date;
  kick?: () => void;
}

export class EngineLiveness {
  private timer: NodeJS.Timeout | undefined;
  private registered: Promise<void> | undefined;
  private stopped = false;
  private readonly now: () => Date;

  constructor(
    readonly engineId: string,
    private readonly options: LivenessOptions,
  ) {
    this.now = options.now ?? (() => new Date());
  }

  /** Registers the engine and starts heartbeating (once; later calls return the same promise). */
  register(): Promise<void> {
    this.registered ??= (async () => {
      const now = this.now();
      await this.options.db
        .insert(callEngines)
        .values({ id: this.engineId, startTime: now, heartbeatTime: now })
        .onConflictDoUpdate({ target: callEngines.id, set: { heartbeatTime: now } });
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
    })();
    return this.registered;
  }

  /** Registers (heartbeating from then on) and ends the calls of dead engines. */
  async start(): Promise<void> {
    await this.register();
    await this.sweep();
  }

  async beat(): Promise<void> {
    await this.register();
    await this.options.db
      .update(callEngines)
      .set({ heartbeatTime: this.now() })
      .where(eq(callEngines.id, this.engineId));
    await this.sweep();
  }

  /** Stops heartbeating and unregisters (a clean shutdown: its calls were ended first). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    if (this.registered === undefined) return;
    await this.registered.catch(() => {});
    try {
      await this.options.db.delete(callEngines).where(eq(callEngines.id, this.engineId));
    } catch (err) {
      // The database may be gone already; the row then goes stale and is swept.
      this.options.log.warn({ err }, "could not unregister the call engine");
    }
  }

  /** Ends the calls of dead engines; returns them. */
  async sweep(): Promise<CallRow[]> {
    const now = this.now();
    // Without heartbeats (0) only an unregistered engine is dead. Replicas share the setting.
    const cutoff =
      this.options.heartbeatSeconds > 0
        ? new Date(now.getTime() - 3 * this.options.heartbeatSeconds * 1000)
        : new Date(0);
    const db = this.options.db;
    const ended = await db.transaction(async (tx) => {
      const liveIds = (
        await tx
          .select({ id: callEngines.id })
          .from(callEngines)
          .where(gte(callEngines.heartbeatTime, cutoff))
      ).map((e) => e.id);
      const rows = await tx
        .update(calls)
        .set({
          state: "FAILED",
          errorCode: ENGINE_LOST,
          errorMessage: "The service process driving the call stopped",
          endTime: now,
        })
        .where(
          and(
            isNotNull(calls.engineId),
            notInArray(calls.state, [...TERMINAL]),
            liveIds.length === 0 ? undefined : notInArray(calls.engineId, liveIds),
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
          now,
        });
      }
      await tx.delete(callEngines).where(lt(callEngines.heartbeatTime, cutoff));
      return rows;
    });
    if (ended.length === 0) return ended;
    this.options.log.warn({ calls: ended.map(callName) }, "ended calls whose engine stopped");
    const pending = await db
      .select({ id: recordings.id })
      .from(recordings)
      .where(
        and(
          eq(recordings.state, "PENDING"),
          inArray(
            recordings.callId,
            ended.map((c) => c.id),
          ),
        ),
      );
    for (const r of pending) {
      try {
        await this.options.recordings.fail(r.id, "TIMEOUT");
      } catch (err) {
        this.options.log.warn({ err, recording: r.id }, "could not fail a recording of a lost call");
      }
    }
    this.options.kick?.();
    return ended;
  }
}
