/**
 * The webhook worker's recording of finished rounds (FINISH_ROUNDS,
 * src/events/repository.ts) runs a generic plan, prepared once per
 * connection, in each of its four forms (with a hand-over or not, sent for
 * the first time or again). When one text took the form as parameters,
 * PostgreSQL's plan cache found every custom plan cheaper and planned the
 * statement afresh on each execution (0.9 ms a plan, a third of its time).
 *
 * Real parts: PostgreSQL, the repository on a postgres.js client of one
 * connection, and that connection's own count of its prepared statements'
 * plans (pg_prepared_statements: generic_plans, custom_plans).
 */
import { drizzle } from "drizzle-orm/postgres-js";
import postgres, { type Sql } from "postgres";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Db } from "../../src/db/client.js";
import * as schema from "../../src/db/schema/index.js";
import { WebhookEventsRepository } from "../../src/events/repository.js";
import { describePostgres, postgresTestBackend, useTestDatabase } from "../support/db.js";

describePostgres("finishing webhook rounds: one generic plan per form", () => {
  const database = useTestDatabase(postgresTestBackend()!);
  let client: Sql;
  let repo: WebhookEventsRepository;

  beforeAll(async () => {
    client = postgres(database.url!, { max: 1, onnotice: () => {} });
    repo = new WebhookEventsRepository(drizzle({ client, schema }) as unknown as Db);
  });
  afterAll(async () => {
    await client?.end({ timeout: 5 });
  });

  it("plans each form at most five times (PostgreSQL's custom plans), then runs its generic plan", async () => {
    const handOver = { now: new Date(), leaseExpireTime: new Date(Date.now() + 60_000) };
    // Rounds of events that are not there: each execution records nothing, and is counted.
    const rounds = (i: number) => [
      {
        eventId: `missing-${i}`,
        round: 1,
        attempts: [],
        outcome: { state: "DELIVERED" as const, completeTime: new Date() },
      },
    ];
    const executions = 12;
    for (let i = 0; i < executions; i++) {
      for (const form of [undefined, handOver]) {
        for (const again of [false, true]) {
          const result = await repo.finish("w1", rounds(i), form, again);
          expect(result).toEqual({ kept: new Set(), next: [] });
        }
      }
    }
    // The one connection's prepared statements: the forms of FINISH_ROUNDS begin `with v as`.
    const plans = await client<{ generic_plans: string; custom_plans: string }[]>`
      select generic_plans::text, custom_plans::text from pg_prepared_statements
      where statement like 'with v as%' order by statement`;
    expect(plans).toHaveLength(4);
    for (const p of plans) {
      expect(Number(p.custom_plans)).toBeLessThanOrEqual(5);
      expect(Number(p.generic_plans)).toBeGreaterThanOrEqual(executions - 5);
    }
  });
});
