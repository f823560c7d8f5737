import { desc, eq, sql } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../../api/pagination.js";
import type { Db } from "../../db/client.js";
import { directClientOf, directRows } from "../../db/direct.js";
import {
  type NewSimulatorRouteRow,
  type SimulatorRouteRow,
  simulatorRoutes,
} from "../../db/schema/simulator.js";

/**
 * `longestMatch` as a fixed text on postgres.js (db/direct.ts): every
 * placed call resolves its route, so no query is built per call. The
 * creation time is read as epoch milliseconds.
 */
const LONGEST_MATCH = `select id, prefix, outcome, ring_seconds, talk_seconds, audio, digits, words, error_code,
    error_message, (extract(epoch from create_time) * 1000)::float8, message_outcome, message_deliver_seconds,
    message_error_code, message_error_message
  from simulator_routes where starts_with($1::text, prefix) order by length(prefix) desc limit 1`;

function routeRowOf(v: unknown[]): SimulatorRouteRow {
  return {
    id: v[0] as string,
    prefix: v[1] as string,
    outcome: v[2] as string,
    ringSeconds: v[3] as number,
    talkSeconds: v[4] as number,
    audio: v[5] as string,
    digits: v[6] as string,
    words: v[7] as string,
    errorCode: v[8] as string,
    errorMessage: v[9] as string,
    createTime: new Date(v[10] as number),
    messageOutcome: v[11] as string,
    messageDeliverSeconds: v[12] as number,
    messageErrorCode: v[13] as string,
    messageErrorMessage: v[14] as string,
  };
}

export class SimulatorRoutesRepository {
  constructor(private readonly db: Db) {}

  async insert(row: NewSimulatorRouteRow): Promise<SimulatorRouteRow> {
    const [inserted] = await this.db.insert(simulatorRoutes).values(row).returning();
    return inserted!;
  }

  async get(id: string): Promise<SimulatorRouteRow | undefined> {
    const [row] = await this.db.select().from(simulatorRoutes).where(eq(simulatorRoutes.id, id));
    return row;
  }

  async findByPrefix(prefix: string): Promise<SimulatorRouteRow | undefined> {
    const [row] = await this.db.select().from(simulatorRoutes).where(eq(simulatorRoutes.prefix, prefix));
    return row;
  }

  /** The route whose prefix is the longest prefix of `to`, if any. */
  async longestMatch(to: string): Promise<SimulatorRouteRow | undefined> {
    const client = directClientOf(this.db);
    if (client !== undefined) {
      const [v] = await directRows(client, LONGEST_MATCH, [to]);
      return v === undefined ? undefined : routeRowOf(v);
    }
    const [row] = await this.db
      .select()
      .from(simulatorRoutes)
      .where(sql`starts_with(${to}::text, ${simulatorRoutes.prefix})`)
      .orderBy(desc(sql`length(${simulatorRoutes.prefix})`))
      .limit(1);
    return row;
  }

  list(after: PagePosition | undefined, limit: number): Promise<SimulatorRouteRow[]> {
    return this.db
      .select()
      .from(simulatorRoutes)
      .where(keysetAfter(simulatorRoutes.createTime, simulatorRoutes.id, after))
      .orderBy(...keysetOrder(simulatorRoutes.createTime, simulatorRoutes.id))
      .limit(limit);
  }

  async delete(id: string): Promise<boolean> {
    const rows = await this.db
      .delete(simulatorRoutes)
      .where(eq(simulatorRoutes.id, id))
      .returning({ id: simulatorRoutes.id });
    return rows.length > 0;
  }
}
