/** Storage of the webhook outbox: the `webhook_events` and `webhook_attempts` tables. */
import { and, asc, eq, inArray, isNull, lte, ne, notExists, or, type SQL, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import { keysetAfter, keysetOrder, type PagePosition } from "../api/pagination.js";
import type { Db } from "../db/client.js";
import {
  webhookAttempts as attempts,
  type NewWebhookAttemptRow,
  type NewWebhookEventRow,
  projects,
  webhookEvents as t,
  type WebhookAttemptRow,
  type WebhookEventRow,
} from "../db/schema/index.js";

/** A claimed event with the signing key of its project. */
export interface ClaimedEvent {
  event: WebhookEventRow;
  signingKey: string;
}

/** What a finished round changes on its event. */
export type RoundOutcome =
  | { state: "DELIVERED"; completeTime: Date }
  | { state: "FAILED"; completeTime: Date }
  | { state: "PENDING"; nextAttemptTime: Date };

export interface DeliveryWithAttempts {
  event: WebhookEventRow;
  attempts: WebhookAttemptRow[];
}

export class WebhookEventsRepository {
  constructor(private readonly db: Db) {}

  /**
   * Claims up to `limit` due events for `owner` until `leaseExpireTime`:
   * pending, due at `now`, not leased (or the lease expired: its worker
   * died), and with no earlier pending event of the same ordering key.
   * `FOR UPDATE SKIP LOCKED` keeps concurrent workers off each other's rows;
   * the lease keeps them off once the claim committed.
   */
  async claim(owner: string, now: Date, leaseExpireTime: Date, limit: number): Promise<ClaimedEvent[]> {
    const earlier = alias(t, "earlier");
    const due = this.db
      .select({ id: t.id })
      .from(t)
      .where(
        and(
          eq(t.state, "PENDING"),
          lte(t.nextAttemptTime, now),
          or(isNull(t.leaseExpireTime), lte(t.leaseExpireTime, now)),
          or(
            isNull(t.orderingKey),
            notExists(
              this.db
                .select({ one: sql`1` })
                .from(earlier)
                .where(
                  and(
                    eq(earlier.projectId, t.projectId),
                    eq(earlier.orderingKey, t.orderingKey),
                    eq(earlier.state, "PENDING"),
                    sql`${earlier.seq} < ${t.seq}`,
                  ),
                ),
            ),
          ),
        ),
      )
      .orderBy(asc(t.nextAttemptTime), asc(t.seq))
      .limit(limit)
      .for("update", { of: t, skipLocked: true });
    const claimed = await this.db
      .update(t)
      .set({ leaseOwner: owner, leaseExpireTime })
      .where(inArray(t.id, due))
      .returning();
    if (claimed.length === 0) return [];
    const keys = await this.db
      .select({ id: projects.id, signingKey: projects.signingKey })
      .from(projects)
      .where(
        inArray(
          projects.id,
          claimed.map((e) => e.projectId),
        ),
      );
    const keyOf = new Map(keys.map((k) => [k.id, k.signingKey]));
    return claimed
      .sort((a, b) => a.seq - b.seq)
      .flatMap((event) => {
        const signingKey = keyOf.get(event.projectId);
        return signingKey === undefined ? [] : [{ event, signingKey }];
      });
  }

  /**
   * Records a round: its attempts always (the requests were made), and the
   * event's new state only while `owner` still holds the lease. Returns
   * false when the lease was lost (expired and taken by another worker).
   */
  async finishRound(
    eventId: string,
    owner: string,
    round: number,
    made: NewWebhookAttemptRow[],
    outcome: RoundOutcome,
  ): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      if (made.length > 0) await tx.insert(attempts).values(made);
      const updated = await tx
        .update(t)
        .set({
          state: outcome.state,
          attemptCount: round,
          nextAttemptTime: outcome.state === "PENDING" ? outcome.nextAttemptTime : null,
          completeTime: outcome.state === "PENDING" ? null : outcome.completeTime,
          leaseOwner: null,
          leaseExpireTime: null,
        })
        .where(and(eq(t.id, eventId), eq(t.leaseOwner, owner), eq(t.state, "PENDING")))
        .returning({ id: t.id });
      return updated.length === 1;
    });
  }

  async get(id: string): Promise<DeliveryWithAttempts | undefined> {
    const [event] = await this.db.select().from(t).where(eq(t.id, id));
    if (!event) return undefined;
    return { event, attempts: await this.attemptsOf([id]).then((m) => m.get(id) ?? []) };
  }

  /** A project's events in keyset order (newest first) with their attempts; `where` filters (filter.ts). */
  async list(
    projectId: string,
    after: PagePosition | undefined,
    limit: number,
    where?: SQL,
  ): Promise<DeliveryWithAttempts[]> {
    const events = await this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), keysetAfter(t.createTime, t.id, after), where))
      .orderBy(...keysetOrder(t.createTime, t.id))
      .limit(limit);
    const byEvent = await this.attemptsOf(events.map((e) => e.id));
    return events.map((event) => ({ event, attempts: byEvent.get(event.id) ?? [] }));
  }

  /**
   * Makes a FAILED delivery due again at `now` (one more round); undefined
   * when it is not FAILED (or is a call-control exchange, never queued).
   */
  async redeliver(id: string, now: Date): Promise<WebhookEventRow | undefined> {
    const [row] = await this.db
      .update(t)
      .set({
        state: "PENDING",
        nextAttemptTime: now,
        completeTime: null,
        leaseOwner: null,
        leaseExpireTime: null,
      })
      .where(and(eq(t.id, id), eq(t.state, "FAILED"), ne(t.eventType, "CALL")))
      .returning();
    return row;
  }

  /** Records a finished exchange (a call-control request) with its attempts, in one transaction. */
  async insertFinished(event: NewWebhookEventRow, made: NewWebhookAttemptRow[]): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.insert(t).values(event);
      if (made.length > 0) await tx.insert(attempts).values(made);
    });
  }

  private async attemptsOf(eventIds: string[]): Promise<Map<string, WebhookAttemptRow[]>> {
    const out = new Map<string, WebhookAttemptRow[]>();
    if (eventIds.length === 0) return out;
    const rows = await this.db
      .select()
      .from(attempts)
      .where(inArray(attempts.eventId, eventIds))
      .orderBy(asc(attempts.eventId), asc(attempts.id));
    for (const row of rows) {
      const list = out.get(row.eventId) ?? [];
      list.push(row);
      out.set(row.eventId, list);
    }
    return out;
  }
}
