import { desc, eq, sql } from "drizzle-orm";
import { keysetAfter, keysetOrder, type PagePosition } from "../../api/pagination.js";
import type { Db } from "../../db/client.js";
import {
  type NewSimulatorRouteRow,
  type SimulatorRouteRow,
  simulatorRoutes,
} from "../../db/schema/simulator.js";

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
