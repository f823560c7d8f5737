import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import {
  Unsubscriber_UnsubscribeMethod as Method,
  type Unsubscriber,
  type UnsubscriberSchema,
  Unsubscribers,
} from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { ResourceInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  collectPages,
  createTestClient,
  errorReason,
  expectCode,
  expectInvalid,
  newProject,
} from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

type UnsubscriberInit = MessageInitShape<typeof UnsubscriberSchema>;

const PHONE = "+61491570156";
/** Valid Australian mobile numbers, +61412000000 onwards. */
const mobile = (i: number) => `+614120${String(i).padStart(5, "0")}`;
const x = (n: number) => "x".repeat(n);

function labels(count: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, `v${i}`]));
}

interface InvalidCase {
  name: string;
  unsubscriber: UnsubscriberInit | undefined;
  parent?: string;
  fields: string[];
}

const INVALID_CREATES: InvalidCase[] = [
  { name: "no unsubscriber", unsubscriber: undefined, fields: ["unsubscriber"] },
  {
    name: "parent not a project",
    unsubscriber: { phone: PHONE },
    parent: "projects/a/b",
    fields: ["parent"],
  },
  { name: "no phone", unsubscriber: { labels: { a: "b" } }, fields: ["unsubscriber.phone"] },
  { name: "a national number", unsubscriber: { phone: "0491570156" }, fields: ["unsubscriber.phone"] },
  { name: "digits without +", unsubscriber: { phone: "61491570156" }, fields: ["unsubscriber.phone"] },
  { name: "a formatted number", unsubscriber: { phone: "+61 491 570 156" }, fields: ["unsubscriber.phone"] },
  {
    name: "a trunk prefix after the country code",
    unsubscriber: { phone: "+610491570156" },
    fields: ["unsubscriber.phone"],
  },
  {
    name: "a number outside every plan",
    unsubscriber: { phone: "+447700900123" },
    fields: ["unsubscriber.phone"],
  },
  { name: "a too-short number", unsubscriber: { phone: "+6149157" }, fields: ["unsubscriber.phone"] },
  { name: "trailing letters", unsubscriber: { phone: "+61491570156x" }, fields: ["unsubscriber.phone"] },
  { name: "a tel: URI", unsubscriber: { phone: "tel:+61491570156" }, fields: ["unsubscriber.phone"] },
  {
    name: "a phone over 16 characters",
    unsubscriber: { phone: "+6149157015612345" },
    fields: ["unsubscriber.phone"],
  },
  {
    name: "an undefined unsubscribe_method",
    unsubscriber: { phone: PHONE, unsubscribeMethod: 9 as Method },
    fields: ["unsubscriber.unsubscribe_method"],
  },
  {
    name: "a label key over 100 characters",
    unsubscriber: { phone: PHONE, labels: { [`k${x(100)}`]: "v" } },
    fields: [`unsubscriber.labels["k${x(100)}"]`],
  },
  {
    name: "an empty label key",
    unsubscriber: { phone: PHONE, labels: { "": "v" } },
    fields: ['unsubscriber.labels[""]'],
  },
  {
    name: "a label value over 1000 characters",
    unsubscriber: { phone: PHONE, labels: { a: x(1001) } },
    fields: ['unsubscriber.labels["a"]'],
  },
  { name: "51 labels", unsubscriber: { phone: PHONE, labels: labels(51) }, fields: ["unsubscriber.labels"] },
  {
    name: "a phone over 16 characters and a bad label",
    unsubscriber: { phone: "+6149157015612345", labels: { b: x(1001) } },
    fields: ["unsubscriber.phone", 'unsubscriber.labels["b"]'],
  },
];

describe.each(testDatabases())("Unsubscribers on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock();
  let client: Client<typeof Unsubscribers>;

  beforeAll(() => {
    client = createTestClient(Unsubscribers, database.db, clock);
  });

  function create(parent: string, unsubscriber: UnsubscriberInit): Promise<Unsubscriber> {
    return client.createUnsubscriber({ parent, unsubscriber });
  }

  async function listAll(parent: string, phone = ""): Promise<Unsubscriber[]> {
    const { items } = await collectPages(async (pageToken) => {
      const r = await client.listUnsubscribers({ parent, phone, pageSize: 100, pageToken });
      return { items: r.unsubscribers, nextPageToken: r.nextPageToken };
    });
    return items;
  }

  describe("CreateUnsubscriber", () => {
    it("creates an unsubscriber with a generated id, MANUAL by default", async () => {
      const parent = await newProject(database.db);
      clock.set("2026-02-01T08:00:00.250Z");
      const created = await create(parent, { phone: PHONE, labels: { source: "support" } });
      expect(created.name).toMatch(new RegExp(`^${parent}/unsubscribers/[a-z][a-z0-9]{15}$`));
      expect(created.phone).toBe(PHONE);
      expect(created.unsubscribeMethod).toBe(Method.MANUAL);
      expect(created.labels).toEqual({ source: "support" });
      expect(timestampDate(created.createTime!).toISOString()).toBe("2026-02-01T08:00:00.250Z");
      expect(await client.getUnsubscriber({ name: created.name })).toEqual(created);
    });

    it.each([Method.URL, Method.MESSAGE, Method.MANUAL])("keeps unsubscribe_method %s", async (method) => {
      const created = await create(await newProject(database.db), {
        phone: PHONE,
        unsubscribeMethod: method,
      });
      expect(created.unsubscribeMethod).toBe(method);
    });

    it("ignores output-only fields and the name in the input", async () => {
      const parent = await newProject(database.db);
      clock.set("2026-02-02T00:00:00.000Z");
      const created = await create(parent, {
        name: `${parent}/unsubscribers/mine`,
        phone: PHONE,
        createTime: timestampFromDate(new Date("1999-12-31T00:00:00Z")),
      });
      expect(created.name).not.toBe(`${parent}/unsubscribers/mine`);
      expect(timestampDate(created.createTime!).toISOString()).toBe("2026-02-02T00:00:00.000Z");
    });

    it("accepts labels at their limits", async () => {
      const many = labels(49);
      many.k0 = x(1000);
      const created = await create(await newProject(database.db), {
        phone: PHONE,
        labels: { ...many, [x(100)]: "" },
      });
      expect(Object.keys(created.labels)).toHaveLength(50);
    });

    it("returns ALREADY_EXISTS for a number the project already has", async () => {
      const parent = await newProject(database.db);
      const first = await create(parent, { phone: PHONE });
      const error = await expectCode(
        create(parent, { phone: PHONE, unsubscribeMethod: Method.URL }),
        Code.AlreadyExists,
      );
      expect(errorReason(error)).toBe("RESOURCE_ALREADY_EXISTS");
      expect(error.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(first.name);
      expect(await listAll(parent)).toEqual([first]);
    });

    it("lets different projects have the same number", async () => {
      const a = await create(await newProject(database.db), { phone: PHONE });
      const b = await create(await newProject(database.db), { phone: PHONE });
      expect(a.phone).toBe(b.phone);
    });

    it("returns ALREADY_EXISTS to all but one of concurrent creates of the same number", async () => {
      const parent = await newProject(database.db);
      for (let round = 0; round < 5; round++) {
        const phone = mobile(900 + round);
        const results = await Promise.allSettled(
          Array.from({ length: 4 }, (_, i) => create(parent, { phone, labels: { attempt: String(i) } })),
        );
        const fulfilled = results.filter((r) => r.status === "fulfilled");
        const rejected = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
        expect(fulfilled).toHaveLength(1);
        expect(rejected).toHaveLength(3);
        for (const r of rejected) {
          expect(r.reason).toBeInstanceOf(ConnectError);
          expect(Code[(r.reason as ConnectError).code]).toBe(Code[Code.AlreadyExists]);
        }
        expect(await listAll(parent, phone)).toHaveLength(1);
      }
      expect(await listAll(parent)).toHaveLength(5);
    });

    it("accepts the number again once its unsubscriber is deleted", async () => {
      const parent = await newProject(database.db);
      const first = await create(parent, { phone: PHONE });
      await client.deleteUnsubscriber({ name: first.name });
      const second = await create(parent, { phone: PHONE });
      expect(second.name).not.toBe(first.name);
    });

    it.each(INVALID_CREATES)("refuses $name with INVALID_ARGUMENT and writes nothing", async (c) => {
      const parent = await newProject(database.db);
      await expectInvalid(
        client.createUnsubscriber({ parent: c.parent ?? parent, unsubscriber: c.unsubscriber }),
        c.fields,
      );
      expect(await listAll(parent)).toEqual([]);
    });
  });

  describe("GetUnsubscriber", () => {
    it("returns NOT_FOUND for an unknown unsubscriber", async () => {
      const name = `${await newProject(database.db)}/unsubscribers/nobody`;
      const error = await expectCode(client.getUnsubscriber({ name }), Code.NotFound);
      expect(errorReason(error)).toBe("RESOURCE_NOT_FOUND");
      expect(error.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(name);
    });

    it("returns NOT_FOUND for an unsubscriber of another project", async () => {
      const created = await create(await newProject(database.db), { phone: PHONE });
      const id = created.name.split("/").pop();
      await expectCode(
        client.getUnsubscriber({ name: `${await newProject(database.db)}/unsubscribers/${id}` }),
        Code.NotFound,
      );
    });

    it.each(["", "projects/p", "projects/p/regulatoryListings/r", "unsubscribers/u"])(
      "refuses the name %j with INVALID_ARGUMENT",
      async (name) => {
        await expectInvalid(client.getUnsubscriber({ name }), ["name"]);
      },
    );
  });

  describe("ListUnsubscribers", () => {
    it("lists a project's unsubscribers newest first, and no one else's", async () => {
      const parent = await newProject(database.db);
      clock.set("2026-03-01T00:00:00.000Z");
      const created: Unsubscriber[] = [];
      for (let i = 0; i < 4; i++) {
        created.push(await create(parent, { phone: mobile(i) }));
        await create(await newProject(database.db), { phone: mobile(i) });
        clock.advance(500);
      }
      const listed = await client.listUnsubscribers({ parent });
      expect(listed.unsubscribers).toEqual([...created].reverse());
      expect(listed.nextPageToken).toBe("");
    });

    it("filters by phone, exactly, after normalising the filter to E.164", async () => {
      const parent = await newProject(database.db);
      const a = await create(parent, { phone: PHONE });
      await create(parent, { phone: mobile(1) });
      await create(parent, { phone: "+61491570157" });
      expect(await listAll(parent, PHONE)).toEqual([a]);
      expect(await listAll(parent, "+61 491 570 156")).toEqual([a]);
      expect(await listAll(parent, mobile(2))).toEqual([]);
      expect(await listAll(await newProject(database.db), PHONE)).toEqual([]);
    });

    it.each(["0491570156", "+447700900123", "not a number", "+6149157015612345"])(
      "refuses the phone filter %j",
      async (phone) => {
        await expectInvalid(client.listUnsubscribers({ parent: await newProject(database.db), phone }), [
          "phone",
        ]);
      },
    );

    describe("pagination over 255 unsubscribers", () => {
      let parent: string;
      let all: Unsubscriber[];

      beforeAll(async () => {
        parent = await newProject(database.db);
        // Create times repeat (five per millisecond): ties are broken by id.
        clock.set("2026-04-01T00:00:00.000Z");
        for (let i = 0; i < 255; i++) {
          await create(parent, { phone: mobile(i) });
          if (i % 5 === 4) clock.advance(1);
        }
        all = await listAll(parent);
      }, 120_000);

      it("returns every unsubscriber once, newest first", () => {
        expect(all).toHaveLength(255);
        expect(new Set(all.map((u) => u.name)).size).toBe(255);
        for (let i = 1; i < all.length; i++) {
          const before = timestampDate(all[i - 1]!.createTime!).getTime();
          const after = timestampDate(all[i]!.createTime!).getTime();
          expect(before).toBeGreaterThanOrEqual(after);
          if (before === after) expect(all[i - 1]!.name > all[i]!.name).toBe(true);
        }
      });

      it.each([3, 10, 64, 100])(
        "walks pages of %i without gaps or repeats, in the same order",
        async (size) => {
          const { items, pages } = await collectPages(async (pageToken) => {
            const r = await client.listUnsubscribers({ parent, pageSize: size, pageToken });
            expect(r.unsubscribers.length).toBeLessThanOrEqual(size);
            return { items: r.unsubscribers, nextPageToken: r.nextPageToken };
          });
          expect(items.map((u) => u.name)).toEqual(all.map((u) => u.name));
          expect(pages).toBe(Math.ceil(255 / size));
        },
        120_000,
      );

      it("uses 10 for page_size 0 and 100 for page_size 1000", async () => {
        const zero = await client.listUnsubscribers({ parent });
        expect(zero.unsubscribers).toHaveLength(10);
        const big = await client.listUnsubscribers({ parent, pageSize: 1000 });
        expect(big.unsubscribers.map((u) => u.name)).toEqual(all.slice(0, 100).map((u) => u.name));
      });

      it("has an empty token exactly on the last page", async () => {
        const full = await client.listUnsubscribers({ parent, pageSize: 100 });
        const second = await client.listUnsubscribers({
          parent,
          pageSize: 100,
          pageToken: full.nextPageToken,
        });
        const last = await client.listUnsubscribers({
          parent,
          pageSize: 100,
          pageToken: second.nextPageToken,
        });
        expect(full.nextPageToken).not.toBe("");
        expect(second.nextPageToken).not.toBe("");
        expect(last.unsubscribers).toHaveLength(55);
        expect(last.nextPageToken).toBe("");
      });

      it("refuses a token used with another phone filter or parent", async () => {
        const first = await client.listUnsubscribers({ parent, pageSize: 10 });
        await expectInvalid(
          client.listUnsubscribers({ parent, phone: mobile(1), pageToken: first.nextPageToken }),
          ["page_token"],
        );
        await expectInvalid(
          client.listUnsubscribers({ parent: await newProject(database.db), pageToken: first.nextPageToken }),
          ["page_token"],
        );
      });

      it.each(["%%%", "eyJ2IjoxfQ", Buffer.from("[1,2]").toString("base64url")])(
        "refuses the page token %j",
        async (pageToken) => {
          await expectInvalid(client.listUnsubscribers({ parent, pageToken }), ["page_token"]);
        },
      );
    });
  });

  describe("UpdateUnsubscriber", () => {
    let unsubscriber: Unsubscriber;

    beforeAll(async () => {
      unsubscriber = await create(await newProject(database.db), {
        phone: PHONE,
        unsubscribeMethod: Method.MESSAGE,
        labels: { a: "1" },
      });
    });

    async function reset() {
      unsubscriber = await client.updateUnsubscriber({
        unsubscriber: { name: unsubscriber.name, labels: { a: "1" } },
        updateMask: { paths: ["labels"] },
      });
    }

    async function expectUnchanged() {
      expect(await client.getUnsubscriber({ name: unsubscriber.name })).toEqual(unsubscriber);
    }

    it("without a mask replaces the labels when they are populated", async () => {
      await reset();
      const updated = await client.updateUnsubscriber({
        unsubscriber: { name: unsubscriber.name, labels: { b: "2" } },
      });
      expect(updated).toEqual({ ...unsubscriber, labels: { b: "2" } });
      expect(await client.getUnsubscriber({ name: unsubscriber.name })).toEqual(updated);
    });

    it("without a mask and without populated fields changes nothing", async () => {
      await reset();
      const updated = await client.updateUnsubscriber({ unsubscriber: { name: unsubscriber.name } });
      expect(updated).toEqual(unsubscriber);
    });

    it("with the labels in the mask clears them when the request has none", async () => {
      await reset();
      const updated = await client.updateUnsubscriber({
        unsubscriber: { name: unsubscriber.name },
        updateMask: { paths: ["labels"] },
      });
      expect(updated.labels).toEqual({});
    });

    it("with `*` replaces the labels and keeps the omitted immutable fields", async () => {
      await reset();
      const updated = await client.updateUnsubscriber({
        unsubscriber: { name: unsubscriber.name, labels: { c: "3" } },
        updateMask: { paths: ["*"] },
      });
      expect(updated).toEqual({ ...unsubscriber, labels: { c: "3" } });
    });

    it("accepts the whole resource sent back with new labels", async () => {
      await reset();
      const updated = await client.updateUnsubscriber({
        unsubscriber: { ...unsubscriber, labels: { d: "4" } },
      });
      expect(updated).toEqual({ ...unsubscriber, labels: { d: "4" } });
    });

    it("ignores create_time in the request and in the mask", async () => {
      await reset();
      const updated = await client.updateUnsubscriber({
        unsubscriber: {
          name: unsubscriber.name,
          labels: { e: "5" },
          createTime: timestampFromDate(new Date("2000-01-01T00:00:00Z")),
        },
        updateMask: { paths: ["labels", "create_time"] },
      });
      expect(updated).toEqual({ ...unsubscriber, labels: { e: "5" } });
    });

    it.each<{ name: string; patch: UnsubscriberInit; paths?: string[]; fields: string[] }>([
      { name: "another phone without a mask", patch: { phone: mobile(5) }, fields: ["unsubscriber.phone"] },
      {
        name: "another phone in the mask",
        patch: { phone: mobile(5) },
        paths: ["phone"],
        fields: ["unsubscriber.phone"],
      },
      {
        name: "the phone cleared through the mask",
        patch: {},
        paths: ["phone"],
        fields: ["unsubscriber.phone"],
      },
      {
        name: "another method without a mask",
        patch: { unsubscribeMethod: Method.URL },
        fields: ["unsubscriber.unsubscribe_method"],
      },
      {
        name: "the method cleared through the mask",
        patch: {},
        paths: ["unsubscribe_method", "labels"],
        fields: ["unsubscriber.unsubscribe_method"],
      },
      {
        name: "another method with `*`",
        patch: { unsubscribeMethod: Method.MANUAL },
        paths: ["*"],
        fields: ["unsubscriber.unsubscribe_method"],
      },
    ])("refuses to change an immutable field: $name", async (c) => {
      await reset();
      await expectInvalid(
        client.updateUnsubscriber({
          unsubscriber: { labels: { z: "9" }, ...c.patch, name: unsubscriber.name },
          updateMask: c.paths ? { paths: c.paths } : undefined,
        }),
        c.fields,
      );
      await expectUnchanged();
    });

    it("accepts immutable fields with their current values", async () => {
      await reset();
      const updated = await client.updateUnsubscriber({
        unsubscriber: {
          name: unsubscriber.name,
          phone: PHONE,
          unsubscribeMethod: Method.MESSAGE,
          labels: { f: "6" },
        },
        updateMask: { paths: ["phone", "unsubscribe_method", "labels"] },
      });
      expect(updated).toEqual({ ...unsubscriber, labels: { f: "6" } });
    });

    it.each([["nope"], ["labels.a"], ["Labels"], ["*", "labels"]])(
      "refuses the mask path %j",
      async (...paths) => {
        await reset();
        await expectInvalid(
          client.updateUnsubscriber({
            unsubscriber: { name: unsubscriber.name, labels: {} },
            updateMask: { paths },
          }),
          ["update_mask"],
        );
        await expectUnchanged();
      },
    );

    it("refuses labels over the limits", async () => {
      await reset();
      await expectInvalid(
        client.updateUnsubscriber({ unsubscriber: { name: unsubscriber.name, labels: labels(51) } }),
        ["unsubscriber.labels"],
      );
      await expectInvalid(
        client.updateUnsubscriber({ unsubscriber: { name: unsubscriber.name, labels: { [x(101)]: "v" } } }),
        [`unsubscriber.labels["${x(101)}"]`],
      );
      await expectUnchanged();
    });

    it("refuses a missing or malformed name", async () => {
      await expectInvalid(client.updateUnsubscriber({ unsubscriber: { labels: { a: "b" } } }), [
        "unsubscriber.name",
      ]);
      await expectInvalid(
        client.updateUnsubscriber({ unsubscriber: { name: "projects/p", labels: { a: "b" } } }),
        ["unsubscriber.name"],
      );
      await expectInvalid(client.updateUnsubscriber({}), ["unsubscriber"]);
    });

    it("returns NOT_FOUND for an unknown unsubscriber or one of another project", async () => {
      await reset();
      await expectCode(
        client.updateUnsubscriber({
          unsubscriber: { name: `${await newProject(database.db)}/unsubscribers/nobody`, labels: {} },
        }),
        Code.NotFound,
      );
      const id = unsubscriber.name.split("/").pop();
      await expectCode(
        client.updateUnsubscriber({
          unsubscriber: { name: `${await newProject(database.db)}/unsubscribers/${id}`, labels: { x: "y" } },
        }),
        Code.NotFound,
      );
      await expectUnchanged();
    });
  });

  describe("DeleteUnsubscriber", () => {
    it("deletes the unsubscriber and returns it", async () => {
      const parent = await newProject(database.db);
      const created = await create(parent, {
        phone: PHONE,
        unsubscribeMethod: Method.URL,
        labels: { k: "v" },
      });
      const other = await create(parent, { phone: mobile(1) });
      const deleted = await client.deleteUnsubscriber({ name: created.name });
      expect(deleted).toEqual(created);
      await expectCode(client.getUnsubscriber({ name: created.name }), Code.NotFound);
      expect(await listAll(parent)).toEqual([other]);
    });

    it("returns NOT_FOUND when it is already deleted or unknown", async () => {
      const created = await create(await newProject(database.db), { phone: PHONE });
      await client.deleteUnsubscriber({ name: created.name });
      await expectCode(client.deleteUnsubscriber({ name: created.name }), Code.NotFound);
      await expectCode(
        client.deleteUnsubscriber({ name: `${await newProject(database.db)}/unsubscribers/nobody` }),
        Code.NotFound,
      );
    });

    it("returns NOT_FOUND for an unsubscriber of another project, and keeps it", async () => {
      const created = await create(await newProject(database.db), { phone: PHONE });
      const id = created.name.split("/").pop();
      await expectCode(
        client.deleteUnsubscriber({ name: `${await newProject(database.db)}/unsubscribers/${id}` }),
        Code.NotFound,
      );
      expect(await client.getUnsubscriber({ name: created.name })).toEqual(created);
    });

    it("refuses a malformed name", async () => {
      await expectInvalid(client.deleteUnsubscriber({ name: "projects/p/unsubscribers" }), ["name"]);
    });
  });
});
