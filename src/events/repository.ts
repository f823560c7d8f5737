/** Storage of the webhook outbox: the `webhook_events` and `webhook_attempts` tables. */
import { and, asc, eq, inArray, ne, type SQL, sql } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../api/pagination.js";
import type { Db } from "../db/client.js";
import { directClientOf, fixedRows } from "../db/direct.js";
import { groupedRows } from "../db/group-commit.js";
import {
  webhookAttempts as attempts,
  type NewWebhookAttemptRow,
  type NewWebhookEventRow,
  webhookEvents as t,
  type WebhookAttemptRow,
  type WebhookEventRow,
} from "../db/schema/index.js";

function ms(column: string): string {
  return `(extract(epoch from ${column}) * 1000)::float8`;
}

/** What a claim returns (claimedOf): the event `c` and its project's signing key (`p`). */
const CLAIMED_COLUMNS = `select c.id, c.seq::float8 as seq, c.project_id, c.event_type, c.ordering_key,
    array_to_json(c.uris)::text as uris, c.body, c.state, c.attempt_count,
    ${ms("c.next_attempt_time")} as next_attempt_ms, c.lease_owner, ${ms("c.lease_expire_time")} as lease_expire_ms,
    ${ms("c.create_time")} as create_ms, ${ms("c.complete_time")} as complete_ms, c.call_id, p.signing_key`;

/**
 * `finish` as fixed texts (db/direct.ts): the rounds and the attempts are
 * each one JSON parameter (json_to_recordset), so a text is the same
 * whatever their number and each connection prepares it once. Timestamps
 * are ISO strings in the JSON; the attempts' keys are the row type's
 * (camelCase). $1 the worker, $2 the rounds, $3 the attempts.
 *
 * Four texts, one per use (finishRoundsText): with a hand-over or not, sent
 * for the first time or again. What tells them apart is written in the text
 * (a literal), not passed as a parameter: a parameter that switches whole
 * parts off made every custom plan look far cheaper than the generic one,
 * so PostgreSQL planned the statement afresh on every execution (0.9 ms a
 * plan, a third of its time; docs/performance.md, twenty-second session).
 *
 * With a hand-over ($4 now, $5 the lease's expiry), the same statement
 * hands over: the next pending event of each key whose event left PENDING —
 * nothing of its key is before it — when due and free, is leased to the
 * worker ($1, until $5) and returned as CLAIM returns it, for the worker to
 * deliver without another claim. An event not yet committed is not seen: a
 * claim finds it later. A claim that took it first holds its lease: the
 * update waits for that claim, then finds it leased.
 *
 * `kept` finds its events by primary key (`id = any(...)`, an index
 * condition whatever the plan), and its lease test is written
 * `coalesce(lease_owner, '') = $1` (the same, $1 being a worker's id) so
 * that no partial index's predicate follows from it: a generic plan read
 * them through webhook_events_leased_idx, every leased event and its dead
 * entries, under a backlog (10,000 buffers a statement).
 *
 * Its rows: the recorded events' ids (JSON, the first column, on every
 * row), each with one handed-over event or, when there is none, nulls.
 *
 * Sent again with the same parameters (its reply was lost: was it
 * committed?), it changes nothing more and answers as the first did (a
 * first sending skips these):
 * - `done`: an event already left as this round leaves it (state, round,
 *   times) counts as recorded;
 * - an attempt already stored (event, round, URI, start time) is not stored
 *   again;
 * - `again`: events leased to $1 until exactly $5, other than the rounds'
 *   own, are the first sending's hand-over (the worker gives every
 *   lease-granting statement an expiry of its own), returned again. Before
 *   the first sending commits there are none: it is the statement that
 *   grants that lease.
 */
function finishRoundsText(handOver: boolean, resend: boolean): string {
  const now = handOver ? "$4::timestamptz" : "null::timestamptz";
  const expiry = handOver ? "$5::timestamptz" : "null::timestamptz";
  const again = resend ? "true" : "false";
  return `with v as (
    select * from json_to_recordset($2::text::json)
      as v(id text, state text, round integer, next timestamptz, complete timestamptz)),
  made as (insert into webhook_attempts
      (event_id, round, uri, start_time, finish_time, status_code, error, duration_ms)
    select "eventId", round, uri, "startTime", "finishTime", "statusCode", error, "durationMs"
    from json_array_elements($3::text::json) with ordinality as j(attempt, i),
      json_to_record(j.attempt) as a("eventId" text, round integer, uri text,
      "startTime" timestamptz, "finishTime" timestamptz, "statusCode" integer, error text, "durationMs" integer)
    where not (${again} and exists (select 1 from webhook_attempts x where x.event_id = a."eventId"
      and x.round = a.round and x.uri = a.uri and x.start_time = a."startTime"))
    order by j.i),
  kept as (update webhook_events e set state = v.state, attempt_count = v.round, next_attempt_time = v.next,
      complete_time = v.complete, lease_owner = null, lease_expire_time = null
    from v where e.id = any(array(select id from v)) and e.id = v.id
      and coalesce(e.lease_owner, '') = $1 and e.state = 'PENDING'
    returning e.id, e.project_id, e.ordering_key, e.state, e.seq),
  done as (select e.id from webhook_events e join v on e.id = v.id
    where ${again} and e.state = v.state and e.attempt_count = v.round and e.lease_owner is null
      and e.next_attempt_time is not distinct from v.next and e.complete_time is not distinct from v.complete),
  h as (select distinct on (n.project_id, n.ordering_key) n.id
    from kept k join webhook_events n on n.project_id = k.project_id and n.ordering_key = k.ordering_key
      and n.state = 'PENDING' and n.seq > k.seq
    where k.state <> 'PENDING' and ${now} is not null
    order by n.project_id, n.ordering_key, n.seq),
  r as (update webhook_events w set lease_owner = $1, lease_expire_time = ${expiry}
    from h where w.id = h.id and w.next_attempt_time <= ${now}
      and (w.lease_expire_time is null or w.lease_expire_time <= ${now})
    returning w.*),
  again as (select * from webhook_events w where ${again} and ${now} is not null and w.lease_owner = $1
    and w.lease_expire_time = ${expiry} and w.state = 'PENDING' and w.id not in (select id from v)),
  handed as (${CLAIMED_COLUMNS} from (select * from r union all select * from again) c
    join projects p on p.id = c.project_id)
  select (select coalesce(json_agg(id), '[]'::json) from (select id from kept union select id from done) k)::text
      as kept, handed.*
  from (select 1) as one left join handed on true
  order by handed.seq`;
}

/** The four texts of finish: [hand-over][resend]. */
const FINISH_ROUNDS = [
  [finishRoundsText(false, false), finishRoundsText(false, true)],
  [finishRoundsText(true, false), finishRoundsText(true, true)],
] as const;

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

/** "No earlier event of its key is pending", for an event `t` of the claim. */
const HEAD_OF_KEY = `(t.ordering_key is null or not exists (
        select 1 from webhook_events earlier
        where earlier.project_id = t.project_id and earlier.ordering_key = t.ordering_key
          and earlier.state = 'PENDING' and earlier.seq < t.seq))`;

/**
 * `claim` as one fixed text (see FINISH_ROUNDS): $1 owner, $2 now, $3 the
 * lease's expiry, $4 the limit. Timestamps are read as epoch milliseconds
 * (exact: millisecond precision), the URIs as a JSON array.
 *
 * Two scans, each of its own partial index (migration 0012): `ready`, the
 * pending events no worker holds, read in the claim's order from
 * webhook_events_due_idx until the limit is found, and `expired`, the
 * pending events whose lease ran out (their worker died), from
 * webhook_events_leased_idx. Events in flight (leased, lease running) are in
 * neither, so a claim no longer walks past them. A lease sets lease_owner
 * and lease_expire_time together and a finish clears both, so "no lease or
 * an expired one" is exactly what the single scan it replaces took.
 */
const CLAIM = `with ready as (
    select id, next_attempt_time, seq from webhook_events t
    where state = 'PENDING' and lease_owner is null and next_attempt_time <= $2::timestamptz
      and ${HEAD_OF_KEY}
    order by next_attempt_time asc, seq asc
    limit $4
    for update of t skip locked),
  expired as (
    select id, next_attempt_time, seq from webhook_events t
    where state = 'PENDING' and lease_owner is not null and lease_expire_time <= $2::timestamptz
      and next_attempt_time <= $2::timestamptz and ${HEAD_OF_KEY}
    order by next_attempt_time asc, seq asc
    limit $4
    for update of t skip locked),
  due as (select id from (select * from ready union all select * from expired) d
    order by next_attempt_time asc, seq asc
    limit $4),
  claimed as (update webhook_events set lease_owner = $1, lease_expire_time = $3::timestamptz
    where id in (select id from due) returning *)
  ${CLAIMED_COLUMNS}
  from claimed c join projects p on p.id = c.project_id
  order by c.seq`;

/**
 * The events that statements of $1 leased until exactly one of $2 (a JSON
 * array of times) whose replies were lost: claims, and enqueues leased to
 * the worker (the worker gives every lease-granting statement an expiry of
 * its own). Those at their key's head (HEAD_OF_KEY) are leased again until
 * $3 and returned as CLAIM returns them; the others (an enqueue leased behind
 * an event of its key still pending) are set free, for the claims and
 * hand-overs to take in their key's order.
 */
const RECLAIM = `with lost as (select id from webhook_events t
    where state = 'PENDING' and lease_owner = $1
      and lease_expire_time = any(array(select json_array_elements_text($2::text::json)::timestamptz))
      and ${HEAD_OF_KEY}),
  freed as (update webhook_events t set lease_owner = null, lease_expire_time = null
    where state = 'PENDING' and lease_owner = $1
      and lease_expire_time = any(array(select json_array_elements_text($2::text::json)::timestamptz))
      and id not in (select id from lost)),
  claimed as (update webhook_events set lease_expire_time = $3::timestamptz
    where id in (select id from lost) returning *)
  ${CLAIMED_COLUMNS}
  from claimed c join projects p on p.id = c.project_id
  order by c.seq`;

/**
 * Sets free the events in $2 (a JSON array of ids) that $1 holds leased and
 * are pending. By primary key: its lease test is written
 * `coalesce(lease_owner, '') = $1` so that no partial index's predicate
 * follows from it (a generic plan read webhook_events_leased_idx, every
 * leased event: 1,600 buffers a statement; as FINISH_ROUNDS).
 */
const RELEASE = `update webhook_events set lease_owner = null, lease_expire_time = null
  where id = any(array(select json_array_elements_text($2::text::json)))
    and coalesce(lease_owner, '') = $1 and state = 'PENDING'`;

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
    const rows = await fixedRows(this.db, CLAIM, [
      owner,
      now.toISOString(),
      leaseExpireTime.toISOString(),
      limit,
    ]);
    return rows.map(claimedOf);
  }

  /**
   * The events that statements of `owner` leased until one of `lostLeases`
   * (their replies were lost): those at their key's head leased again until
   * `leaseExpireTime` and returned, the others set free (see RECLAIM).
   */
  async reclaim(owner: string, lostLeases: readonly Date[], leaseExpireTime: Date): Promise<ClaimedEvent[]> {
    const rows = await fixedRows(this.db, RECLAIM, [
      owner,
      JSON.stringify(lostLeases.map((d) => d.toISOString())),
      leaseExpireTime.toISOString(),
    ]);
    return rows.map(claimedOf);
  }

  /** Gives up `owner`'s leases of the pending events `ids` (enqueued leased, never delivered). */
  async release(owner: string, ids: readonly string[]): Promise<void> {
    await fixedRows(this.db, RELEASE, [owner, JSON.stringify(ids)]);
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
   * finishRounds and, given `handOver`, in the same statement, the next
   * event of each key that left PENDING, when due at its `now` and free,
   * leased to `owner` until its `leaseExpireTime` and returned (`next`) for
   * the worker to deliver at once (see FINISH_ROUNDS).
   */
  async finish(
    owner: string,
    rounds: readonly FinishedRound[],
    handOver?: { now: Date; leaseExpireTime: Date },
    /** The same recording sent again: a first sending may have committed (see FINISH_ROUNDS). */
    again = false,
  ): Promise<{ kept: Set<string>; next: ClaimedEvent[] }> {
    if (rounds.length === 0) return { kept: new Set(), next: [] };
    const v = rounds.map(({ eventId, round, outcome }) => ({
      id: eventId,
      state: outcome.state,
      round,
      next: outcome.state === "PENDING" ? outcome.nextAttemptTime : null,
      complete: outcome.state === "PENDING" ? null : outcome.completeTime,
    }));
    const params: unknown[] = [owner, JSON.stringify(v), JSON.stringify(rounds.flatMap((r) => r.attempts))];
    if (handOver !== undefined)
      params.push(handOver.now.toISOString(), handOver.leaseExpireTime.toISOString());
    const rows = await fixedRows(
      this.db,
      FINISH_ROUNDS[handOver === undefined ? 0 : 1][again ? 1 : 0],
      params,
    );
    const kept = new Set(JSON.parse(rows[0]![0] as string) as string[]);
    const next = rows.filter((r) => r[1] !== null).map((r) => claimedOf(r.slice(1)));
    return { kept, next };
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
    // One statement: both rows or neither, in one round trip (on postgres.js; PGlite: drizzle below).
    if (directClientOf(this.db) !== undefined) {
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
      // Committed with the engine's other writes of this turn (group-commit.ts).
      await groupedRows(this.db, INSERT_FINISHED, params);
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
