/**
 * Phone number instances in process (real services and interceptors):
 * provisioning, configuration rules, lists, ranges and splits, moves, the
 * lifecycle, quarantine, compliance and the regulatory rules, and the two
 * races the database must settle.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type PhoneNumberInstance,
  type PhoneNumberInstanceSchema,
  PhoneNumberInstance_LifecycleState as State,
  PhoneNumberInstance_RecordingTrigger as Trigger,
} from "../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { ResourceInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { DEFAULT_NUMBER_QUARANTINE_SECONDS } from "../../src/config.js";
import { numberingDomains } from "../../src/numbering/domains.js";
import { errorReason, expectCode, expectInvalid, newProject } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import {
  AU_ADDRESS,
  addBlock,
  blockAllocator,
  businessListing,
  Capability,
  createListing,
  listAll,
  type NumberingClients,
  NumberType,
  numberingClients,
  plus,
  provision,
  searchAll,
  US_ADDRESS,
} from "./support.js";

/** The fields of a PhoneNumberInstance to send (a plain object, never a message). */
type InstanceInit = Exclude<MessageInitShape<typeof PhoneNumberInstanceSchema>, PhoneNumberInstance>;

const DAY = 24 * 3600 * 1000;
const QUARANTINE_MS = DEFAULT_NUMBER_QUARANTINE_SECONDS * 1000;
const x = (n: number) => "x".repeat(n);
const F = "phone_number_instance";

interface InvalidConfig {
  name: string;
  instance: InstanceInit;
  fields: string[];
}

/** Configuration a create or an update refuses, with the exact field paths. */
const INVALID_CONFIGS: InvalidConfig[] = [
  {
    name: "a display name over 100 characters",
    instance: { displayName: x(101) },
    fields: [`${F}.display_name`],
  },
  {
    name: "51 labels",
    instance: { labels: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, "v"])) },
    fields: [`${F}.labels`],
  },
  {
    name: "a label key over 100 characters",
    instance: { labels: { [x(101)]: "v" } },
    fields: [`${F}.labels["${x(101)}"]`],
  },
  { name: "an empty label key", instance: { labels: { "": "v" } }, fields: [`${F}.labels[""]`] },
  {
    name: "a label value over 1000 characters",
    instance: { labels: { k: x(1001) } },
    fields: [`${F}.labels["k"]`],
  },
  {
    name: "six message handlers",
    instance: {
      incomingMessageHandlerUris: Array.from({ length: 6 }, (_, i) => `https://h${i}.example.com/`),
    },
    fields: [`${F}.incoming_message_handler_uris`],
  },
  {
    name: "six call handlers",
    instance: { incomingCallHandlerUris: Array.from({ length: 6 }, (_, i) => `https://h${i}.example.com/`) },
    fields: [`${F}.incoming_call_handler_uris`],
  },
  {
    name: "a relative message handler URL",
    instance: { incomingMessageHandlerUris: ["https://ok.example.com/", "/relative"] },
    fields: [`${F}.incoming_message_handler_uris[1]`],
  },
  {
    name: "a sip: message handler (messages are http(s) only)",
    instance: { incomingMessageHandlerUris: ["sip:alice@example.com"] },
    fields: [`${F}.incoming_message_handler_uris[0]`],
  },
  {
    name: "an ftp: call handler",
    instance: {
      incomingCallHandlerUris: ["https://a.example.com/", "http://b.example.com/", "ftp://c.example.com/"],
    },
    fields: [`${F}.incoming_call_handler_uris[2]`],
  },
  {
    name: "a sip: call handler without a user",
    instance: { incomingCallHandlerUris: ["sip:example.com"] },
    fields: [`${F}.incoming_call_handler_uris[0]`],
  },
  {
    name: "a sip: call handler with a port above 65535",
    instance: { incomingCallHandlerUris: ["sip:alice@example.com:65536"] },
    fields: [`${F}.incoming_call_handler_uris[0]`],
  },
  {
    name: "a tel: call handler that is not E.164",
    instance: { incomingCallHandlerUris: ["tel:0255501234"] },
    fields: [`${F}.incoming_call_handler_uris[0]`],
  },
  {
    name: "a tel: call handler naming no valid number",
    instance: { incomingCallHandlerUris: ["tel:+6100000"] },
    fields: [`${F}.incoming_call_handler_uris[0]`],
  },
  {
    name: "a call handler with a space",
    instance: { incomingCallHandlerUris: ["https://example.com/a b"] },
    fields: [`${F}.incoming_call_handler_uris[0]`],
  },
  {
    name: "several URI problems at once",
    instance: {
      incomingMessageHandlerUris: ["tel:+61255501234"],
      incomingCallHandlerUris: ["https://ok.example.com/", "mailto:a@example.com"],
    },
    fields: [`${F}.incoming_message_handler_uris[0]`, `${F}.incoming_call_handler_uris[1]`],
  },
];

describe.each(testDatabases())("PhoneNumberInstances on $name", (backend) => {
  const database = useTestDatabase(backend);
  const clock = new TestClock("2026-02-01T00:00:00.000Z");
  const nextBlock = blockAllocator();
  let c: NumberingClients;

  beforeAll(() => {
    c = numberingClients(database.db, clock);
  });

  /** A fresh block of `size` inventory numbers; its first number. */
  const block = (size = 100, init = {}) => addBlock(c, nextBlock(), size, init);

  const domain = () =>
    numberingDomains(database.db, clock, { numberQuarantineSeconds: DEFAULT_NUMBER_QUARANTINE_SECONDS });

  async function provisionRange(parent: string, start: string, size: number, regulatoryListing = "") {
    return c.admin.provisionPhoneNumberRange({ parent, startPhoneNumber: start, size, regulatoryListing });
  }

  describe("CreatePhoneNumberInstance", () => {
    it("provisions an inventory number: ACTIVE, activate_time = create_time, recording DISABLED", async () => {
      const parent = await newProject(database.db);
      const start = await block(100, { capabilities: [Capability.VOICE, Capability.SMS] });
      clock.set("2026-02-02T09:30:00.250Z");
      const created = await c.instances.createPhoneNumberInstance({
        parent,
        phoneNumberInstance: {
          phoneNumber: { phoneNumber: plus(start, 7) },
          displayName: "Support line",
          labels: { team: "support" },
          incomingCallHandlerUris: [
            "https://voice.example.com/answer",
            "sip:desk@pbx.example.com:5061",
            "tel:+61491570156",
          ],
          incomingMessageHandlerUris: ["https://sms.example.com/in"],
        },
      });
      expect(created.name).toMatch(new RegExp(`^${parent}/phoneNumberInstances/[a-z][a-z0-9]{15}$`));
      expect(created.lifecycleState).toBe(State.ACTIVE);
      expect(created.callRecordingTrigger).toBe(Trigger.DISABLED);
      expect(timestampDate(created.createTime!).toISOString()).toBe("2026-02-02T09:30:00.250Z");
      expect(created.activateTime).toEqual(created.createTime);
      expect(created.deleteTime).toBeUndefined();
      expect(created.range).toBeUndefined();
      expect(created.regulatoryListing).toBe("");
      expect(created.compliant).toBe(false);
      expect(created.phoneNumber).toMatchObject({
        name: `phoneNumbers/${plus(start, 7).slice(1)}`,
        phoneNumber: plus(start, 7),
        numberType: NumberType.LOCAL,
        countryCode: "AU",
        capabilities: [Capability.SMS, Capability.VOICE],
        sku: "AU-LOCAL-MONTHLY",
        activationSku: "AU-LOCAL-ACTIVATION",
      });
      expect(created.incomingCallHandlerUris).toHaveLength(3);
      expect(await c.instances.getPhoneNumberInstance({ name: created.name })).toEqual(created);
    });

    it("names the number by phone_number.name, with or without the +", async () => {
      const parent = await newProject(database.db);
      const start = await block();
      const a = await c.instances.createPhoneNumberInstance({
        parent,
        phoneNumberInstance: { phoneNumber: { name: `phoneNumbers/${start.slice(1)}` } },
      });
      const b = await c.instances.createPhoneNumberInstance({
        parent,
        phoneNumberInstance: {
          phoneNumber: { name: `phoneNumbers/${plus(start, 1)}`, phoneNumber: plus(start, 1) },
        },
      });
      expect(a.phoneNumber?.phoneNumber).toBe(start);
      expect(b.phoneNumber?.phoneNumber).toBe(plus(start, 1));
    });

    it("ignores output-only fields and the name in the input", async () => {
      const parent = await newProject(database.db);
      const start = await block();
      clock.set("2026-02-03T00:00:00.000Z");
      const created = await c.instances.createPhoneNumberInstance({
        parent,
        phoneNumberInstance: {
          name: `${parent}/phoneNumberInstances/chosen`,
          phoneNumber: { phoneNumber: start },
          lifecycleState: State.SUSPENDED,
          createTime: timestampFromDate(new Date("2001-01-01T00:00:00Z")),
          compliant: true,
          regulatoryListing: `${parent}/regulatoryListings/nope`,
          range: { size: 50, startPhoneNumber: start },
        },
      });
      expect(created.name).not.toBe(`${parent}/phoneNumberInstances/chosen`);
      expect(created.lifecycleState).toBe(State.ACTIVE);
      expect(timestampDate(created.createTime!).toISOString()).toBe("2026-02-03T00:00:00.000Z");
      expect(created.compliant).toBe(false);
      expect(created.regulatoryListing).toBe("");
      expect(created.range).toBeUndefined();
    });

    it("returns NOT_FOUND naming the number when it is not in inventory", async () => {
      const parent = await newProject(database.db);
      const start = nextBlock(); // never added
      const error = await expectCode(provision(c, parent, start), Code.NotFound);
      expect(error.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(`phoneNumbers/${start.slice(1)}`);
      expect(await listAll(c, parent)).toEqual([]);
    });

    it("returns ALREADY_EXISTS naming the holder in the same project", async () => {
      const parent = await newProject(database.db);
      const start = await block();
      const first = await provision(c, parent, start);
      const error = await expectCode(provision(c, parent, start), Code.AlreadyExists);
      expect(error.rawMessage).toContain(first.name);
      expect(await listAll(c, parent)).toHaveLength(1);
    });

    it("returns ALREADY_EXISTS without naming another project's instance", async () => {
      const start = await block();
      const first = await provision(c, await newProject(database.db), start);
      const other = await newProject(database.db);
      const error = await expectCode(provision(c, other, start), Code.AlreadyExists);
      expect(error.rawMessage).not.toContain(first.name.split("/")[3]!);
      expect(error.rawMessage).toContain(start);
      expect(await listAll(c, other)).toEqual([]);
    });

    it("returns ALREADY_EXISTS for a number inside a provisioned range", async () => {
      const parent = await newProject(database.db);
      const start = await block();
      await provisionRange(parent, start, 50);
      await expectCode(provision(c, parent, plus(start, 49)), Code.AlreadyExists);
      expect((await provision(c, parent, plus(start, 50))).phoneNumber?.phoneNumber).toBe(plus(start, 50));
    });

    it("offers a provisioned number no more in search", async () => {
      const start = await block(3);
      const prefix = start.slice(0, 10);
      expect(await searchAll(c, { countryCode: "AU", prefix })).toEqual([
        start,
        plus(start, 1),
        plus(start, 2),
      ]);
      await provision(c, await newProject(database.db), plus(start, 1));
      expect(await searchAll(c, { countryCode: "AU", prefix })).toEqual([start, plus(start, 2)]);
    });

    it("attaches a regulatory listing of the project", async () => {
      const parent = await newProject(database.db);
      const listing = await createListing(c, parent);
      const created = await provision(c, parent, await block(), listing.name);
      expect(created.regulatoryListing).toBe(listing.name);
      expect(created.compliant).toBe(true); // valid AU listing, LOCAL number
    });

    it("refuses a listing of another project (INVALID_ARGUMENT) and an unknown one (NOT_FOUND)", async () => {
      const parent = await newProject(database.db);
      const start = await block();
      const foreign = await createListing(c, await newProject(database.db));
      await expectInvalid(provision(c, parent, start, foreign.name), ["regulatory_listing"]);
      await expectInvalid(provision(c, parent, start, "projects/x/regulatoryListings/a/b"), [
        "regulatory_listing",
      ]);
      const missing = `${parent}/regulatoryListings/missing`;
      const error = await expectCode(provision(c, parent, start, missing), Code.NotFound);
      expect(error.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(missing);
      expect(await listAll(c, parent)).toEqual([]);
      expect(await searchAll(c, { countryCode: "AU", prefix: start.slice(0, 10) })).toHaveLength(100);
    });

    it.each([
      { name: "no phone_number_instance", instance: undefined, fields: ["phone_number_instance"] },
      { name: "no phone_number", instance: {}, fields: [`${F}.phone_number`] },
      { name: "an empty phone_number", instance: { phoneNumber: {} }, fields: [`${F}.phone_number`] },
      {
        name: "a phone number not in E.164",
        instance: { phoneNumber: { phoneNumber: "0255501234" } },
        fields: [`${F}.phone_number.phone_number`],
      },
      {
        name: "a malformed phone number name",
        instance: { phoneNumber: { name: "numbers/61255501234" } },
        fields: [`${F}.phone_number.name`],
      },
      {
        name: "name and phone_number naming different numbers",
        instance: { phoneNumber: { name: "phoneNumbers/61255501234", phoneNumber: "+61255501235" } },
        fields: [`${F}.phone_number.phone_number`],
      },
      ...INVALID_CONFIGS.map((c) => ({
        ...c,
        instance: { ...c.instance, phoneNumber: { phoneNumber: "+61255509999" } },
      })),
    ])("refuses $name with INVALID_ARGUMENT and provisions nothing", async ({ instance, fields }) => {
      const parent = await newProject(database.db);
      await expectInvalid(
        c.instances.createPhoneNumberInstance({ parent, phoneNumberInstance: instance }),
        fields,
      );
      expect(await listAll(c, parent, { includeDeleted: true })).toEqual([]);
    });

    it("refuses a malformed parent", async () => {
      await expectInvalid(
        c.instances.createPhoneNumberInstance({ parent: "projects/", phoneNumberInstance: {} }),
        ["parent"],
      );
    });
  });

  describe("concurrency", () => {
    it("lets exactly one of concurrent creates of a number succeed; the others get ALREADY_EXISTS", async () => {
      const start = await block(10);
      const projects = await Promise.all([1, 2, 3].map(() => newProject(database.db)));
      for (let i = 0; i < 10; i++) {
        const number = plus(start, i);
        const results = await Promise.allSettled(
          [...projects, ...projects].map((parent) => provision(c, parent, number)),
        );
        const won = results.filter((r) => r.status === "fulfilled");
        const lost = results.filter((r) => r.status === "rejected");
        expect(won).toHaveLength(1);
        for (const r of lost) expect((r as PromiseRejectedResult).reason.code).toBe(Code.AlreadyExists);
      }
      const held = (await Promise.all(projects.map((p) => listAll(c, p)))).flat();
      expect(held.map((i) => i.phoneNumber?.phoneNumber).sort()).toEqual(
        Array.from({ length: 10 }, (_, i) => plus(start, i)),
      );
    });

    it("leaves a range consistent after concurrent splits", async () => {
      const parent = await newProject(database.db);
      const start = await block(100);
      const range = await provisionRange(parent, start, 100);
      const results = await Promise.allSettled(
        [20, 50, 70, 90, 10].map((size) => c.instances.splitRange({ phoneNumberInstance: range.name, size })),
      );
      expect(results.some((r) => r.status === "fulfilled")).toBe(true);
      for (const r of results) {
        if (r.status === "rejected") expect(r.reason.code).toBe(Code.InvalidArgument);
      }
      const all = (await listAll(c, parent)).sort((a, b) =>
        a.range!.startPhoneNumber.localeCompare(b.range!.startPhoneNumber),
      );
      // Contiguous, non-overlapping, covering the 100 numbers, the original first.
      expect(all[0]!.name).toBe(range.name);
      let next = start;
      for (const r of all) {
        expect(r.range!.startPhoneNumber).toBe(next);
        expect(r.range!.endPhoneNumber).toBe(plus(next, r.range!.size - 1));
        expect(r.range!.primaryPhoneNumberInstance).toBe(r.name);
        next = plus(next, r.range!.size);
      }
      expect(next).toBe(plus(start, 100));
      expect(all.length).toBe(1 + results.filter((r) => r.status === "fulfilled").length);
      // Every number belongs to the range holding it.
      const d = domain();
      for (let n = 0; n < 100; n++) {
        const holder = await d.instances.findByNumber(plus(start, n));
        const expected = all.find(
          (r) =>
            BigInt(plus(start, n)) >= BigInt(r.range!.startPhoneNumber) &&
            BigInt(plus(start, n)) <= BigInt(r.range!.endPhoneNumber),
        );
        expect(holder?.name).toBe(expected?.name);
      }
    });
  });

  describe("GetPhoneNumberInstance and ListPhoneNumberInstances", () => {
    it("returns NOT_FOUND for an unknown instance and one of another project", async () => {
      const parent = await newProject(database.db);
      await expectCode(
        c.instances.getPhoneNumberInstance({ name: `${parent}/phoneNumberInstances/nope` }),
        Code.NotFound,
      );
      const created = await provision(c, parent, await block());
      const other = await newProject(database.db);
      await expectCode(
        c.instances.getPhoneNumberInstance({
          name: `${other}/phoneNumberInstances/${created.name.split("/")[3]}`,
        }),
        Code.NotFound,
      );
    });

    it("lists newest first across pages, hiding deleted instances unless include_deleted", async () => {
      const parent = await newProject(database.db);
      const start = await block(30);
      const created: PhoneNumberInstance[] = [];
      for (let i = 0; i < 25; i++) {
        clock.advance(1000);
        created.push(await provision(c, parent, plus(start, i)));
      }
      const newestFirst = [...created].reverse().map((i) => i.name);
      const first = await c.instances.listPhoneNumberInstances({ parent, pageSize: 10 });
      expect(first.phoneNumberInstances.map((i) => i.name)).toEqual(newestFirst.slice(0, 10));
      expect(first.nextPageToken).not.toBe("");
      expect((await listAll(c, parent)).map((i) => i.name)).toEqual(newestFirst);
      await c.instances.deletePhoneNumberInstance({ name: created[3]!.name });
      expect((await listAll(c, parent)).map((i) => i.name)).toEqual(
        newestFirst.filter((n) => n !== created[3]!.name),
      );
      const withDeleted = await listAll(c, parent, { includeDeleted: true });
      expect(withDeleted.map((i) => i.name)).toEqual(newestFirst);
      expect(withDeleted.find((i) => i.name === created[3]!.name)?.lifecycleState).toBe(State.DELETED);
      await expectInvalid(
        c.instances.listPhoneNumberInstances({
          parent,
          pageSize: 10,
          pageToken: first.nextPageToken,
          includeDeleted: true,
        }),
        ["page_token"],
      );
    });

    it("filters by prefix, matching a range by any number it holds", async () => {
      const parent = await newProject(database.db);
      const start = await block(100);
      await provisionRange(parent, start, 50); // start .. start+49
      const single = await provision(c, parent, plus(start, 60));
      const names = async (prefix: string) =>
        (await listAll(c, parent, { prefix })).map((i) => i.phoneNumber?.phoneNumber);
      expect(await names(plus(start, 37))).toEqual([start]); // inside the range
      expect(await names(plus(start, 60).slice(1))).toEqual([single.phoneNumber?.phoneNumber]); // without +
      expect(await names(start.slice(0, 10))).toHaveLength(2);
      expect(await names(plus(start, 55))).toEqual([]);
      expect(await names("+44")).toEqual([]);
      expect(await names(`${plus(start, 60)}0`)).toEqual([]); // longer than any number
      await expectInvalid(c.instances.listPhoneNumberInstances({ parent, prefix: "61-2" }), ["prefix"]);
    });
  });

  describe("UpdatePhoneNumberInstance", () => {
    async function created(init: InstanceInit = {}) {
      const parent = await newProject(database.db);
      return c.instances.createPhoneNumberInstance({
        parent,
        phoneNumberInstance: { ...init, phoneNumber: { phoneNumber: await block(1) } },
      });
    }

    it("changes the masked fields only", async () => {
      const before = await created({ displayName: "old", labels: { a: "1" } });
      clock.advance(DAY);
      const after = await c.instances.updatePhoneNumberInstance({
        name: before.name,
        phoneNumberInstance: {
          displayName: "ignored",
          incomingCallHandlerUris: ["sip:+61255501234@pbx.example.com", "tel:+61491570156"],
          callRecordingTrigger: Trigger.BRIDGE,
        },
        updateMask: { paths: ["incoming_call_handler_uris", "call_recording_trigger"] },
      });
      expect(after.displayName).toBe("old");
      expect(after.labels).toEqual({ a: "1" });
      expect(after.incomingCallHandlerUris).toEqual(["sip:+61255501234@pbx.example.com", "tel:+61491570156"]);
      expect(after.callRecordingTrigger).toBe(Trigger.BRIDGE);
      expect(after.createTime).toEqual(before.createTime);
      expect(await c.instances.getPhoneNumberInstance({ name: before.name })).toEqual(after);
    });

    it("without a mask applies the populated fields; with * resets the rest", async () => {
      const before = await created({
        displayName: "old",
        callRecordingTrigger: Trigger.ANSWER,
        labels: { a: "1" },
      });
      const implied = await c.instances.updatePhoneNumberInstance({
        name: before.name,
        phoneNumberInstance: { incomingMessageHandlerUris: ["https://sms.example.com/"] },
      });
      expect(implied.displayName).toBe("old");
      expect(implied.callRecordingTrigger).toBe(Trigger.ANSWER);
      expect(implied.incomingMessageHandlerUris).toEqual(["https://sms.example.com/"]);
      const full = await c.instances.updatePhoneNumberInstance({
        name: before.name,
        phoneNumberInstance: { displayName: "new" },
        updateMask: { paths: ["*"] },
      });
      expect(full.displayName).toBe("new");
      expect(full.labels).toEqual({});
      expect(full.incomingMessageHandlerUris).toEqual([]);
      expect(full.callRecordingTrigger).toBe(Trigger.DISABLED);
      expect(full.phoneNumber).toEqual(before.phoneNumber);
    });

    it("accepts the resource sent back whole; refuses a different phone_number (immutable)", async () => {
      const before = await created();
      const back = await c.instances.updatePhoneNumberInstance({
        name: before.name,
        phoneNumberInstance: { ...before, displayName: "renamed" },
      });
      expect(back.displayName).toBe("renamed");
      await expectInvalid(
        c.instances.updatePhoneNumberInstance({
          name: before.name,
          phoneNumberInstance: { phoneNumber: { phoneNumber: "+61255509999" } },
        }),
        [`${F}.phone_number`],
      );
      await expectInvalid(
        c.instances.updatePhoneNumberInstance({
          name: before.name,
          phoneNumberInstance: { name: `${before.name}x` },
        }),
        [`${F}.name`],
      );
      await expectInvalid(
        c.instances.updatePhoneNumberInstance({
          name: before.name,
          phoneNumberInstance: {},
          updateMask: { paths: ["nope"] },
        }),
        ["update_mask"],
      );
    });

    it.each(INVALID_CONFIGS)(
      "refuses $name with INVALID_ARGUMENT and changes nothing",
      async ({ instance, fields }) => {
        const before = await created({
          displayName: "kept",
          incomingCallHandlerUris: ["https://kept.example.com/"],
        });
        await expectInvalid(
          c.instances.updatePhoneNumberInstance({ name: before.name, phoneNumberInstance: instance }),
          fields,
        );
        expect(await c.instances.getPhoneNumberInstance({ name: before.name })).toEqual(before);
      },
    );

    it("refuses to update a deleted instance, and NOT_FOUND for an unknown one", async () => {
      const before = await created();
      await c.instances.deletePhoneNumberInstance({ name: before.name });
      const error = await expectCode(
        c.instances.updatePhoneNumberInstance({
          name: before.name,
          phoneNumberInstance: { displayName: "x" },
        }),
        Code.FailedPrecondition,
      );
      expect(errorReason(error)).toBe("INSTANCE_DELETED");
      await expectCode(
        c.instances.updatePhoneNumberInstance({
          name: `${await newProject(database.db)}/phoneNumberInstances/nope`,
          phoneNumberInstance: { displayName: "x" },
        }),
        Code.NotFound,
      );
    });
  });

  describe("ranges", () => {
    it("provisions a range as its primary instance; every number of it belongs to the range", async () => {
      const parent = await newProject(database.db);
      const start = await block(100);
      const range = await provisionRange(parent, start, 100);
      expect(range.lifecycleState).toBe(State.ACTIVE);
      expect(range.activateTime).toEqual(range.createTime);
      expect(range.range).toMatchObject({
        primaryPhoneNumberInstance: range.name,
        startPhoneNumber: start,
        endPhoneNumber: plus(start, 99),
        size: 100,
      });
      expect(range.phoneNumber?.phoneNumber).toBe(start);
      const d = domain();
      for (const n of [0, 1, 50, 99])
        expect((await d.instances.findByNumber(plus(start, n)))?.name).toBe(range.name);
      expect(await d.instances.findByNumber(plus(start, 100))).toBeUndefined();
      expect(await searchAll(c, { countryCode: "AU", prefix: start.slice(0, 10) })).toEqual([]);
    });

    it("splits a range of 100 with size 20 into 20 and 80 (the interface document's example)", async () => {
      const parent = await newProject(database.db);
      const listing = await createListing(c, parent);
      const start = await block(100);
      const range = await provisionRange(parent, start, 100, listing.name);
      await c.instances.updatePhoneNumberInstance({
        name: range.name,
        phoneNumberInstance: {
          displayName: "Sales",
          incomingCallHandlerUris: ["https://voice.example.com/"],
        },
      });
      clock.advance(DAY);
      const { first, second } = await c.instances.splitRange({ phoneNumberInstance: range.name, size: 20 });
      expect(first!.name).toBe(range.name);
      expect(first!.range).toMatchObject({
        startPhoneNumber: start,
        endPhoneNumber: plus(start, 19),
        size: 20,
      });
      expect(second!.name).not.toBe(range.name);
      expect(second!.range).toMatchObject({
        primaryPhoneNumberInstance: second!.name,
        startPhoneNumber: plus(start, 20),
        endPhoneNumber: plus(start, 99),
        size: 80,
      });
      expect(second!.phoneNumber?.phoneNumber).toBe(plus(start, 20));
      // The new range inherits configuration, state, activation and listing; it is created now.
      expect(second!.displayName).toBe("Sales");
      expect(second!.incomingCallHandlerUris).toEqual(["https://voice.example.com/"]);
      expect(second!.lifecycleState).toBe(State.ACTIVE);
      expect(second!.activateTime).toEqual(range.activateTime);
      expect(second!.regulatoryListing).toBe(listing.name);
      expect(timestampDate(second!.createTime!).getTime()).toBe(clock.now().getTime());
      const d = domain();
      expect((await d.instances.findByNumber(plus(start, 19)))?.name).toBe(first!.name);
      expect((await d.instances.findByNumber(plus(start, 20)))?.name).toBe(second!.name);
      expect((await d.instances.findByNumber(plus(start, 99)))?.name).toBe(second!.name);
      // Split again, the new range: 80 -> 79 + 1.
      const again = await c.instances.splitRange({ phoneNumberInstance: second!.name, size: 79 });
      expect(again.second!.range).toMatchObject({ startPhoneNumber: plus(start, 99), size: 1 });
      const single = await expectCode(
        c.instances.splitRange({ phoneNumberInstance: again.second!.name, size: 1 }),
        Code.FailedPrecondition,
      );
      expect(errorReason(single)).toBe("RANGE_TOO_SMALL");
    });

    it.each([
      [0, Code.InvalidArgument],
      [-1, Code.InvalidArgument],
      [100, Code.InvalidArgument],
      [101, Code.InvalidArgument],
    ])("refuses size %i, leaving the range as it was", async (size, code) => {
      const parent = await newProject(database.db);
      const range = await provisionRange(parent, await block(100), 100);
      const error = await expectCode(c.instances.splitRange({ phoneNumberInstance: range.name, size }), code);
      expect(error.findDetails(ResourceInfoSchema)).toEqual([]);
      await expectInvalid(c.instances.splitRange({ phoneNumberInstance: range.name, size }), ["size"]);
      expect(await listAll(c, parent)).toEqual([range]);
    });

    it("refuses to split a single number (FAILED_PRECONDITION) or a deleted range", async () => {
      const parent = await newProject(database.db);
      const single = await provision(c, parent, await block(1));
      const error = await expectCode(
        c.instances.splitRange({ phoneNumberInstance: single.name, size: 1 }),
        Code.FailedPrecondition,
      );
      expect(errorReason(error)).toBe("NOT_A_RANGE");
      const range = await provisionRange(parent, await block(10), 10);
      await c.instances.deletePhoneNumberInstance({ name: range.name });
      const deleted = await expectCode(
        c.instances.splitRange({ phoneNumberInstance: range.name, size: 5 }),
        Code.FailedPrecondition,
      );
      expect(errorReason(deleted)).toBe("INSTANCE_DELETED");
      await expectCode(
        c.instances.splitRange({ phoneNumberInstance: `${parent}/phoneNumberInstances/nope`, size: 5 }),
        Code.NotFound,
      );
    });

    it("refuses ranges not wholly in inventory, of mixed kinds, or overlapping a held number", async () => {
      const parent = await newProject(database.db);
      const start = await block(100);
      const missing = await expectCode(provisionRange(parent, plus(start, 90), 20), Code.FailedPrecondition);
      expect(errorReason(missing)).toBe("NUMBERS_NOT_IN_INVENTORY");
      expect(missing.rawMessage).toContain(plus(start, 100));
      const mixedStart = await block(10);
      await addBlock(c, plus(mixedStart, 5), 5, { numberType: NumberType.MOBILE });
      expect(
        errorReason(await expectCode(provisionRange(parent, mixedStart, 10), Code.FailedPrecondition)),
      ).toBe("MIXED_RANGE");
      await provision(c, parent, plus(start, 42));
      const taken = await expectCode(provisionRange(parent, start, 100), Code.AlreadyExists);
      expect(taken.rawMessage).toContain(plus(start, 42));
      await expectInvalid(provisionRange(parent, start, 0), ["size"]);
      await expectInvalid(provisionRange(parent, start, 10_001), ["size"]);
      await expectInvalid(provisionRange(parent, "0255501000", 10), ["start_phone_number"]);
      await expectInvalid(provisionRange(parent, "+99999999999999", 10), ["size"]); // past 15 digits
      expect((await listAll(c, parent)).map((i) => i.phoneNumber?.phoneNumber)).toEqual([plus(start, 42)]);
      expect(await searchAll(c, { countryCode: "AU", prefix: start.slice(0, 10) })).toHaveLength(99);
    });
  });

  describe("MovePhoneNumberInstance", () => {
    it("moves a range whole, with its configuration; the listing stays behind", async () => {
      const source = await newProject(database.db);
      const destination = await newProject(database.db);
      const listing = await createListing(c, source);
      const start = await block(100);
      const range = await provisionRange(source, start, 100, listing.name);
      const configured = await c.instances.updatePhoneNumberInstance({
        name: range.name,
        phoneNumberInstance: {
          displayName: "Moved",
          labels: { k: "v" },
          incomingCallHandlerUris: ["https://voice.example.com/"],
          incomingMessageHandlerUris: ["https://sms.example.com/"],
          callRecordingTrigger: Trigger.ANSWER,
        },
      });
      expect(configured.compliant).toBe(true);
      const moved = await c.instances.movePhoneNumberInstance({
        name: range.name,
        destinationParent: destination,
      });
      const id = range.name.split("/")[3];
      expect(moved.name).toBe(`${destination}/phoneNumberInstances/${id}`);
      expect(moved.range).toMatchObject({
        primaryPhoneNumberInstance: moved.name,
        size: 100,
        startPhoneNumber: start,
      });
      expect(moved).toMatchObject({
        displayName: "Moved",
        labels: { k: "v" },
        incomingCallHandlerUris: ["https://voice.example.com/"],
        incomingMessageHandlerUris: ["https://sms.example.com/"],
        callRecordingTrigger: Trigger.ANSWER,
        lifecycleState: State.ACTIVE,
        regulatoryListing: "",
        compliant: false,
      });
      expect(moved.createTime).toEqual(range.createTime);
      expect(moved.activateTime).toEqual(range.activateTime);
      expect(await listAll(c, source, { includeDeleted: true })).toEqual([]);
      expect((await listAll(c, destination)).map((i) => i.name)).toEqual([moved.name]);
      await expectCode(c.instances.getPhoneNumberInstance({ name: range.name }), Code.NotFound);
      expect((await domain().instances.findByNumber(plus(start, 77)))?.name).toBe(moved.name);
      // The listing is no longer in use: the source may delete it.
      await c.listings.deleteRegulatoryListing({ name: listing.name });
    });

    it("refuses the same project, a deleted instance, an unknown one or an unknown destination", async () => {
      const parent = await newProject(database.db);
      const created = await provision(c, parent, await block(1));
      await expectInvalid(
        c.instances.movePhoneNumberInstance({ name: created.name, destinationParent: parent }),
        ["destination_parent"],
      );
      await expectCode(
        c.instances.movePhoneNumberInstance({
          name: created.name,
          destinationParent: "projects/does-not-exist",
        }),
        Code.NotFound,
      );
      await expectCode(
        c.instances.movePhoneNumberInstance({
          name: `${parent}/phoneNumberInstances/nope`,
          destinationParent: await newProject(database.db),
        }),
        Code.NotFound,
      );
      await c.instances.deletePhoneNumberInstance({ name: created.name });
      const error = await expectCode(
        c.instances.movePhoneNumberInstance({
          name: created.name,
          destinationParent: await newProject(database.db),
        }),
        Code.FailedPrecondition,
      );
      expect(errorReason(error)).toBe("INSTANCE_DELETED");
      expect((await c.instances.getPhoneNumberInstance({ name: created.name })).name).toBe(created.name);
    });
  });

  describe("lifecycle", () => {
    it("suspends and resumes (idempotently), and refuses both on a deleted instance", async () => {
      const created = await provision(c, await newProject(database.db), await block(1));
      const suspended = await c.admin.suspendPhoneNumberInstance({ name: created.name });
      expect(suspended.lifecycleState).toBe(State.SUSPENDED);
      expect((await c.admin.suspendPhoneNumberInstance({ name: created.name })).lifecycleState).toBe(
        State.SUSPENDED,
      );
      const resumed = await c.admin.resumePhoneNumberInstance({ name: created.name });
      expect(resumed.lifecycleState).toBe(State.ACTIVE);
      expect(resumed.activateTime).toEqual(created.activateTime);
      expect((await c.admin.resumePhoneNumberInstance({ name: created.name })).lifecycleState).toBe(
        State.ACTIVE,
      );
      await c.admin.suspendPhoneNumberInstance({ name: created.name });
      const deleted = await c.instances.deletePhoneNumberInstance({ name: created.name });
      expect(deleted.lifecycleState).toBe(State.DELETED);
      for (const call of [
        () => c.admin.suspendPhoneNumberInstance({ name: created.name }),
        () => c.admin.resumePhoneNumberInstance({ name: created.name }),
        () => c.instances.deletePhoneNumberInstance({ name: created.name }),
      ]) {
        expect(errorReason(await expectCode(call(), Code.FailedPrecondition))).toBe("INSTANCE_DELETED");
      }
    });

    it("ports a number in: PENDING without activate_time, ACTIVE when completed", async () => {
      const parent = await newProject(database.db);
      clock.set("2026-04-01T00:00:00.000Z");
      const pending = await c.admin.portInPhoneNumber({ parent, phoneNumber: "+61491570110" });
      expect(pending.lifecycleState).toBe(State.PENDING);
      expect(pending.activateTime).toBeUndefined();
      expect(pending.phoneNumber).toMatchObject({
        phoneNumber: "+61491570110",
        countryCode: "AU",
        numberType: NumberType.MOBILE,
        sku: "AU-MOBILE-MONTHLY",
        activationSku: "AU-MOBILE-PORT-IN",
      });
      expect(
        errorReason(
          await expectCode(
            c.admin.suspendPhoneNumberInstance({ name: pending.name }),
            Code.FailedPrecondition,
          ),
        ),
      ).toBe("PORT_IN_PENDING");
      await expectCode(
        c.admin.portInPhoneNumber({ parent, phoneNumber: "+61491570110" }),
        Code.AlreadyExists,
      );
      // Handlers can be set up before the port completes.
      await c.instances.updatePhoneNumberInstance({
        name: pending.name,
        phoneNumberInstance: { incomingCallHandlerUris: ["https://voice.example.com/"] },
      });
      clock.set("2026-04-03T12:00:00.000Z");
      const active = await c.admin.completePortIn({ name: pending.name });
      expect(active.lifecycleState).toBe(State.ACTIVE);
      expect(timestampDate(active.activateTime!).toISOString()).toBe("2026-04-03T12:00:00.000Z");
      expect(active.createTime).toEqual(pending.createTime);
      expect(
        errorReason(
          await expectCode(c.admin.completePortIn({ name: pending.name }), Code.FailedPrecondition),
        ),
      ).toBe("NOT_PENDING");
    });

    it("refuses to port in an inventory number or an invalid one", async () => {
      const parent = await newProject(database.db);
      const start = await block(1);
      expect(
        errorReason(
          await expectCode(
            c.admin.portInPhoneNumber({ parent, phoneNumber: start }),
            Code.FailedPrecondition,
          ),
        ),
      ).toBe("NUMBER_IN_INVENTORY");
      await expectInvalid(c.admin.portInPhoneNumber({ parent, phoneNumber: "+6100000" }), ["phone_number"]);
      await expectInvalid(c.admin.portInPhoneNumber({ parent, phoneNumber: "0491570110" }), ["phone_number"]);
      await expectCode(
        c.admin.portInPhoneNumber({ parent: "projects/does-not-exist", phoneNumber: "+61491570313" }),
        Code.NotFound,
      );
    });

    it("deletes: DELETED with delete_time; the numbers come back to inventory after the quarantine", async () => {
      const parent = await newProject(database.db);
      const start = await block(10);
      const prefix = start.slice(0, 10);
      const range = await provisionRange(parent, start, 10);
      clock.set("2026-05-01T00:00:00.000Z");
      const deleted = await c.instances.deletePhoneNumberInstance({ name: range.name });
      expect(deleted.lifecycleState).toBe(State.DELETED);
      expect(timestampDate(deleted.deleteTime!).toISOString()).toBe("2026-05-01T00:00:00.000Z");
      expect(await c.instances.getPhoneNumberInstance({ name: range.name })).toEqual(deleted);
      expect(await domain().instances.findByNumber(start)).toBeUndefined();
      expect(await searchAll(c, { countryCode: "AU", prefix })).toEqual([]);
      const early = await expectCode(provision(c, parent, plus(start, 3)), Code.FailedPrecondition);
      expect(errorReason(early)).toBe("NUMBER_IN_QUARANTINE");
      expect(early.rawMessage).toContain(
        new Date(Date.parse("2026-05-01T00:00:00.000Z") + QUARANTINE_MS).toISOString(),
      );
      clock.advance(QUARANTINE_MS - 1);
      expect(await searchAll(c, { countryCode: "AU", prefix })).toEqual([]);
      clock.advance(1);
      expect(await searchAll(c, { countryCode: "AU", prefix })).toHaveLength(10);
      const again = await provision(c, await newProject(database.db), plus(start, 3));
      expect(again.lifecycleState).toBe(State.ACTIVE);
      expect((await domain().instances.findByNumber(plus(start, 3)))?.name).toBe(again.name);
      // The old instance is still there to read, DELETED.
      expect((await c.instances.getPhoneNumberInstance({ name: range.name })).lifecycleState).toBe(
        State.DELETED,
      );
    });

    it("releases at once with a quarantine of 0", async () => {
      const d = numberingDomains(database.db, clock, { numberQuarantineSeconds: 0 });
      const parent = await newProject(database.db);
      const start = await block(1);
      const created = await provision(c, parent, start);
      await d.instances.delete({ projectId: parent.split("/")[1]!, id: created.name.split("/")[3]! });
      expect((await provision(c, parent, start)).name).not.toBe(created.name);
    });
  });

  describe("regulatory rules", () => {
    it("refuses to delete a listing attached to an instance that is not deleted, naming it", async () => {
      const parent = await newProject(database.db);
      const listing = await createListing(c, parent);
      const instance = await provision(c, parent, await block(1), listing.name);
      for (const prepare of [
        async () => {},
        async () => {
          await c.admin.suspendPhoneNumberInstance({ name: instance.name });
        },
      ]) {
        await prepare();
        const error = await expectCode(
          c.listings.deleteRegulatoryListing({ name: listing.name }),
          Code.FailedPrecondition,
        );
        expect(errorReason(error)).toBe("LISTING_IN_USE");
        expect(error.rawMessage).toContain(instance.name);
        expect((await c.listings.getRegulatoryListing({ name: listing.name })).name).toBe(listing.name);
      }
      await c.instances.deletePhoneNumberInstance({ name: instance.name });
      await c.listings.deleteRegulatoryListing({ name: listing.name });
      await expectCode(c.listings.getRegulatoryListing({ name: listing.name }), Code.NotFound);
      const after = await c.instances.getPhoneNumberInstance({ name: instance.name });
      expect(after.regulatoryListing).toBe("");
      expect(after.compliant).toBe(false);
    });

    it("infers compliant from the listing: valid, in the number's country, verified where the type needs it", async () => {
      const parent = await newProject(database.db);
      const au = await createListing(c, parent);
      const us = await createListing(c, parent, businessListing(US_ADDRESS));
      const local = await provision(c, parent, await block(1), au.name);
      const mobileStart = await block(1, { numberType: NumberType.MOBILE, capabilities: [Capability.SMS] });
      const mobile = await provision(c, parent, mobileStart, au.name);
      const wrongCountry = await provision(c, parent, await block(1), us.name);
      const compliant = async (i: PhoneNumberInstance) =>
        (await c.instances.getPhoneNumberInstance({ name: i.name })).compliant;
      expect([await compliant(local), await compliant(mobile), await compliant(wrongCountry)]).toEqual([
        true,
        false,
        false,
      ]);

      await c.admin.reviewRegulatoryListing({ name: au.name, verified: true });
      expect([await compliant(local), await compliant(mobile)]).toEqual([true, true]);

      const invalid = await c.admin.reviewRegulatoryListing({ name: au.name, valid: false });
      expect(invalid).toMatchObject({ valid: false, verified: true });
      expect([await compliant(local), await compliant(mobile)]).toEqual([false, false]);
      const listed = await listAll(c, parent);
      expect(listed.filter((i) => i.compliant)).toEqual([]);

      const restored = await c.admin.reviewRegulatoryListing({ name: au.name, valid: true });
      expect(restored).toMatchObject({ valid: true, verified: true });
      expect([await compliant(local), await compliant(mobile)]).toEqual([true, true]);
    });

    it("agrees with SearchRegulatoryListings for every number type", async () => {
      const parent = await newProject(database.db);
      const plain = await createListing(c, parent);
      const verified = await createListing(c, parent);
      await c.admin.reviewRegulatoryListing({ name: verified.name, verified: true });
      const invalid = await createListing(c, parent);
      await c.admin.reviewRegulatoryListing({ name: invalid.name, valid: false, verified: true });
      for (const numberType of [
        NumberType.LOCAL,
        NumberType.NATIONAL,
        NumberType.MOBILE,
        NumberType.TOLL_FREE,
        NumberType.SHARED_RATE,
      ]) {
        const usable = (
          await c.listings.searchRegulatoryListings({ parent, regionCode: "AU", numberType, pageSize: 100 })
        ).regulatoryListings.map((l) => l.name);
        for (const listing of [plain, verified, invalid]) {
          const instance = await provision(c, parent, await block(1, { numberType }), listing.name);
          expect(instance.compliant, `${NumberType[numberType]} with ${listing.name}`).toBe(
            usable.includes(listing.name),
          );
        }
      }
    });

    it("review: NOT_FOUND for an unknown listing; a field left out keeps its value", async () => {
      const parent = await newProject(database.db);
      await expectCode(
        c.admin.reviewRegulatoryListing({ name: `${parent}/regulatoryListings/nope`, valid: true }),
        Code.NotFound,
      );
      const listing = await createListing(c, parent, { ...businessListing(), address: AU_ADDRESS });
      expect(await c.admin.reviewRegulatoryListing({ name: listing.name })).toMatchObject({
        valid: true,
        verified: false,
      });
      expect(await c.admin.reviewRegulatoryListing({ name: listing.name, verified: true })).toMatchObject({
        valid: true,
        verified: true,
      });
    });
  });

  describe("storage", () => {
    it("holds each number of a range once, in number_holdings", async () => {
      const parent = await newProject(database.db);
      const start = await block(100);
      const range = await provisionRange(parent, start, 100);
      await c.instances.splitRange({ phoneNumberInstance: range.name, size: 30 });
      const rows = await database.db.execute(
        sql`select count(*)::int as n, count(distinct instance_id)::int as holders from number_holdings
            where phone_number like ${`${start.slice(0, 10)}%`}`,
      );
      const row = (Array.isArray(rows) ? rows[0] : (rows as { rows: unknown[] }).rows[0]) as {
        n: number;
        holders: number;
      };
      expect(row).toEqual({ n: 100, holders: 2 });
    });
  });
});
