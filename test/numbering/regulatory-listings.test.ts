import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code } from "@connectrpc/connect";
import { and, eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { PhoneNumber_PhoneNumberType as NumberType } from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import {
  type RegulatoryListing,
  type RegulatoryListingSchema,
  RegulatoryListings,
} from "../../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { ResourceInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { regulatoryListings } from "../../src/db/schema/index.js";
import {
  isRegionCode,
  NUMBER_TYPES_REQUIRING_VERIFICATION,
} from "../../src/numbering/regulatory-listings/domain.js";
import {
  collectPages,
  createTestClient,
  errorReason,
  expectCode,
  expectInvalid,
  newProject,
  violationFields,
} from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

type ListingInit = MessageInitShape<typeof RegulatoryListingSchema>;

const AU_ADDRESS = {
  addressLines: ["Level 3, 1 George Street"],
  locality: "Sydney",
  administrativeArea: "NSW",
  postalCode: "2000",
  regionCode: "AU",
};
const US_ADDRESS = {
  addressLines: ["1600 Pennsylvania Avenue NW"],
  locality: "Washington",
  administrativeArea: "DC",
  postalCode: "20500",
  regionCode: "US",
};
const NZ_ADDRESS = {
  addressLines: ["1 Queen Street"],
  locality: "Auckland",
  administrativeArea: "Auckland",
  postalCode: "1010",
  regionCode: "NZ",
};

const PERSON = { case: "person" as const, value: { givenName: "Ada", familyName: "Lovelace" } };
const BUSINESS = { case: "business" as const, value: { business: "Example Pty Ltd" } };

function person(address: ListingInit["address"] = AU_ADDRESS, displayName = "Ada"): ListingInit {
  return { displayName, address, entity: PERSON };
}

function business(address: ListingInit["address"] = AU_ADDRESS, displayName = "Example"): ListingInit {
  return { displayName, address, entity: BUSINESS };
}

const x = (n: number) => "x".repeat(n);

interface InvalidCase {
  name: string;
  listing: ListingInit | undefined;
  parent?: string;
  fields: string[];
}

const INVALID_CREATES: InvalidCase[] = [
  { name: "no regulatory_listing", listing: undefined, fields: ["regulatory_listing"] },
  { name: "parent not a project", listing: person(), parent: "organizations/o", fields: ["parent"] },
  { name: "parent with a trailing slash", listing: person(), parent: "projects/", fields: ["parent"] },
  {
    name: "display_name over 100 characters",
    listing: { ...person(), displayName: x(101) },
    fields: ["regulatory_listing.display_name"],
  },
  {
    name: "no address",
    listing: { displayName: "a", entity: PERSON },
    fields: ["regulatory_listing.address"],
  },
  {
    name: "no address lines",
    listing: person({ ...AU_ADDRESS, addressLines: [] }),
    fields: ["regulatory_listing.address.address_lines"],
  },
  {
    name: "three address lines",
    listing: person({ ...AU_ADDRESS, addressLines: ["a", "b", "c"] }),
    fields: ["regulatory_listing.address.address_lines"],
  },
  {
    name: "an address line over 200 characters",
    listing: person({ ...AU_ADDRESS, addressLines: [x(201)] }),
    fields: ["regulatory_listing.address.address_lines[0]"],
  },
  {
    name: "an empty address line",
    listing: person({ ...AU_ADDRESS, addressLines: ["1 George St", ""] }),
    fields: ["regulatory_listing.address.address_lines[1]"],
  },
  {
    name: "a blank address line",
    listing: person({ ...AU_ADDRESS, addressLines: ["1 George St", "   "] }),
    fields: ["regulatory_listing.address.address_lines[1]"],
  },
  {
    name: "locality over 200 characters",
    listing: person({ ...AU_ADDRESS, locality: x(201) }),
    fields: ["regulatory_listing.address.locality"],
  },
  {
    name: "administrative_area over 200 characters",
    listing: person({ ...AU_ADDRESS, administrativeArea: x(201) }),
    fields: ["regulatory_listing.address.administrative_area"],
  },
  {
    name: "postal_code over 16 characters",
    listing: person({ addressLines: ["1 High St"], postalCode: x(17), regionCode: "GB" }),
    fields: ["regulatory_listing.address.postal_code"],
  },
  {
    name: "no region_code",
    listing: person({ ...AU_ADDRESS, regionCode: "" }),
    fields: ["regulatory_listing.address.region_code"],
  },
  {
    name: "a lowercase region_code",
    listing: person({ ...AU_ADDRESS, regionCode: "au" }),
    fields: ["regulatory_listing.address.region_code"],
  },
  {
    name: "an alpha-3 region_code",
    listing: person({ ...AU_ADDRESS, regionCode: "AUS" }),
    fields: ["regulatory_listing.address.region_code"],
  },
  {
    name: "a region_code that is no ISO 3166-1 code",
    listing: person({ addressLines: ["1 Nowhere Rd"], regionCode: "QQ" }),
    fields: ["regulatory_listing.address.region_code"],
  },
  {
    name: "AU without locality",
    listing: person({ ...AU_ADDRESS, locality: "" }),
    fields: ["regulatory_listing.address.locality"],
  },
  {
    name: "AU with a blank locality",
    listing: person({ ...AU_ADDRESS, locality: "  " }),
    fields: ["regulatory_listing.address.locality"],
  },
  {
    name: "AU without administrative_area",
    listing: person({ ...AU_ADDRESS, administrativeArea: "" }),
    fields: ["regulatory_listing.address.administrative_area"],
  },
  {
    name: "AU without postal_code",
    listing: person({ ...AU_ADDRESS, postalCode: "" }),
    fields: ["regulatory_listing.address.postal_code"],
  },
  {
    name: "AU with a 5-digit postal_code",
    listing: person({ ...AU_ADDRESS, postalCode: "20000" }),
    fields: ["regulatory_listing.address.postal_code"],
  },
  {
    name: "AU with a 3-digit postal_code",
    listing: person({ ...AU_ADDRESS, postalCode: "200" }),
    fields: ["regulatory_listing.address.postal_code"],
  },
  {
    name: "AU with letters in postal_code",
    listing: person({ ...AU_ADDRESS, postalCode: "2OOO" }),
    fields: ["regulatory_listing.address.postal_code"],
  },
  {
    name: "AU with a padded postal_code",
    listing: person({ ...AU_ADDRESS, postalCode: " 2000" }),
    fields: ["regulatory_listing.address.postal_code"],
  },
  {
    name: "NZ without locality, administrative_area and postal_code",
    listing: person({ addressLines: ["1 Queen St"], regionCode: "NZ" }),
    fields: [
      "regulatory_listing.address.locality",
      "regulatory_listing.address.administrative_area",
      "regulatory_listing.address.postal_code",
    ],
  },
  {
    name: "NZ with a 5-digit postal_code",
    listing: person({ ...NZ_ADDRESS, postalCode: "10100" }),
    fields: ["regulatory_listing.address.postal_code"],
  },
  {
    name: "US without locality",
    listing: person({ ...US_ADDRESS, locality: "" }),
    fields: ["regulatory_listing.address.locality"],
  },
  {
    name: "US without administrative_area",
    listing: person({ ...US_ADDRESS, administrativeArea: "" }),
    fields: ["regulatory_listing.address.administrative_area"],
  },
  {
    name: "US with a 4-digit postal_code",
    listing: person({ ...US_ADDRESS, postalCode: "2050" }),
    fields: ["regulatory_listing.address.postal_code"],
  },
  {
    name: "US with a ZIP+4 postal_code",
    listing: person({ ...US_ADDRESS, postalCode: "20500-0003" }),
    fields: ["regulatory_listing.address.postal_code"],
  },
  {
    name: "neither person nor business",
    listing: { displayName: "a", address: AU_ADDRESS },
    fields: ["regulatory_listing.entity"],
  },
  {
    name: "a person without given_name",
    listing: { address: AU_ADDRESS, entity: { case: "person", value: { familyName: "Lovelace" } } },
    fields: ["regulatory_listing.person.given_name"],
  },
  {
    name: "a person without family_name",
    listing: { address: AU_ADDRESS, entity: { case: "person", value: { givenName: "Ada" } } },
    fields: ["regulatory_listing.person.family_name"],
  },
  {
    name: "a person with a blank given_name",
    listing: { address: AU_ADDRESS, entity: { case: "person", value: { givenName: " ", familyName: "L" } } },
    fields: ["regulatory_listing.person.given_name"],
  },
  {
    name: "a person with names over 100 characters",
    listing: {
      address: AU_ADDRESS,
      entity: { case: "person", value: { givenName: x(101), familyName: x(101) } },
    },
    fields: ["regulatory_listing.person.given_name", "regulatory_listing.person.family_name"],
  },
  {
    name: "a business without its name",
    listing: { address: AU_ADDRESS, entity: { case: "business", value: {} } },
    fields: ["regulatory_listing.business.business"],
  },
  {
    name: "a business name over 200 characters",
    listing: { address: AU_ADDRESS, entity: { case: "business", value: { business: x(201) } } },
    fields: ["regulatory_listing.business.business"],
  },
  {
    name: "several problems at once",
    listing: { displayName: "ok", address: { ...AU_ADDRESS, postalCode: "1", locality: "" } },
    fields: [
      "regulatory_listing.address.locality",
      "regulatory_listing.address.postal_code",
      "regulatory_listing.entity",
    ],
  },
];

const VALID_CREATES: { name: string; listing: ListingInit }[] = [
  { name: "an AU person", listing: person(AU_ADDRESS) },
  { name: "an NZ business", listing: business(NZ_ADDRESS) },
  { name: "a US person", listing: person(US_ADDRESS) },
  {
    name: "two address lines of 200 characters",
    listing: person({ ...AU_ADDRESS, addressLines: [x(200), x(200)] }),
  },
  {
    name: "a GB address without locality or postcode (no region rules)",
    listing: person({ addressLines: ["10 Downing Street"], regionCode: "GB" }),
  },
  { name: "a 100-character display name of emoji", listing: person(AU_ADDRESS, "📞".repeat(100)) },
  {
    name: "names at their limits",
    listing: {
      address: AU_ADDRESS,
      entity: { case: "person", value: { givenName: x(100), familyName: x(100) } },
    },
  },
  {
    name: "a 200-character business name",
    listing: { address: AU_ADDRESS, entity: { case: "business", value: { business: x(200) } } },
  },
];

describe.each(testDatabases())("RegulatoryListings on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock();
  let client: Client<typeof RegulatoryListings>;

  beforeAll(() => {
    client = createTestClient(RegulatoryListings, database.db, clock);
  });

  async function createListing(parent: string, listing: ListingInit = person()): Promise<RegulatoryListing> {
    return client.createRegulatoryListing({ parent, regulatoryListing: listing });
  }

  async function listAll(parent: string): Promise<RegulatoryListing[]> {
    const { items } = await collectPages(async (pageToken) => {
      const r = await client.listRegulatoryListings({ parent, pageSize: 100, pageToken });
      return { items: r.regulatoryListings, nextPageToken: r.nextPageToken };
    });
    return items;
  }

  /** The operator's review, which has no API yet: set valid/verified in the table. */
  async function review(listing: RegulatoryListing, values: { valid?: boolean; verified?: boolean }) {
    if (Object.keys(values).length === 0) return;
    const [, projectId, , id] = listing.name.split("/");
    await database.db
      .update(regulatoryListings)
      .set(values)
      .where(and(eq(regulatoryListings.projectId, projectId!), eq(regulatoryListings.id, id!)));
  }

  describe("CreateRegulatoryListing", () => {
    it("creates a person listing with a generated id, valid and not yet verified", async () => {
      const parent = await newProject(database.db);
      clock.set("2026-03-01T10:00:00.123Z");
      const created = await createListing(parent, person(AU_ADDRESS, "Ada at home"));
      expect(created.name).toMatch(new RegExp(`^${parent}/regulatoryListings/[a-z][a-z0-9]{15}$`));
      expect(created.displayName).toBe("Ada at home");
      expect(created.address).toMatchObject(AU_ADDRESS);
      expect(created.entity).toMatchObject(PERSON);
      expect(created.valid).toBe(true);
      expect(created.verified).toBe(false);
      expect(timestampDate(created.createTime!).toISOString()).toBe("2026-03-01T10:00:00.123Z");
      const got = await client.getRegulatoryListing({ name: created.name });
      expect(got).toEqual(created);
    });

    it("creates a business listing", async () => {
      const created = await createListing(await newProject(database.db), business(US_ADDRESS));
      expect(created.entity).toMatchObject(BUSINESS);
      expect(created.address).toMatchObject(US_ADDRESS);
      expect(created.valid).toBe(true);
    });

    it("gives every listing its own id", async () => {
      const parent = await newProject(database.db);
      const names = new Set<string>();
      for (let i = 0; i < 20; i++) names.add((await createListing(parent)).name);
      expect(names.size).toBe(20);
    });

    it("ignores output-only fields and the name in the input", async () => {
      const parent = await newProject(database.db);
      clock.set("2026-03-02T00:00:00.000Z");
      const created = await createListing(parent, {
        ...person(),
        name: `${parent}/regulatoryListings/chosen`,
        valid: false,
        verified: true,
        createTime: timestampFromDate(new Date("2001-01-01T00:00:00Z")),
      });
      expect(created.name).not.toBe(`${parent}/regulatoryListings/chosen`);
      expect(created.valid).toBe(true);
      expect(created.verified).toBe(false);
      expect(timestampDate(created.createTime!).toISOString()).toBe("2026-03-02T00:00:00.000Z");
    });

    it.each(VALID_CREATES)("accepts $name", async ({ listing }) => {
      const created = await createListing(await newProject(database.db), listing);
      expect(created.valid).toBe(true);
      expect(created.displayName).toBe(listing.displayName ?? "");
    });

    it.each(INVALID_CREATES)("refuses $name with INVALID_ARGUMENT and writes nothing", async (c) => {
      const parent = await newProject(database.db);
      await expectInvalid(
        client.createRegulatoryListing({ parent: c.parent ?? parent, regulatoryListing: c.listing }),
        c.fields,
      );
      expect(await listAll(parent)).toEqual([]);
    });

    it("describes each violation", async () => {
      const error = await expectInvalid(
        createListing(await newProject(database.db), person({ ...AU_ADDRESS, postalCode: "123" })),
        ["regulatory_listing.address.postal_code"],
      );
      expect(error.rawMessage).toContain("exactly 4 digits");
    });
  });

  describe("GetRegulatoryListing", () => {
    it("returns NOT_FOUND for an unknown listing", async () => {
      const name = `${await newProject(database.db)}/regulatoryListings/unknown`;
      const error = await expectCode(client.getRegulatoryListing({ name }), Code.NotFound);
      expect(errorReason(error)).toBe("RESOURCE_NOT_FOUND");
      expect(error.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(name);
    });

    it("returns NOT_FOUND for a listing of another project", async () => {
      const created = await createListing(await newProject(database.db));
      const id = created.name.split("/").pop();
      await expectCode(
        client.getRegulatoryListing({ name: `${await newProject(database.db)}/regulatoryListings/${id}` }),
        Code.NotFound,
      );
    });

    it.each([
      ["an empty name", ""],
      ["a parent", "projects/p"],
      ["another collection", "projects/p/unsubscribers/u"],
      ["a nested name", "projects/p/regulatoryListings/a/b"],
    ])("refuses %s with INVALID_ARGUMENT naming name", async (_, name) => {
      await expectInvalid(client.getRegulatoryListing({ name }), ["name"]);
    });
  });

  describe("ListRegulatoryListings", () => {
    it("lists a project's listings newest first, and no one else's", async () => {
      const parent = await newProject(database.db);
      const other = await newProject(database.db);
      clock.set("2026-04-01T00:00:00.000Z");
      const created: RegulatoryListing[] = [];
      for (let i = 0; i < 5; i++) {
        created.push(await createListing(parent, person(AU_ADDRESS, `n${i}`)));
        await createListing(other);
        clock.advance(1000);
      }
      const listed = await client.listRegulatoryListings({ parent });
      expect(listed.regulatoryListings.map((l) => l.displayName)).toEqual(["n4", "n3", "n2", "n1", "n0"]);
      expect(listed.regulatoryListings).toEqual([...created].reverse());
      expect(listed.nextPageToken).toBe("");
    });

    it("returns an empty page for a project without listings", async () => {
      const listed = await client.listRegulatoryListings({ parent: await newProject(database.db) });
      expect(listed.regulatoryListings).toEqual([]);
      expect(listed.nextPageToken).toBe("");
    });

    it("refuses a negative page_size", async () => {
      await expectInvalid(
        client.listRegulatoryListings({ parent: await newProject(database.db), pageSize: -1 }),
        ["page_size"],
      );
    });

    describe("pagination over 260 listings", () => {
      let parent: string;
      let all: RegulatoryListing[];

      beforeAll(async () => {
        parent = await newProject(database.db);
        // Three listings per millisecond: ties on create_time are broken by id.
        clock.set("2026-05-01T00:00:00.000Z");
        for (let i = 0; i < 260; i++) {
          await createListing(parent, person(AU_ADDRESS, `item ${i}`));
          if (i % 3 === 2) clock.advance(1);
        }
        all = await listAll(parent);
      }, 120_000);

      it("returns every listing once, newest first", () => {
        expect(all).toHaveLength(260);
        expect(new Set(all.map((l) => l.name)).size).toBe(260);
        for (let i = 1; i < all.length; i++) {
          const before = timestampDate(all[i - 1]!.createTime!).getTime();
          const after = timestampDate(all[i]!.createTime!).getTime();
          expect(before).toBeGreaterThanOrEqual(after);
          if (before === after) expect(all[i - 1]!.name > all[i]!.name).toBe(true);
        }
      });

      it.each([1, 7, 10, 99, 100])(
        "walks pages of %i without gaps or repeats, in the same order",
        async (size) => {
          const { items, pages } = await collectPages(async (pageToken) => {
            const r = await client.listRegulatoryListings({ parent, pageSize: size, pageToken });
            expect(r.regulatoryListings.length).toBeLessThanOrEqual(size);
            return { items: r.regulatoryListings, nextPageToken: r.nextPageToken };
          });
          expect(items.map((l) => l.name)).toEqual(all.map((l) => l.name));
          expect(pages).toBe(Math.ceil(260 / size));
        },
        120_000,
      );

      it("uses 10 for page_size 0 and 100 for page_size 1000", async () => {
        const zero = await client.listRegulatoryListings({ parent, pageSize: 0 });
        expect(zero.regulatoryListings).toHaveLength(10);
        expect(zero.nextPageToken).not.toBe("");
        const big = await client.listRegulatoryListings({ parent, pageSize: 1000 });
        expect(big.regulatoryListings).toHaveLength(100);
        expect(big.regulatoryListings.map((l) => l.name)).toEqual(all.slice(0, 100).map((l) => l.name));
      });

      it("lets the page size change between pages", async () => {
        const first = await client.listRegulatoryListings({ parent, pageSize: 5 });
        const second = await client.listRegulatoryListings({
          parent,
          pageSize: 50,
          pageToken: first.nextPageToken,
        });
        expect([...first.regulatoryListings, ...second.regulatoryListings].map((l) => l.name)).toEqual(
          all.slice(0, 55).map((l) => l.name),
        );
      });

      it("neither repeats nor skips when listings are created or deleted between pages", async () => {
        const first = await client.listRegulatoryListings({ parent, pageSize: 20 });
        clock.advance(60_000);
        const newer = await createListing(parent);
        await client.deleteRegulatoryListing({ name: first.regulatoryListings[0]!.name });
        const rest = await collectPages(async (pageToken) => {
          const r = await client.listRegulatoryListings({
            parent,
            pageSize: 50,
            pageToken: pageToken || first.nextPageToken,
          });
          return { items: r.regulatoryListings, nextPageToken: r.nextPageToken };
        });
        expect(rest.items.map((l) => l.name)).toEqual(all.slice(20).map((l) => l.name));
        await client.deleteRegulatoryListing({ name: newer.name });
        all = all.slice(1);
      });

      it("refuses a token used with another parent", async () => {
        const first = await client.listRegulatoryListings({ parent, pageSize: 10 });
        await expectInvalid(
          client.listRegulatoryListings({
            parent: await newProject(database.db),
            pageToken: first.nextPageToken,
          }),
          ["page_token"],
        );
      });

      it("refuses a token of ListRegulatoryListings in SearchRegulatoryListings", async () => {
        const first = await client.listRegulatoryListings({ parent, pageSize: 10 });
        await expectInvalid(
          client.searchRegulatoryListings({
            parent,
            regionCode: "AU",
            numberType: NumberType.LOCAL,
            pageToken: first.nextPageToken,
          }),
          ["page_token"],
        );
      });

      it.each([
        ["garbage", "not a token!"],
        ["base64 of no JSON", Buffer.from("hello").toString("base64url")],
        ["JSON of another shape", Buffer.from(JSON.stringify({ a: 1 })).toString("base64url")],
        [
          "a token of another version",
          Buffer.from(JSON.stringify({ v: 2, t: 1, i: "a", q: "x" })).toString("base64url"),
        ],
        [
          "a token with a bad time",
          Buffer.from(JSON.stringify({ v: 1, t: "x", i: "a", q: "x" })).toString("base64url"),
        ],
      ])("refuses %s as page_token", async (_, pageToken) => {
        const error = await expectInvalid(client.listRegulatoryListings({ parent, pageToken }), [
          "page_token",
        ]);
        expect(violationFields(error)).toEqual(["page_token"]);
      });
    });
  });

  describe("UpdateRegulatoryListing", () => {
    let listing: RegulatoryListing;

    beforeAll(async () => {
      listing = await createListing(await newProject(database.db), person(AU_ADDRESS, "before"));
    });

    async function reset() {
      listing = await client.updateRegulatoryListing({
        regulatoryListing: { name: listing.name, displayName: "before" },
        updateMask: { paths: ["display_name"] },
      });
    }

    async function expectUnchanged() {
      expect(await client.getRegulatoryListing({ name: listing.name })).toEqual(listing);
    }

    it("without a mask applies the populated fields", async () => {
      await reset();
      const updated = await client.updateRegulatoryListing({
        regulatoryListing: { name: listing.name, displayName: "after" },
      });
      expect(updated).toEqual({ ...listing, displayName: "after" });
      expect(await client.getRegulatoryListing({ name: listing.name })).toEqual(updated);
    });

    it("without a mask accepts the whole resource sent back with the immutable fields unchanged", async () => {
      await reset();
      const updated = await client.updateRegulatoryListing({
        regulatoryListing: { ...listing, displayName: "again" },
      });
      expect(updated).toEqual({ ...listing, displayName: "again" });
    });

    it("with a mask changes only the named fields", async () => {
      await reset();
      const updated = await client.updateRegulatoryListing({
        regulatoryListing: {
          name: listing.name,
          displayName: "masked",
          address: US_ADDRESS,
          entity: BUSINESS,
        },
        updateMask: { paths: ["display_name"] },
      });
      expect(updated).toEqual({ ...listing, displayName: "masked" });
    });

    it("with a mask clears a named field the request leaves empty", async () => {
      await reset();
      const updated = await client.updateRegulatoryListing({
        regulatoryListing: { name: listing.name },
        updateMask: { paths: ["display_name"] },
      });
      expect(updated.displayName).toBe("");
    });

    it("with `*` replaces the updatable fields and keeps omitted immutable ones", async () => {
      await reset();
      const cleared = await client.updateRegulatoryListing({
        regulatoryListing: { name: listing.name },
        updateMask: { paths: ["*"] },
      });
      expect(cleared).toEqual({ ...listing, displayName: "" });
      const replaced = await client.updateRegulatoryListing({
        regulatoryListing: { ...listing, displayName: "star" },
        updateMask: { paths: ["*"] },
      });
      expect(replaced).toEqual({ ...listing, displayName: "star" });
    });

    it("ignores output-only fields in the request and in the mask", async () => {
      await reset();
      const updated = await client.updateRegulatoryListing({
        regulatoryListing: {
          name: listing.name,
          displayName: "out",
          valid: false,
          verified: true,
          createTime: timestampFromDate(new Date("2000-01-01T00:00:00Z")),
        },
      });
      expect(updated).toEqual({ ...listing, displayName: "out" });
      const masked = await client.updateRegulatoryListing({
        regulatoryListing: { name: listing.name, verified: true, valid: false },
        updateMask: { paths: ["verified", "valid", "create_time", "name"] },
      });
      expect(masked).toEqual({ ...listing, displayName: "out" });
    });

    it("keeps create_time and the name", async () => {
      await reset();
      clock.advance(3_600_000);
      const updated = await client.updateRegulatoryListing({
        regulatoryListing: { name: listing.name, displayName: "later" },
      });
      expect(updated.createTime).toEqual(listing.createTime);
      expect(updated.name).toBe(listing.name);
    });

    it.each<{ name: string; patch: ListingInit; paths?: string[]; fields: string[] }>([
      {
        name: "another address without a mask",
        patch: { address: { ...AU_ADDRESS, postalCode: "2001" } },
        fields: ["regulatory_listing.address"],
      },
      {
        name: "another address named in the mask",
        patch: { address: US_ADDRESS },
        paths: ["address"],
        fields: ["regulatory_listing.address"],
      },
      {
        name: "an address cleared through the mask",
        patch: {},
        paths: ["address"],
        fields: ["regulatory_listing.address"],
      },
      {
        name: "a field inside the address",
        patch: { address: { ...AU_ADDRESS, locality: "Parramatta" } },
        paths: ["address.locality"],
        fields: ["regulatory_listing.address.locality"],
      },
      {
        name: "another person",
        patch: { entity: { case: "person", value: { givenName: "Grace", familyName: "Hopper" } } },
        fields: ["regulatory_listing.person"],
      },
      {
        name: "a business instead of the person",
        patch: { entity: BUSINESS },
        fields: ["regulatory_listing.business"],
      },
      {
        name: "the person cleared through the mask",
        patch: {},
        paths: ["person"],
        fields: ["regulatory_listing.person"],
      },
      {
        name: "address and person at once",
        patch: {
          address: NZ_ADDRESS,
          entity: { case: "person", value: { givenName: "G", familyName: "H" } },
        },
        paths: ["address", "person", "display_name"],
        fields: ["regulatory_listing.address", "regulatory_listing.person"],
      },
    ])("refuses to change an immutable field: $name", async (c) => {
      await reset();
      await expectInvalid(
        client.updateRegulatoryListing({
          regulatoryListing: { ...c.patch, name: listing.name, displayName: "changed" },
          updateMask: c.paths ? { paths: c.paths } : undefined,
        }),
        c.fields,
      );
      await expectUnchanged();
    });

    it("accepts immutable fields named in the mask with their current values", async () => {
      await reset();
      const updated = await client.updateRegulatoryListing({
        regulatoryListing: { ...listing, displayName: "same" },
        updateMask: { paths: ["address", "person", "business", "address.postal_code", "display_name"] },
      });
      expect(updated).toEqual({ ...listing, displayName: "same" });
    });

    it.each([
      ["an unknown field", ["nope"]],
      ["a JSON name instead of the proto name", ["displayName"]],
      ["a path below a scalar", ["display_name.x"]],
      ["a path below a message that does not exist", ["address.nope"]],
      ["`*` with other paths", ["*", "display_name"]],
      ["an empty path", [""]],
    ])("refuses %s in update_mask", async (_, paths) => {
      await reset();
      await expectInvalid(
        client.updateRegulatoryListing({
          regulatoryListing: { name: listing.name, displayName: "x" },
          updateMask: { paths },
        }),
        ["update_mask"],
      );
      await expectUnchanged();
    });

    it("checks the mask before looking the listing up", async () => {
      await expectInvalid(
        client.updateRegulatoryListing({
          regulatoryListing: {
            name: `${await newProject(database.db)}/regulatoryListings/unknown`,
            displayName: "x",
          },
          updateMask: { paths: ["nope"] },
        }),
        ["update_mask"],
      );
    });

    it("refuses a display_name over 100 characters", async () => {
      await reset();
      await expectInvalid(
        client.updateRegulatoryListing({ regulatoryListing: { name: listing.name, displayName: x(101) } }),
        ["regulatory_listing.display_name"],
      );
      await expectUnchanged();
    });

    it("refuses a missing or malformed name with INVALID_ARGUMENT", async () => {
      await expectInvalid(client.updateRegulatoryListing({ regulatoryListing: { displayName: "x" } }), [
        "regulatory_listing.name",
      ]);
      await expectInvalid(
        client.updateRegulatoryListing({
          regulatoryListing: { name: "projects/p/unsubscribers/u", displayName: "x" },
        }),
        ["regulatory_listing.name"],
      );
      await expectInvalid(client.updateRegulatoryListing({}), ["regulatory_listing"]);
    });

    it("returns NOT_FOUND for an unknown listing or one of another project", async () => {
      await reset();
      await expectCode(
        client.updateRegulatoryListing({
          regulatoryListing: {
            name: `${await newProject(database.db)}/regulatoryListings/unknown`,
            displayName: "x",
          },
        }),
        Code.NotFound,
      );
      const id = listing.name.split("/").pop();
      await expectCode(
        client.updateRegulatoryListing({
          regulatoryListing: {
            name: `${await newProject(database.db)}/regulatoryListings/${id}`,
            displayName: "x",
          },
        }),
        Code.NotFound,
      );
      await expectUnchanged();
    });
  });

  describe("DeleteRegulatoryListing", () => {
    it("deletes the listing and returns Empty", async () => {
      const parent = await newProject(database.db);
      const listing = await createListing(parent);
      const keep = await createListing(parent);
      const response = await client.deleteRegulatoryListing({ name: listing.name });
      expect(response.$typeName).toBe("google.protobuf.Empty");
      await expectCode(client.getRegulatoryListing({ name: listing.name }), Code.NotFound);
      expect(await listAll(parent)).toEqual([keep]);
    });

    it("returns NOT_FOUND for a listing already deleted or unknown", async () => {
      const listing = await createListing(await newProject(database.db));
      await client.deleteRegulatoryListing({ name: listing.name });
      await expectCode(client.deleteRegulatoryListing({ name: listing.name }), Code.NotFound);
      await expectCode(
        client.deleteRegulatoryListing({
          name: `${await newProject(database.db)}/regulatoryListings/unknown`,
        }),
        Code.NotFound,
      );
    });

    it("returns NOT_FOUND for a listing of another project, and keeps it", async () => {
      const listing = await createListing(await newProject(database.db));
      const id = listing.name.split("/").pop();
      await expectCode(
        client.deleteRegulatoryListing({ name: `${await newProject(database.db)}/regulatoryListings/${id}` }),
        Code.NotFound,
      );
      expect(await client.getRegulatoryListing({ name: listing.name })).toEqual(listing);
    });

    it("refuses a malformed name", async () => {
      await expectInvalid(client.deleteRegulatoryListing({ name: "regulatoryListings/x" }), ["name"]);
    });
  });

  describe("SearchRegulatoryListings", () => {
    let parent: string;
    const listings: Record<string, RegulatoryListing> = {};

    beforeAll(async () => {
      parent = await newProject(database.db);
      clock.set("2026-06-01T00:00:00.000Z");
      const make = async (
        key: string,
        listing: ListingInit,
        review_: { valid?: boolean; verified?: boolean },
      ) => {
        clock.advance(1000);
        listings[key] = await createListing(parent, { ...listing, displayName: key });
        await review(listings[key]!, review_);
        listings[key] = await client.getRegulatoryListing({ name: listings[key]!.name });
      };
      await make("auUnverified", person(AU_ADDRESS), {});
      await make("auVerified", person(AU_ADDRESS), { verified: true });
      await make("auInvalidVerified", person(AU_ADDRESS), { valid: false, verified: true });
      await make("auInvalid", business(AU_ADDRESS), { valid: false });
      await make("nzVerified", business(NZ_ADDRESS), { verified: true });
      await make("auBusinessVerified", business(AU_ADDRESS), { verified: true });
      await make("gbUnverified", person({ addressLines: ["1 High St"], regionCode: "GB" }), {});
      // Another project's listing never shows.
      await createListing(await newProject(database.db), person(AU_ADDRESS));
    });

    async function search(regionCode: string, numberType: NumberType): Promise<string[]> {
      const { items } = await collectPages(async (pageToken) => {
        const r = await client.searchRegulatoryListings({ parent, regionCode, numberType, pageToken });
        return { items: r.regulatoryListings, nextPageToken: r.nextPageToken };
      });
      return items.map((l) => l.displayName);
    }

    it("names the number types that require verification", () => {
      expect([...NUMBER_TYPES_REQUIRING_VERIFICATION].sort()).toEqual(
        ["MOBILE", "NATIONAL", "SHARED_RATE", "TOLL_FREE"].sort(),
      );
    });

    it("finds valid listings of the region for LOCAL numbers, verified or not, newest first", async () => {
      expect(await search("AU", NumberType.LOCAL)).toEqual([
        "auBusinessVerified",
        "auVerified",
        "auUnverified",
      ]);
      expect(await search("GB", NumberType.LOCAL)).toEqual(["gbUnverified"]);
    });

    it.each([NumberType.MOBILE, NumberType.NATIONAL, NumberType.TOLL_FREE, NumberType.SHARED_RATE])(
      "finds only valid and verified listings of the region for number type %s",
      async (numberType) => {
        expect(await search("AU", numberType)).toEqual(["auBusinessVerified", "auVerified"]);
        expect(await search("NZ", numberType)).toEqual(["nzVerified"]);
        expect(await search("GB", numberType)).toEqual([]);
      },
    );

    it("finds nothing in a region without listings", async () => {
      expect(await search("US", NumberType.LOCAL)).toEqual([]);
    });

    it("returns full listings", async () => {
      const r = await client.searchRegulatoryListings({
        parent,
        regionCode: "NZ",
        numberType: NumberType.MOBILE,
      });
      expect(r.regulatoryListings).toEqual([listings.nzVerified]);
      expect(r.nextPageToken).toBe("");
    });

    it("pages through the results with tokens bound to region and number type", async () => {
      const pageParent = await newProject(database.db);
      clock.set("2026-07-01T00:00:00.000Z");
      const created: string[] = [];
      for (let i = 0; i < 25; i++) {
        clock.advance(1);
        created.push((await createListing(pageParent, person(AU_ADDRESS, `p${i}`))).name);
      }
      const { items, pages } = await collectPages(async (pageToken) => {
        const r = await client.searchRegulatoryListings({
          parent: pageParent,
          regionCode: "AU",
          numberType: NumberType.LOCAL,
          pageSize: 10,
          pageToken,
        });
        return { items: r.regulatoryListings, nextPageToken: r.nextPageToken };
      });
      expect(pages).toBe(3);
      expect(items.map((l) => l.name)).toEqual([...created].reverse());

      const first = await client.searchRegulatoryListings({
        parent: pageParent,
        regionCode: "AU",
        numberType: NumberType.LOCAL,
        pageSize: 10,
      });
      for (const other of [
        { regionCode: "NZ", numberType: NumberType.LOCAL },
        { regionCode: "AU", numberType: NumberType.MOBILE },
      ]) {
        await expectInvalid(
          client.searchRegulatoryListings({ parent: pageParent, ...other, pageToken: first.nextPageToken }),
          ["page_token"],
        );
      }
      await expectInvalid(
        client.listRegulatoryListings({ parent: pageParent, pageToken: first.nextPageToken }),
        ["page_token"],
      );
      const zero = await client.searchRegulatoryListings({
        parent: pageParent,
        regionCode: "AU",
        numberType: NumberType.LOCAL,
        pageSize: 0,
      });
      expect(zero.regulatoryListings).toHaveLength(10);
    });

    it.each<[string, { regionCode: string; numberType: NumberType }, string]>([
      ["no region_code", { regionCode: "", numberType: NumberType.LOCAL }, "region_code"],
      ["a lowercase region_code", { regionCode: "au", numberType: NumberType.LOCAL }, "region_code"],
      ["an unknown region_code", { regionCode: "QQ", numberType: NumberType.LOCAL }, "region_code"],
      [
        "no number_type",
        { regionCode: "AU", numberType: NumberType.PHONE_NUMBER_TYPE_UNSPECIFIED },
        "number_type",
      ],
      ["an undefined number_type", { regionCode: "AU", numberType: 42 as NumberType }, "number_type"],
    ])("refuses %s", async (_, request, field) => {
      await expectInvalid(client.searchRegulatoryListings({ parent, ...request }), [field]);
    });

    it("refuses a garbage page token", async () => {
      await expectInvalid(
        client.searchRegulatoryListings({
          parent,
          regionCode: "AU",
          numberType: NumberType.LOCAL,
          pageToken: "@@",
        }),
        ["page_token"],
      );
    });
  });
});

describe("region codes", () => {
  it.each(["AU", "NZ", "US", "GB", "DE", "JP", "FJ"])("knows %s", (code) => {
    expect(isRegionCode(code)).toBe(true);
  });
  it.each(["QQ", "ZZ", "EU", "UN", "UK", "au", "AUS", ""])("does not know %s", (code) => {
    expect(isRegionCode(code)).toBe(false);
  });
});
