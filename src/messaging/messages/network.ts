/**
 * Outgoing messages through the carrier simulator: the states a sent
 * message goes through, each change committed with its status update.
 *
 *   QUEUED -> SENDING -> SENT -> DELIVERED
 *                     -> FAILED        (route MESSAGE_FAIL: error code)
 *                        SENT -> UNDELIVERED (route MESSAGE_UNDELIVERED, or
 *                                the validity period ran out first:
 *                                `VALIDITY_PERIOD_EXPIRED`)
 *
 * The route is the simulator route of `to` (longest prefix; the default
 * delivers after 1 second). SENDING and SENT follow at once; DELIVERED or
 * UNDELIVERED come `message_deliver_seconds` after SENT, unless the
 * message's validity period (0: 36000 s) is shorter: then UNDELIVERED
 * `VALIDITY_PERIOD_EXPIRED` when it ends. `send_time` is set with SENT,
 * `deliver_time` with DELIVERED. Time is the Scheduler's (the injected
 * clock, SIMULATOR_TIME_SCALE), so tests run a delivery without sleeping.
 *
 * Every change is a conditional update (only from the expected status), so
 * a change never overwrites a later one and two processes driving the same
 * message never both post a status. A change that fails on the way is made
 * again until the database answers (see `change`). In-flight messages live
 * in this process's timers; `resume()` (run at start) takes over the
 * messages a stopped process left QUEUED, SENDING or SENT, from where they
 * were: a SENT message ends when its route says, counted from its
 * `send_time`.
 */
import type { Db } from "../../db/client.js";
import type { MessageRow, MessageStatusValue } from "../../db/schema/index.js";
import { retryWhileTransient } from "../../db/transient.js";
import type { Logger } from "../../log.js";
import type { Scheduler } from "../../telephony/scheduler.js";
import type { Route, RouteSource } from "../../telephony/simulator/routes.js";
import { enqueueStatusUpdate, MAX_VALIDITY_PERIOD_SECONDS, type MessageNetwork } from "./outgoing.js";
import { MessagesRepository, type StatusChange } from "./repository.js";

export const VALIDITY_EXPIRED = {
  code: "VALIDITY_PERIOD_EXPIRED",
  message: "The message was not delivered within its validity period",
};

/** How many in-flight messages one `resume()` takes over. */
export const RESUME_LIMIT = 10_000;

export interface SimulatedMessageNetworkDeps {
  db: Db;
  scheduler: Scheduler;
  routes: RouteSource;
  log: Logger;
  kickWebhooks?: () => void;
}

export class SimulatedMessageNetwork implements MessageNetwork {
  private readonly running = new Set<Promise<void>>();
  private stopped = false;

  constructor(private readonly deps: SimulatedMessageNetworkDeps) {}

  send(message: MessageRow): void {
    this.later(0, () => this.submit(message));
  }

  /** Resolves when no state change is being written (timers still pending do not count). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  /**
   * Stops taking steps (timers that fall due later do nothing: the messages
   * stay as they are, for the next process's `resume()`) and waits for the
   * changes being written.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.idle();
  }

  /** Runs `step` after `seconds` of message time, unless stopped by then. */
  private later(seconds: number, step: () => Promise<unknown>): void {
    this.deps.scheduler.after(seconds, () => {
      if (!this.stopped) this.track(step().then(() => {}));
    });
  }

  private track(work: Promise<void>): void {
    const p = work.catch((err: unknown) => this.deps.log.error({ err }, "message state change failed"));
    this.running.add(p);
    void p.finally(() => this.running.delete(p));
  }

  /**
   * Takes over outgoing messages left in flight (by a previous run of this
   * or of another process; a live one's are harmless to take too: only one
   * change of each status wins). Returns how many were taken.
   */
  async resume(limit = RESUME_LIMIT): Promise<number> {
    const rows = await new MessagesRepository(this.deps.db).inFlight(limit);
    for (const row of rows) {
      if (row.status === "QUEUED") this.send(row);
      else if (row.status === "SENDING") this.later(0, () => this.accept(row));
      else this.later(0, () => this.finishSent(row));
    }
    return rows.length;
  }

  private async submit(message: MessageRow): Promise<void> {
    if ((await this.change(message, ["QUEUED"], { status: "SENDING" })) === undefined) return;
    await this.accept(message);
  }

  /** SENDING: the network refuses the message or takes it (SENT). */
  private async accept(message: MessageRow): Promise<void> {
    const route = await this.deps.routes.resolve(message.to);
    if (route.messageOutcome === "FAIL") {
      await this.change(message, ["SENDING"], {
        status: "FAILED",
        errorCode: route.messageErrorCode,
        errorMessage: route.messageErrorMessage,
      });
      return;
    }
    const sent = await this.change(message, ["SENDING"], {
      status: "SENT",
      sendTime: this.deps.scheduler.now(),
    });
    if (sent === undefined) return;
    this.schedule(sent, route, 0);
  }

  /** A SENT message taken over: its end comes when it would have, counted from its send time. */
  private async finishSent(message: MessageRow): Promise<void> {
    const route = await this.deps.routes.resolve(message.to);
    const sentAt = message.sendTime ?? message.createTime;
    this.schedule(message, route, (this.deps.scheduler.now().getTime() - sentAt.getTime()) / 1000);
  }

  /** Schedules the end of a SENT message, `elapsed` seconds after it was sent. */
  private schedule(message: MessageRow, route: Route, elapsed: number): void {
    const validity = message.validityPeriodSeconds || MAX_VALIDITY_PERIOD_SECONDS;
    const deliverSeconds = route.messageDeliverSeconds;
    if (deliverSeconds > validity) {
      this.later(Math.max(0, validity - elapsed), () =>
        this.change(message, ["SENT"], {
          status: "UNDELIVERED",
          errorCode: VALIDITY_EXPIRED.code,
          errorMessage: VALIDITY_EXPIRED.message,
        }),
      );
      return;
    }
    const final: StatusChange =
      route.messageOutcome === "UNDELIVERED"
        ? {
            status: "UNDELIVERED",
            errorCode: route.messageErrorCode,
            errorMessage: route.messageErrorMessage,
          }
        : { status: "DELIVERED" };
    this.later(Math.max(0, deliverSeconds - elapsed), () =>
      this.change(message, ["SENT"], {
        ...final,
        ...(final.status === "DELIVERED" ? { deliverTime: this.deps.scheduler.now() } : {}),
      }),
    );
  }

  /**
   * Moves `message` from `from` to the change, with its status update;
   * undefined when it was not in `from`. A change that fails on the way
   * (the connection, the server) is made again, 50 ms doubling to 5 s
   * apart, until it answers or the network stops: a repeat that finds the
   * message already changed so (the first try committed, its reply lost)
   * goes on from there, its status update enqueued once.
   */
  private change(
    message: MessageRow,
    from: readonly MessageStatusValue[],
    change: StatusChange,
  ): Promise<MessageRow | undefined> {
    return retryWhileTransient(
      async (n) => {
        const changed = await this.changeOnce(message, from, change);
        if (changed !== undefined || n === 0) return changed;
        const current = await new MessagesRepository(this.deps.db).find(message.projectId, message.id);
        if (current?.status !== change.status) return undefined;
        this.deps.kickWebhooks?.();
        return current;
      },
      {
        keepGoing: () => !this.stopped,
        onRetry: (err, retryInMs) =>
          this.deps.log.warn(
            { err, message: message.id, status: change.status, retryInMs },
            "message state change failed; retrying",
          ),
      },
    );
  }

  private async changeOnce(
    message: MessageRow,
    from: readonly MessageStatusValue[],
    change: StatusChange,
  ): Promise<MessageRow | undefined> {
    const now = this.deps.scheduler.now();
    let queued = false;
    const row = await this.deps.db.transaction(async (tx) => {
      const changed = await new MessagesRepository(tx).changeStatus(
        message.projectId,
        message.id,
        from,
        change,
      );
      if (changed !== undefined) queued = await enqueueStatusUpdate(tx, changed, now);
      return changed;
    });
    if (queued) this.deps.kickWebhooks?.();
    return row;
  }
}
