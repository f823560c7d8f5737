/**
 * The number inventory in process: blocks added through the admin API
 * (rules, defaults, idempotence) and SearchPhoneNumbers (filters, order,
 * keyset pages bound to the query, provisioned numbers not offered).
 */
import { Code } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { PhoneNumbers } from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { createTestClient, expectCode, expectInvalid, newApiKey, newProject } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import {
  addBlock,
  type BlockInit,
  blockAllocator,
  Capability,
  type NumberingClients,
  NumberType,
  numberingClients,
  plus,
  provision,
  searchAll,
} from "./support.js";

const B = "number_block";

describe.each(testDatabases())("number inventory on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock("2026-03-01T00:00:00.000Z");
  const nextBlock = blockAllocator();
  let c: NumberingClients;

  beforeAll(() => {
    c = numberingClients(database.db, clock);
  });

  describe("CreateNumberBlock", () => {
    it("adds the numbers with default SKUs and answers the block with its last number", async () => {
      const start = nextBlock();
      const block = await c.admin.createNumberBlock({
        numberBlock: {
          startPhoneNumber: start,
          size: 100,
          numberType: NumberType.LOCAL,
          capabilities: [Capability.VOICE, Capability.SMS],
          countryCode: "AU",
        },
      });
      expect(block).toMatchObject({
        startPhoneNumber: start,
        endPhoneNumber: plus(start, 99),
        size: 100,
        numberType: NumberType.LOCAL,
        capabilities: [Capability.SMS, Capability.VOICE],
        countryCode: "AU",
        sku: "AU-LOCAL-MONTHLY",
        activationSku: "AU-LOCAL-ACTIVATION",
      });
      const found = await c.numbers.searchPhoneNumbers({
        countryCode: "AU",
        prefix: start.slice(0, 10),
        pageSize: 100,
      });
      expect(found.phoneNumbers).toHaveLength(100);
      expect(found.phoneNumbers[0]).toMatchObject({
        name: `phoneNumbers/${start.slice(1)}`,
        phoneNumber: start,
        numberType: NumberType.LOCAL,
        countryCode: "AU",
        capabilities: [Capability.SMS, Capability.VOICE],
        sku: "AU-LOCAL-MONTHLY",
        activationSku: "AU-LOCAL-ACTIVATION",
      });
    });

    it("keeps SKUs it is given, and is idempotent: adding again updates the attributes", async () => {
      const start = nextBlock();
      await addBlock(c, start, 10, { sku: "CUSTOM-M", activationSku: "CUSTOM-A" });
      await addBlock(c, start, 20, {
        numberType: NumberType.TOLL_FREE,
        capabilities: [Capability.VOICE, Capability.SMS, Capability.MMS],
      });
      const found = await c.numbers.searchPhoneNumbers({
        countryCode: "AU",
        prefix: start.slice(0, 10),
        pageSize: 100,
      });
      expect(found.phoneNumbers).toHaveLength(20);
      expect(new Set(found.phoneNumbers.map((n) => n.sku))).toEqual(new Set(["AU-TOLL-FREE-MONTHLY"]));
      expect(found.phoneNumbers[0]!.activationSku).toBe("AU-TOLL-FREE-ACTIVATION");
      expect(found.phoneNumbers[0]!.capabilities).toEqual([Capability.SMS, Capability.MMS, Capability.VOICE]);
    });

    const valid: BlockInit = {
      startPhoneNumber: "+61855509000",
      size: 10,
      numberType: NumberType.LOCAL,
      capabilities: [Capability.VOICE],
      countryCode: "AU",
    };
    it.each<{ name: string; block: BlockInit | undefined; fields: string[] }>([
      { name: "no block", block: undefined, fields: [B] },
      { name: "no start", block: { ...valid, startPhoneNumber: "" }, fields: [`${B}.start_phone_number`] },
      {
        name: "a national start",
        block: { ...valid, startPhoneNumber: "0855509000" },
        fields: [`${B}.start_phone_number`],
      },
      {
        name: "an invalid number",
        block: { ...valid, startPhoneNumber: "+61055509000" },
        fields: [`${B}.start_phone_number`],
      },
      {
        name: "a number of another country",
        block: { ...valid, startPhoneNumber: "+442079460000" },
        fields: [`${B}.start_phone_number`],
      },
      { name: "size 0", block: { ...valid, size: 0 }, fields: [`${B}.size`] },
      { name: "size 100001", block: { ...valid, size: 100_001 }, fields: [`${B}.size`] },
      {
        name: "a block past the valid numbers",
        block: { ...valid, startPhoneNumber: "+61899999990", size: 100 },
        fields: [`${B}.size`],
      },
      { name: "a lowercase country", block: { ...valid, countryCode: "au" }, fields: [`${B}.country_code`] },
      { name: "an unknown country", block: { ...valid, countryCode: "QQ" }, fields: [`${B}.country_code`] },
      { name: "no country", block: { ...valid, countryCode: "" }, fields: [`${B}.country_code`] },
      {
        name: "no number type",
        block: { ...valid, numberType: NumberType.PHONE_NUMBER_TYPE_UNSPECIFIED },
        fields: [`${B}.number_type`],
      },
      {
        name: "an unknown number type",
        block: { ...valid, numberType: 42 as NumberType },
        fields: [`${B}.number_type`],
      },
      { name: "no capabilities", block: { ...valid, capabilities: [] }, fields: [`${B}.capabilities`] },
      {
        name: "an unspecified capability",
        block: { ...valid, capabilities: [Capability.PHONE_NUMBER_CAPABILITY_UNSPECIFIED] },
        fields: [`${B}.capabilities[0]`],
      },
    ])("refuses $name with INVALID_ARGUMENT and adds nothing", async ({ block, fields }) => {
      await expectInvalid(
        c.admin.createNumberBlock(block === undefined ? {} : { numberBlock: block }),
        fields,
      );
      expect(await searchAll(c, { countryCode: "AU", prefix: "+6185550900" })).toEqual([]);
    });

    it("adds numbers of other countries", async () => {
      await addBlock(c, "+12025550100", 100, {
        countryCode: "US",
        capabilities: [Capability.VOICE, Capability.SMS],
      });
      expect(await searchAll(c, { countryCode: "US", prefix: "202555" })).toHaveLength(100);
      expect(await searchAll(c, { countryCode: "AU", prefix: "+1202" })).toEqual([]);
    });
  });

  describe("SearchPhoneNumbers", () => {
    let local: string;
    let mobile: string;
    // Both blocks, and nothing else of this file, start with this prefix.
    const prefix = "+61755509";
    beforeAll(async () => {
      local = await addBlock(c, "+61755509800", 30, { capabilities: [Capability.VOICE] });
      mobile = await addBlock(c, "+61755509900", 30, {
        numberType: NumberType.MOBILE,
        capabilities: [Capability.VOICE, Capability.SMS, Capability.MMS],
      });
    });

    it("orders by number and filters by type and capabilities", async () => {
      const all = await searchAll(c, { countryCode: "AU", prefix });
      expect(all).toEqual([...all].sort());
      expect(all).toHaveLength(60);
      expect(all).toEqual(expect.arrayContaining([local, mobile]));
      const mobiles = await searchAll(c, { countryCode: "AU", prefix, numberType: NumberType.MOBILE });
      expect(mobiles).toEqual(Array.from({ length: 30 }, (_, i) => plus(mobile, i)));
      const sms = await c.numbers.searchPhoneNumbers({
        countryCode: "AU",
        prefix,
        supportsSms: true,
        pageSize: 100,
      });
      expect(sms.phoneNumbers.map((n) => n.phoneNumber)).toEqual(mobiles);
      const mms = await c.numbers.searchPhoneNumbers({
        countryCode: "AU",
        prefix,
        supportsMms: true,
        supportsVoice: true,
        pageSize: 100,
      });
      expect(mms.phoneNumbers.map((n) => n.phoneNumber)).toEqual(mobiles);
    });

    it("reads a national prefix with or without its leading 0, or an E.164 prefix", async () => {
      const national = `0${local.slice(3, 10)}`; // 0 7 5550 98
      const expected = Array.from({ length: 30 }, (_, i) => plus(local, i));
      expect(await searchAll(c, { countryCode: "AU", prefix: national })).toEqual(expected);
      expect(await searchAll(c, { countryCode: "AU", prefix: national.slice(1) })).toEqual(expected);
      expect(await searchAll(c, { countryCode: "AU", prefix: local.slice(0, 10) })).toEqual(expected);
      expect(await searchAll(c, { countryCode: "AU", prefix: plus(local, 29) })).toEqual([plus(local, 29)]);
    });

    it("walks pages without gaps or repeats, each token bound to its query", async () => {
      const expected = await searchAll(c, { countryCode: "AU", prefix });
      for (const pageSize of [1, 7, 100]) {
        const seen: string[] = [];
        let pageToken = "";
        do {
          const page = await c.numbers.searchPhoneNumbers({ countryCode: "AU", prefix, pageSize, pageToken });
          expect(page.phoneNumbers.length).toBeLessThanOrEqual(pageSize);
          seen.push(...page.phoneNumbers.map((n) => n.phoneNumber));
          pageToken = page.nextPageToken;
        } while (pageToken !== "");
        expect(seen).toEqual(expected);
      }
      const first = await c.numbers.searchPhoneNumbers({ countryCode: "AU", prefix, pageSize: 5 });
      expect(first.phoneNumbers).toHaveLength(5);
      // the same query with the prefix written nationally is the same query
      const national = `0${prefix.slice(3)}`;
      const second = await c.numbers.searchPhoneNumbers({
        countryCode: "AU",
        prefix: national,
        pageSize: 5,
        pageToken: first.nextPageToken,
      });
      expect(second.phoneNumbers[0]!.phoneNumber).toBe(expected[5]);
      await expectInvalid(
        c.numbers.searchPhoneNumbers({
          countryCode: "AU",
          prefix,
          supportsSms: true,
          pageToken: first.nextPageToken,
        }),
        ["page_token"],
      );
      await expectInvalid(c.numbers.searchPhoneNumbers({ countryCode: "AU", pageToken: "not a token" }), [
        "page_token",
      ]);
      const fallback = await c.numbers.searchPhoneNumbers({ countryCode: "AU", prefix });
      expect(fallback.phoneNumbers).toHaveLength(10);
    });

    it("does not offer provisioned numbers", async () => {
      const parent = await newProject(database.db);
      await provision(c, parent, plus(local, 5));
      const all = await searchAll(c, { countryCode: "AU", prefix: local.slice(0, 10) });
      expect(all).toHaveLength(29);
      expect(all).not.toContain(plus(local, 5));
    });

    it.each([
      ["no country", { countryCode: "" }, ["country_code"]],
      ["a lowercase country", { countryCode: "au" }, ["country_code"]],
      ["an unknown country", { countryCode: "QQ" }, ["country_code"]],
      ["a prefix with separators", { countryCode: "AU", prefix: "02-5550" }, ["prefix"]],
      ["a negative page size", { countryCode: "AU", pageSize: -1 }, ["page_size"]],
      ["an unknown number type", { countryCode: "AU", numberType: 9 as NumberType }, ["number_type"]],
    ])("refuses %s with INVALID_ARGUMENT", async (_name, request, fields) => {
      await expectInvalid(c.numbers.searchPhoneNumbers(request), fields);
    });

    it("needs only a credential holding numbering.phoneNumbers.search on some project", async () => {
      const parent = await newProject(database.db);
      const key = await newApiKey(database.db, [
        { project: parent, permissions: ["numbering.phoneNumbers.search"] },
      ]);
      const viaKey = createTestClient(PhoneNumbers, database.db, clock, key.secret);
      expect(
        (await viaKey.searchPhoneNumbers({ countryCode: "AU", prefix })).phoneNumbers.length,
      ).toBeGreaterThan(0);
      const none = await newApiKey(database.db, [
        { project: parent, permissions: ["numbering.phoneNumberInstances.get"] },
      ]);
      await expectCode(
        createTestClient(PhoneNumbers, database.db, clock, none.secret).searchPhoneNumbers({
          countryCode: "AU",
        }),
        Code.PermissionDenied,
      );
    });
  });
});
