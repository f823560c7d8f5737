/**
 * The regulatory listings' statements run on the driver directly
 * (src/db/direct.ts) give exactly the rows drizzle gives: the same rows,
 * the same values and types, the same pages. Inside a transaction the
 * repository uses drizzle, which is what the direct path is compared with.
 * PostgreSQL only: on a PGlite handle there is no direct path.
 */
import { and, eq } from "drizzle-orm";
import { expect, it } from "vitest";
import { directClientOf } from "../../src/db/direct.js";
import { projects, regulatoryListings } from "../../src/db/schema/index.js";
import { RegulatoryListingsRepository } from "../../src/numbering/regulatory-listings/repository.js";
import { describePostgres, postgresTestBackend, useTestDatabase } from "../support/db.js";

describePostgres("regulatory listings direct on postgres", () => {
  const database = useTestDatabase(postgresTestBackend()!);

  it("inserts, finds and pages as drizzle does", async () => {
    const db = database.db;
    expect(directClientOf(db)).toBeDefined();
    const now = new Date("2026-01-02T03:04:05.678Z");
    await db
      .insert(projects)
      .values({ id: "p1", signingKey: "k", signingKeyCreateTime: now, createTime: now });
    const direct = new RegulatoryListingsRepository(db);
    const made = [];
    for (let i = 0; i < 5; i++) {
      const time = new Date(now.getTime() + (i % 3) * 1000 + 1); // equal times: the id breaks ties
      made.push(
        await direct.insert({
          id: `l${i}`,
          projectId: "p1",
          displayName: i === 0 ? "" : `Listing "${i}", {x}`,
          addressLines: i % 2 === 0 ? ["1 George St"] : ['Level 3, "North"', "1 {George} St\\"],
          locality: "Sydney",
          administrativeArea: "NSW",
          postalCode: "2000",
          regionCode: "AU",
          personGivenName: i % 2 === 0 ? "Ada" : null,
          personFamilyName: i % 2 === 0 ? "Lovelace" : null,
          businessName: i % 2 === 0 ? null : "Acme",
          valid: i % 2 === 0,
          verified: false,
          createTime: time,
          updateTime: time,
        }),
      );
    }
    const stored = await db.select().from(regulatoryListings).where(eq(regulatoryListings.projectId, "p1"));
    for (const row of made) {
      const viaDrizzle = stored.find((r) => r.id === row.id);
      expect(row).toEqual(viaDrizzle);
      expect(Object.keys(row)).toEqual(Object.keys(viaDrizzle!));
      expect(await direct.find("p1", row.id)).toEqual(viaDrizzle);
    }
    expect(await direct.find("p1", "nope")).toBeUndefined();
    const [one] = await db
      .select()
      .from(regulatoryListings)
      .where(and(eq(regulatoryListings.projectId, "p1"), eq(regulatoryListings.id, "l1")));
    expect(one!.addressLines).toEqual(['Level 3, "North"', "1 {George} St\\"]);

    // Pages: the direct path against drizzle's (in a transaction).
    const pages = async (repo: RegulatoryListingsRepository) => {
      const out: string[][] = [];
      let after: { createTime: Date; id: string } | undefined;
      for (;;) {
        const page = await repo.list("p1", after, 2);
        out.push(page.map((r) => r.id));
        if (page.length < 2) return out;
        const last = page[page.length - 1]!;
        after = { createTime: last.createTime, id: last.id };
      }
    };
    const viaDirect = await pages(direct);
    const viaDrizzle = await db.transaction(async (tx) => {
      const repo = new RegulatoryListingsRepository(tx);
      expect(directClientOf(tx)).toBeUndefined();
      return pages(repo);
    });
    expect(viaDirect).toEqual(viaDrizzle);
    expect(viaDirect.flat()).toEqual(["l2", "l4", "l1", "l3", "l0"]);
  });
});
