/** Storage of the webhook outbox: the `webhook_events` and `webhook_attempts` tables. */
import {
  and,
  asc,
  eq,
  getTableColumns,
  inArray,
  isNull,
  lte,
  ne,
  notExists,
  or,
  type SQL,
  sql,
} from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import { keysetAfter, keysetOrder, type PagePosition } from "../api/pagination.js";
import type { Db } from "../db/client.js";
import { directClientOf, directRows, fixedRows } from "../db/direct.js";
import {
  webhookAttempts as attempts,
  type NewWebhookAttemptRow,
  type NewWebhookEventRow,
  projects,
  webhookEvents as t,
  type WebhookAttemptRow,
  type WebhookEventRow,
} from "../db/schema/index.js";
import { timedStatement } from "../observability/metrics.js";
import { rowsOf } from "./outbox.js";

function ms(column: string): string {
  return `(extract(epoch from ${column}) * 1000)::float8`;
}

/** What a claim returns (claimedOf): the event `c` and its project's signing key (`p`). */
const CLAIMED_COLUMNS = `select c.id, c.seq::float8, c.project_id, c.event_type, c.ordering_key,
    array_to_json(c.uris)::text, c.body, c.state, c.attempt_count, ${ms("c.next_attempt_time")}, c.lease_owner,
    ${ms("c.lease_expire_time")}, ${ms("c.create_time")}, ${ms("c.complete_time")}, c.call_id, p.signing_key`;

/** READY_NEXT: whether the event `w` is due at $3 and free to lease (its values before the update). */
const HANDED = `(w.next_attempt_time <= $3::timestamptz
  and (w.lease_expire_time is null or w.lease_expire_time <= $3::timestamptz))`;

/**
 * `finishRounds` as one fixed text, for the postgres.js client directly
 * (db/direct.ts): the rounds and the attempts are each one JSON parameter
 * (json_to_recordset), so the text is the same whatever their number and
 * each connection prepares it once. Timestamps are ISO strings in the JSON;
 * the attempts' keys are the row type's (camelCase).
 */
const FINISH_ROUNDS = `with v as (
    select * from json_to_recordset($2::text::json)
      as v(id text, state text, round integer, next timestamptz, complete timestamptz)),
  made as (insert into webhook_attempts
      (event_id, round, uri, start_time, finish_time, status_code, error, duration_ms)
    select "eventId", round, uri, "startTime", "finishTime", "statusCode", error, "durationMs"
    from json_to_recordset($3::text::json) as a("eventId" text, round integer, uri text,
      "startTime" timestamptz, "finishTime" timestamptz, "statusCode" integer, error text, "durationMs" integer)),
  kept as (update webhook_events e set state = v.state, attempt_count = v.round, next_attempt_time = v.next,
      complete_time = v.complete, lease_owner = null, lease_expire_time = null
    from v where e.id = v.id and e.lease_owner = $1 and e.state = 'PENDING'
    returning e.id, e.project_id, e.ordering_key, e.state)
  select id, project_id, ordering_key, state from kept`;

/**
 * After events of ordering keys left PENDING (finishRounds), the next
 * pending event of each key becomes ready ($1: JSON [{p, k}]) and, when it
 * is due at $3 and not leased, is handed straight to the worker that
 * finished its predecessor ($2, lease until $4), which delivers it without
 * another claim; those are returned, as CLAIM returns. A statement of its
 * own, after the one that finished them: its snapshot includes an event
 * whose enqueue held the finished one FOR SHARE (outbox.ts).
 */
const READY_NEXT = `with h as (select distinct on (e.project_id, e.ordering_key) e.id, e.ready
    from json_to_recordset($1::text::json) as k(p text, k text)
    join webhook_events e on e.project_id = k.p and e.ordering_key = k.k and e.state = 'PENDING'
    order by e.project_id, e.ordering_key, e.seq),
  r as (update webhook_events w set ready = true,
      lease_owner = case when ${HANDED} then $2 else w.lease_owner end,
      lease_expire_time = case when ${HANDED} then $4::timestamptz else w.lease_expire_time end
    from h where w.id = h.id and not h.ready
    returning w.*)
  ${CLAIMED_COLUMNS}
  from r c join projects p on p.id = c.project_id
  where c.lease_owner = $2 and c.lease_expire_time = $4::timestamptz
  order by c.seq`;

/**
 * The repair READY_NEXT should make unnecessary: the first pending event of
 * every key made ready. A process that stopped between finishing an event
 * and READY_NEXT leaves its key's next event waiting; the workers run this
 * now and then (worker.ts). It reads every pending event with a key.
 */
const READY_STRANDED = `update webhook_events w set ready = true
  from (select distinct on (project_id, ordering_key) id, ready from webhook_events
    where state = 'PENDING' and ordering_key is not null
    order by project_id, ordering_key, seq) h
  where w.id = h.id and not h.ready`;

/** `insertFinished` as one fixed text (see FINISH_ROUNDS): the exchange's event and its attempts (JSON). */
const INSERT_FINISHED = `with e as (insert into webhook_events
    (id, project_id, event_type, ordering_key, uris, body, state, attempt_count, next_attempt_time,
      create_time, complete_time, call_id)
    values ($1, $2, $3, $4, array(select json_array_elements_text($5::text::json)), $6, $7, $8,
      $9::timestamptz, $10::timestamptz, $11::timestamptz, $12))
  insert into webhook_attempts
    (event_id, round, uri, start_time, finish_time, status_code, error, duration_ms, response_body,
      response_truncated)
  select "eventId", round, uri, "startTime", "finishTime", "statusCode", error, "durationMs", "responseBody",
    coalesce("responseTruncated", false)
  from json_to_recordset($13::text::json) as a("eventId" text, round integer, uri text,
    "startTime" timestamptz, "finishTime" timestamptz, "statusCode" integer, error text, "durationMs" integer,
    "responseBody" text, "responseTruncated" boolean)`;

/**
 * `claim` as one fixed text (see FINISH_ROUNDS): $1 owner, $2 now, $3 the
 * lease's expiry, $4 the limit. Timestamps are read as epoch milliseconds
 * (exact: millisecond precision), the URIs as a JSON array.
 */
const CLAIM = `with due as (
    select id from webhook_events t
    where state = 'PENDING' and ready and next_attempt_time <= $2::timestamptz
      and (lease_expire_time is null or lease_expire_time <= $2::timestamptz)
      and (ordering_key is null or not exists (
        select 1 from webhook_events earlier
        where earlier.project_id = t.project_id and earlier.ordering_key = t.ordering_key
          and earlier.state = 'PENDING' and earlier.seq < t.seq))
    order by next_attempt_time asc, seq asc
    limit $4
    for update of t skip locked),
  claimed as (update webhook_events set lease_owner = $1, lease_expire_time = $3::timestamptz
    where id in (select id from due) returning *)
  ${CLAIMED_COLUMNS}
  from claimed c join projects p on p.id = c.project_id
  order by c.seq`;

interface KeptRow {
  id: string;
  project_id: string;
  ordering_key: string | null;
  state: string;
}

/** The keys (JSON for READY_NEXT) of the events in `kept` that left PENDING; undefined when none. */
function keysLeft(kept: readonly KeptRow[]): string | undefined {
  const keys = kept
    .filter((r) => r.state !== "PENDING" && r.ordering_key !== null)
    .map((r) => ({ p: r.project_id, k: r.ordering_key }));
  return keys.length === 0 ? undefined : JSON.stringify(keys);
}

function dateOf(value: unknown): Date | null {
  return value === null ? null : new Date(value as number);
}

function claimedOf(v: unknown[]): ClaimedEvent {
  return {
    event: {
      id: v[0] as string,
      seq: v[1] as number,
      projectId: v[2] as string,
      eventType: v[3] as string,
      orderingKey: v[4] as string | null,
      uris: JSON.parse(v[5] as string) as string[],
      body: v[6] as string,
      state: v[7] as WebhookEventRow["state"],
      attemptCount: v[8] as number,
      nextAttemptTime: dateOf(v[9]),
      leaseOwner: v[10] as string | null,
      leaseExpireTime: dateOf(v[11]),
      createTime: new Date(v[12] as number),
      completeTime: dateOf(v[13]),
      callId: v[14] as string | null,
      ready: true,
    },
    signingKey: v[15] as string,
  };
}

function iso(value: Date | null | undefined): string | null {
  return value == null ? null : value.toISOString();
}

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

/** One event's finished round, for `finishRounds`. */
export interface FinishedRound {
  eventId: string;
  round: number;
  attempts: NewWebhookAttemptRow[];
  outcome: RoundOutcome;
}

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
    const client = directClientOf(this.db);
    if (client !== undefined) {
      const rows = await directRows(client, CLAIM, [
        owner,
        now.toISOString(),
        leaseExpireTime.toISOString(),
        limit,
      ]);
      return rows.map(claimedOf);
    }
    const earlier = alias(t, "earlier");
    const due = this.db
      .select({ id: t.id })
      .from(t)
      .where(
        and(
          eq(t.state, "PENDING"),
          eq(t.ready, true),
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
    // One statement: the claim and the signing keys of the claimed events' projects.
    const claimed = this.db
      .$with("claimed")
      .as(
        this.db.update(t).set({ leaseOwner: owner, leaseExpireTime }).where(inArray(t.id, due)).returning(),
      );
    const event = Object.fromEntries(
      Object.keys(getTableColumns(t)).map((k) => [k, claimed[k as keyof typeof claimed]]),
    ) as unknown as typeof t._.columns;
    const rows = await this.db
      .with(claimed)
      .select({ event, signingKey: projects.signingKey })
      .from(claimed)
      .innerJoin(projects, eq(projects.id, claimed.projectId));
    return (rows as ClaimedEvent[]).sort((a, b) => a.event.seq - b.event.seq);
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
    const kept = await this.finishRounds(owner, [{ eventId, round, attempts: made, outcome }]);
    return kept.has(eventId);
  }

  /**
   * Records the rounds of several events in one statement (so in one
   * transaction): every attempt always, and each event's new state only
   * while `owner` still holds its lease. Returns the ids whose state was
   * recorded; the others' leases were lost.
   */
  async finishRounds(owner: string, rounds: readonly FinishedRound[]): Promise<Set<string>> {
    return (await this.finish(owner, rounds)).kept;
  }

  /**
   * finishRounds, and then the next event of each key that left PENDING
   * made ready; given `handOver`, those due at its `now` are leased to
   * `owner` until its `leaseExpireTime` and returned (`next`), for the
   * worker to deliver at once.
   */
  async finish(
    owner: string,
    rounds: readonly FinishedRound[],
    handOver?: { now: Date; leaseExpireTime: Date },
  ): Promise<{ kept: Set<string>; next: ClaimedEvent[] }> {
    if (rounds.length === 0) return { kept: new Set(), next: [] };
    const kept = await this.finishOnly(owner, rounds);
    const keys = keysLeft(kept);
    if (keys === undefined) return { kept: new Set(kept.map((r) => r.id)), next: [] };
    const params = [
      keys,
      owner,
      handOver === undefined ? "-infinity" : handOver.now.toISOString(),
      (handOver?.leaseExpireTime ?? new Date(0)).toISOString(),
    ];
    const next = await fixedRows(this.db, READY_NEXT, params);
    return { kept: new Set(kept.map((r) => r.id)), next: next.map(claimedOf) };
  }

  /** Records the rounds (FINISH_ROUNDS); the events whose state was recorded. */
  private async finishOnly(owner: string, rounds: readonly FinishedRound[]): Promise<KeptRow[]> {
    const made = rounds.flatMap((r) => r.attempts);
    const client = directClientOf(this.db);
    if (client !== undefined) {
      const v = rounds.map(({ eventId, round, outcome }) => ({
        id: eventId,
        state: outcome.state,
        round,
        next: outcome.state === "PENDING" ? outcome.nextAttemptTime : null,
        complete: outcome.state === "PENDING" ? null : outcome.completeTime,
      }));
      const params = [owner, JSON.stringify(v), JSON.stringify(made)];
      const rows = await timedStatement(FINISH_ROUNDS, () =>
        client.unsafe(FINISH_ROUNDS, params, { prepare: true }),
      );
      return [...rows] as unknown as KeptRow[];
    }
    const values = sql.join(
      rounds.map(({ eventId, round, outcome }) => {
        const pending = outcome.state === "PENDING";
        return sql`(${eventId}::text, ${outcome.state}::text, ${round}::integer, ${
          pending ? outcome.nextAttemptTime.toISOString() : null
        }::timestamptz, ${pending ? null : outcome.completeTime.toISOString()}::timestamptz)`;
      }),
      sql`, `,
    );
    const update = sql`update ${t} set state = v.state, attempt_count = v.round, next_attempt_time = v.next,
      complete_time = v.complete, lease_owner = null, lease_expire_time = null
      from (values ${values}) as v(id, state, round, next, complete)
      where ${t}.id = v.id and ${t}.lease_owner = ${owner} and ${t}.state = 'PENDING'
      returning ${t}.id, ${t}.project_id, ${t}.ordering_key, ${t}.state`;
    const statement =
      made.length === 0
        ? update
        : sql`with made as (${this.db.insert(attempts).values(made).getSQL()}), kept as (${update}) select * from kept`;
    return rowsOf<KeptRow>(await this.db.execute(statement));
  }

  /**
   * Makes ready the first pending event of every key that is not (see
   * READY_STRANDED); resolves with how many there were — zero unless a
   * process stopped between finishing an event and readying the next.
   */
  async readyStranded(): Promise<number> {
    const client = directClientOf(this.db);
    if (client !== undefined) return (await client.unsafe(READY_STRANDED)).count;
    const result = (await this.db.execute(sql.raw(READY_STRANDED))) as unknown as {
      affectedRows?: number;
      count?: number;
    };
    return result.affectedRows ?? result.count ?? 0;
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
        // The claim keeps the order of its key (an event of it may be in flight).
        ready: true,
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
    // One statement: both rows or neither, in one round trip.
    const client = directClientOf(this.db);
    if (client !== undefined) {
      const params = [
        event.id,
        event.projectId,
        event.eventType,
        event.orderingKey ?? null,
        JSON.stringify(event.uris),
        event.body,
        event.state,
        event.attemptCount ?? 0,
        iso(event.nextAttemptTime),
        event.createTime.toISOString(),
        iso(event.completeTime),
        event.callId ?? null,
        JSON.stringify(made),
      ];
      await timedStatement(INSERT_FINISHED, () => client.unsafe(INSERT_FINISHED, params, { prepare: true }));
      return;
    }
    if (made.length === 0) await this.db.insert(t).values(event);
    else {
      await this.db.execute(
        sql`with e as (${this.db.insert(t).values(event).getSQL()}) ${this.db.insert(attempts).values(made).getSQL()}`,
      );
    }
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
