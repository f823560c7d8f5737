/**
 * The demo inventory of the embedded database: only numbers regulators
 * reserve for fiction, valid to libphonenumber, seeded idempotently, and
 * only when build() opens the embedded database itself.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { numberingDomains } from "../../src/numbering/domains.js";
import { DEMO_BLOCKS, seedDemoInventory } from "../../src/numbering/inventory/demo.js";
import { numberFacts, rangeEnd } from "../../src/numbering/numbers.js";
import { type App, build } from "../../src/server.js";
import { newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { pglite, useTestDatabase } from "../support/db.js";
import { Capability, NumberType, numberingClients, provision, searchAll } from "./support.js";

/** The reserved ranges, as regulators publish them. */
const RESERVED = [
  /^\+61[2378]5550[0-9]{4}$/, // ACMA: (02|03|07|08) 5550 xxxx
  /^\+61491570(006|110|156|157|158|159|313|737)$/, // ACMA: fictitious mobiles
  /^\+442079460[0-9]{3}$/, // Ofcom: 020 7946 0000-0999
  /^\+1[2-9][0-9]{2}55501[0-9]{2}$/, // NANPA: NXX 555-0100 to 555-0199
];

describe("demo inventory", () => {
  it("holds only reserved fictional numbers, each valid for its country", () => {
    for (const block of DEMO_BLOCKS) {
      const end = rangeEnd(block.startPhoneNumber, block.size)!;
      for (const n of [block.startPhoneNumber, end]) {
        expect(
          RESERVED.some((r) => r.test(n)),
          n,
        ).toBe(true);
        expect(numberFacts(n)?.country, n).toBe(block.countryCode);
      }
    }
  });

  it("offers SMS-capable numbers (mobiles, NANPA, (02) 5550 1xxx) besides voice-only landlines", () => {
    const sms = (n: string) =>
      DEMO_BLOCKS.find((b) => {
        const end = rangeEnd(b.startPhoneNumber, b.size)!;
        return b.startPhoneNumber <= n && n <= end && n.length === end.length;
      })?.capabilities.includes("SMS");
    expect(sms("+61491570156")).toBe(true);
    expect(sms("+14155550123")).toBe(true);
    expect(sms("+61255501234")).toBe(true);
    expect(sms("+61255500000")).toBe(false);
    expect(sms("+442079460123")).toBe(false);
  });

  describe("seeding", () => {
    const database = useTestDatabase(pglite);
    const clock = new TestClock();

    it("adds the demo numbers once, keeping changes made since", async () => {
      const c = numberingClients(database.db, clock);
      const inventory = numberingDomains(database.db, clock, { numberQuarantineSeconds: 0 }).inventory;
      await seedDemoInventory(inventory);
      const sydney = await c.numbers.searchPhoneNumbers({
        countryCode: "AU",
        prefix: "0255501",
        pageSize: 3,
      });
      expect(sydney.phoneNumbers.map((n) => n.phoneNumber)).toEqual([
        "+61255501000",
        "+61255501001",
        "+61255501002",
      ]);
      expect(sydney.phoneNumbers[0]).toMatchObject({ numberType: NumberType.LOCAL, sku: "AU-LOCAL-MONTHLY" });
      expect(await searchAll(c, { countryCode: "AU", numberType: NumberType.MOBILE })).toHaveLength(8);
      expect(await searchAll(c, { countryCode: "GB" })).toHaveLength(1000);
      expect(await searchAll(c, { countryCode: "US" })).toHaveLength(300);

      // The operator changes some numbers; a provisioned one is not offered.
      await c.admin.createNumberBlock({
        numberBlock: {
          startPhoneNumber: "+61255501000",
          size: 1000,
          numberType: NumberType.LOCAL,
          capabilities: [Capability.VOICE, Capability.SMS],
          countryCode: "AU",
        },
      });
      await provision(c, await newProject(database.db), "+61255501000");
      await seedDemoInventory(inventory);
      const after = await c.numbers.searchPhoneNumbers({ countryCode: "AU", prefix: "0255501", pageSize: 1 });
      expect(after.phoneNumbers[0]).toMatchObject({
        phoneNumber: "+61255501001",
        capabilities: [Capability.SMS, Capability.VOICE],
      });
      expect(await searchAll(c, { countryCode: "AU", numberType: NumberType.MOBILE })).toHaveLength(8);
    });
  });

  describe("on start", () => {
    const database = useTestDatabase(pglite);
    let dataDir: string;
    let embedded: App | undefined;
    let given: App | undefined;

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), "switchboard-demo-"));
    });

    afterAll(async () => {
      await embedded?.close();
      await given?.close();
      await rm(dataDir, { recursive: true, force: true });
    });

    async function search(app: App): Promise<number> {
      const address = await app.listen(0, "127.0.0.1");
      const res = await fetch(
        `http://127.0.0.1:${address.port}/v1beta1/phoneNumbers:search?countryCode=AU&prefix=02&pageSize=100`,
        { headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` } },
      );
      expect(res.status).toBe(200);
      return ((await res.json()) as { phoneNumbers?: unknown[] }).phoneNumbers?.length ?? 0;
    }

    it("seeds the embedded database build() opens itself", async () => {
      embedded = await build({ config: testConfig({ DATA_DIR: dataDir }) });
      expect(await search(embedded)).toBe(100);
    }, 120_000);

    it("leaves a database it is given alone", async () => {
      given = await build({ config: testConfig(), db: database.db });
      expect(await search(given)).toBe(0);
    });
  });
});
