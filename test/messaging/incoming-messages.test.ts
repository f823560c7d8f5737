/**
 * Incoming messages end to end: the operator's
 * POST /admin/v1/simulator/incomingMessages on a listening server, the
 * message recorded in the owning instance's project, the INCOMING_MESSAGE
 * webhook delivered by the app's own worker to real HTTP receivers on
 * 127.0.0.1 (signatures checked with node:crypto), opt-out keywords making
 * MESSAGE unsubscribers, and Messages.GetMessage / ListMessages reading
 * what was recorded.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  Message_Direction,
  Message_MessageEncoding,
  Message_Status,
  Messages,
} from "../../gen/enfonica/messaging/v1/messages_pb.js";
import {
  Unsubscriber_UnsubscribeMethod,
  Unsubscribers,
} from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { SimulatorAdmin } from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { systemClock } from "../../src/clock.js";
import type { Db } from "../../src/db/client.js";
import { messages, projects, unsubscribers, webhookEvents } from "../../src/db/schema/index.js";
import { type App, build } from "../../src/server.js";
import {
  addBlock,
  blockAllocator,
  Capability,
  type NumberingClients,
  numberingClients,
} from "../numbering/support.js";
import {
  createTestClient,
  errorReason,
  expectCode,
  expectInvalid,
  newApiKey,
  newProject,
  TEST_OPERATOR_TOKEN,
  testConfig,
} from "../support/app.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type ReceivedRequest, type Receiver, startReceiver } from "../support/receiver.js";

// biome-ignore lint/suspicious/noExplicitAny: REST responses of varying shape, checked by the assertions
type Json = Record<string, any>;

const SENDER = "+61491570156";

/** Blocks of numbers that can receive messages (addBlock adds VOICE-only numbers by default). */
const SMS_CAPABLE = { capabilities: [Capability.VOICE, Capability.SMS] };

/** The project's signing key bytes, read straight from the table. */
async function keyOf(db: Db, project: string): Promise<Buffer> {
  const [row] = await db
    .select({ key: projects.signingKey })
    .from(projects)
    .where(eq(projects.id, project.split("/")[1]!));
  return Buffer.from(row!.key, "base64");
}

/** Checks the headers of a received INCOMING_MESSAGE webhook with node:crypto. */
function expectSigned(req: ReceivedRequest, key: Buffer, url: string): void {
  expect(req.method).toBe("POST");
  expect(req.headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(req.headers["x-enfonica-event"]).toBe("INCOMING_MESSAGE");
  const expected = createHmac("sha256", key)
    .update(Buffer.from(`${url}INCOMING_MESSAGE${req.body}`, "utf8"))
    .digest();
  const given = Buffer.from(String(req.headers["x-enfonica-signature"]), "base64");
  expect(given.length).toBe(expected.length);
  expect(timingSafeEqual(given, expected)).toBe(true);
  const id = String(req.headers["webhook-id"]);
  const timestamp = String(req.headers["webhook-timestamp"]);
  const standard = createHmac("sha256", key).update(`${id}.${timestamp}.${req.body}`).digest("base64");
  expect(String(req.headers["webhook-signature"]).split(" ")).toContain(`v1,${standard}`);
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe.each(testDatabases())("incoming messages on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let base: string;
  let receiver: Receiver;
  let second: Receiver;
  let c: NumberingClients;
  const nextBlock = blockAllocator();

  beforeAll(async () => {
    app = await build({
      config: testConfig({ WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true", WEBHOOKS_TIMEOUT_MS: "2000" }),
      db: database.db,
    });
    const address = await app.listen(0, "127.0.0.1");
    base = `http://127.0.0.1:${address.port}`;
    receiver = await startReceiver();
    second = await startReceiver();
    c = numberingClients(database.db, systemClock);
  });

  afterAll(async () => {
    await app?.close();
    await receiver?.close();
    await second?.close();
  });

  afterEach(async () => {
    // Nothing left for the worker to deliver into the next test.
    await app.webhooks?.runOnce();
    receiver.requests.length = 0;
    second.requests.length = 0;
    receiver.handle((_req, res) => res.end("ok"));
    second.handle((_req, res) => res.end("ok"));
  });

  async function call(
    method: string,
    path: string,
    body?: unknown,
    token: string | null = TEST_OPERATOR_TOKEN,
  ): Promise<{ status: number; json: Json }> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Json };
  }

  const inject = (
    body: { to?: string; from?: string; body?: string },
    token: string | null = TEST_OPERATOR_TOKEN,
  ) => call("POST", "/admin/v1/simulator/incomingMessages", body, token);

  const simulator = () => createTestClient(SimulatorAdmin, database.db, systemClock);

  /** A project with a single ACTIVE instance of a fresh number, handled by `uris`. */
  async function singleNumber(
    uris: string[],
  ): Promise<{ project: string; number: string; instance: string }> {
    const project = await newProject(database.db);
    const number = await addBlock(c, nextBlock(), 10, SMS_CAPABLE);
    const instance = await c.instances.createPhoneNumberInstance({
      parent: project,
      phoneNumberInstance: { phoneNumber: { phoneNumber: number }, incomingMessageHandlerUris: uris },
    });
    return { project, number, instance: instance.name };
  }

  async function unsubscribersOf(project: string) {
    return database.db
      .select()
      .from(unsubscribers)
      .where(eq(unsubscribers.projectId, project.split("/")[1]!));
  }

  async function messagesOf(project: string) {
    return database.db
      .select()
      .from(messages)
      .where(eq(messages.projectId, project.split("/")[1]!));
  }

  async function eventsOf(project: string) {
    return database.db
      .select()
      .from(webhookEvents)
      .where(eq(webhookEvents.projectId, project.split("/")[1]!));
  }

  it("delivers a message to a single number's handler: signed, the Message as proto3 JSON", async () => {
    const url = `${receiver.base}/sms?tenant=a`;
    const { project, number } = await singleNumber([url]);

    const res = await inject({ to: number, from: SENDER, body: "Hello there" });
    expect(res.status).toBe(200);
    const name = res.json.name as string;
    expect(name).toMatch(new RegExp(`^${project}/messages/[a-z][a-z0-9]{15}$`));
    expect(res.json).toMatchObject({
      to: number,
      from: SENDER,
      body: "Hello there",
      direction: "INCOMING",
      status: "RECEIVED",
      segmentCount: 1,
      encoding: "GSM7",
    });

    // The app's worker was kicked: no poll interval to wait for.
    await waitFor(() => receiver.requests.length === 1, "the webhook");
    const req = receiver.requests[0]!;
    expect(req.path).toBe("/sms?tenant=a");
    expectSigned(req, await keyOf(database.db, project), url);
    expect(JSON.parse(req.body)).toEqual(res.json);
    expect(JSON.parse(req.body)).toEqual({
      name,
      to: number,
      from: SENDER,
      body: "Hello there",
      direction: "INCOMING",
      status: "RECEIVED",
      segmentCount: 1,
      encoding: "GSM7",
      createTime: res.json.createTime,
    });
    expect(await unsubscribersOf(project)).toEqual([]);
  });

  it("routes a number inside a range to the range's instance", async () => {
    const project = await newProject(database.db);
    const start = await addBlock(c, nextBlock(), 100, SMS_CAPABLE);
    const range = await c.admin.provisionPhoneNumberRange({
      parent: project,
      startPhoneNumber: start,
      size: 50,
    });
    const url = `${receiver.base}/range`;
    await c.instances.updatePhoneNumberInstance({
      name: range.name,
      phoneNumberInstance: { incomingMessageHandlerUris: [url] },
    });
    const inside = `+${BigInt(start.slice(1)) + 37n}`;

    const res = await inject({ to: inside, from: SENDER, body: "to the range" });
    expect(res.status).toBe(200);
    expect(res.json.name).toMatch(new RegExp(`^${project}/messages/`));
    await waitFor(() => receiver.requests.length === 1, "the webhook");
    expectSigned(receiver.requests[0]!, await keyOf(database.db, project), url);
    expect(JSON.parse(receiver.requests[0]!.body)).toMatchObject({ to: inside, body: "to the range" });

    // Past the range's end nobody holds the number.
    const outside = `+${BigInt(start.slice(1)) + 50n}`;
    const refused = await inject({ to: outside, from: SENDER, body: "x" });
    expect(refused.status).toBe(400);
    expect(refused.json.error.status).toBe("FAILED_PRECONDITION");
  });

  it("falls through to the next handler when the first answers 500", async () => {
    receiver.handle((_req, res) => {
      res.statusCode = 500;
      res.end("down");
    });
    const uris = [`${receiver.base}/first`, `${second.base}/second`];
    const { project, number } = await singleNumber(uris);

    const res = await inject({ to: number, from: SENDER, body: "fall through" });
    expect(res.status).toBe(200);
    await waitFor(() => second.requests.length === 1, "the second handler");
    expect(receiver.requests).toHaveLength(1);
    const key = await keyOf(database.db, project);
    expectSigned(receiver.requests[0]!, key, uris[0]!);
    expectSigned(second.requests[0]!, key, uris[1]!);
    expect(second.requests[0]!.headers["webhook-id"]).toBe(receiver.requests[0]!.headers["webhook-id"]);
    expect(second.requests[0]!.body).toBe(receiver.requests[0]!.body);
    const [event] = await eventsOf(project);
    expect(event).toMatchObject({ eventType: "INCOMING_MESSAGE", uris });
  });

  it("records the message but queues no webhook when the instance has no message handlers", async () => {
    const { project, number } = await singleNumber([]);
    const res = await inject({ to: number, from: SENDER, body: "nobody listens" });
    expect(res.status).toBe(200);
    expect(await messagesOf(project)).toHaveLength(1);
    expect(await eventsOf(project)).toEqual([]);
  });

  it.each(["STOP", " stop ", "Unsubscribe", "STOPALL", "cancel", "End", "quit\n"])(
    "%j makes the sender a MESSAGE unsubscriber, and the app still gets the message",
    async (body) => {
      const url = `${receiver.base}/optout`;
      const { project, number } = await singleNumber([url]);
      const res = await inject({ to: number, from: SENDER, body });
      expect(res.status).toBe(200);
      const rows = await unsubscribersOf(project);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ phone: SENDER, unsubscribeMethod: "MESSAGE", labels: {} });
      await waitFor(() => receiver.requests.length === 1, "the webhook");
      expect(JSON.parse(receiver.requests[0]!.body).body).toBe(body);

      // Visible through the public API too.
      const listed = await createTestClient(Unsubscribers, database.db, systemClock).listUnsubscribers({
        parent: project,
        phone: SENDER,
      });
      expect(listed.unsubscribers.map((u) => u.unsubscribeMethod)).toEqual([
        Unsubscriber_UnsubscribeMethod.MESSAGE,
      ]);
    },
  );

  it.each(["STOP please", "stopp", "S T O P", "", "UNSUBSCRIBE ME", "fin"])(
    "%j is not an opt-out: no unsubscriber",
    async (body) => {
      const { project, number } = await singleNumber([]);
      expect((await inject({ to: number, from: SENDER, body })).status).toBe(200);
      expect(await unsubscribersOf(project)).toEqual([]);
      expect(await messagesOf(project)).toHaveLength(1);
    },
  );

  it("is idempotent: STOP twice, then concurrently, leaves exactly one unsubscriber", async () => {
    const url = `${receiver.base}/twice`;
    const { project, number } = await singleNumber([url]);
    expect((await inject({ to: number, from: SENDER, body: "STOP" })).status).toBe(200);
    const [first] = await unsubscribersOf(project);
    expect((await inject({ to: number, from: SENDER, body: "stop" })).status).toBe(200);
    const results = await Promise.all(
      ["STOP", "Stop", " STOP", "quit", "END"].map((body) =>
        simulator().injectIncomingMessage({ to: number, from: SENDER, body }),
      ),
    );
    expect(new Set(results.map((m) => m.name)).size).toBe(5);
    const rows = await unsubscribersOf(project);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toEqual(first);
    // Every message was recorded and sent on to the app.
    expect(await messagesOf(project)).toHaveLength(7);
    expect(await eventsOf(project)).toHaveLength(7);
    await waitFor(() => receiver.requests.length === 7, "seven webhooks");
  });

  it("a different sender opting out gets an unsubscriber of its own", async () => {
    const { project, number } = await singleNumber([]);
    await simulator().injectIncomingMessage({ to: number, from: SENDER, body: "STOP" });
    await simulator().injectIncomingMessage({ to: number, from: "+61491570157", body: "STOP" });
    expect((await unsubscribersOf(project)).map((u) => u.phone).sort()).toEqual([SENDER, "+61491570157"]);
  });

  it("leaves an existing unsubscriber of the sender as it is", async () => {
    const { project, number } = await singleNumber([]);
    const unsubs = createTestClient(Unsubscribers, database.db, systemClock);
    const manual = await unsubs.createUnsubscriber({
      parent: project,
      unsubscriber: { phone: SENDER, labels: { source: "support" } },
    });
    await simulator().injectIncomingMessage({ to: number, from: SENDER, body: "STOP" });
    const after = await unsubs.getUnsubscriber({ name: manual.name });
    expect(after).toEqual(manual);
    expect(after.unsubscribeMethod).toBe(Unsubscriber_UnsubscribeMethod.MANUAL);
    expect(await unsubscribersOf(project)).toHaveLength(1);
  });

  it("refuses a number without SMS: FAILED_PRECONDITION NUMBER_NOT_SMS_CAPABLE, nothing recorded", async () => {
    const project = await newProject(database.db);
    const number = await addBlock(c, nextBlock(), 10); // VOICE only
    await c.instances.createPhoneNumberInstance({
      parent: project,
      phoneNumberInstance: {
        phoneNumber: { phoneNumber: number },
        incomingMessageHandlerUris: [`${receiver.base}/voice-only`],
      },
    });
    const before = (await database.db.select().from(messages)).length;
    const e = await expectCode(
      simulator().injectIncomingMessage({ to: number, from: SENDER, body: "STOP" }),
      Code.FailedPrecondition,
    );
    expect(errorReason(e)).toBe("NUMBER_NOT_SMS_CAPABLE");
    const rest = await inject({ to: number, from: SENDER, body: "hi" });
    expect(rest.status).toBe(400);
    expect(rest.json.error).toMatchObject({ status: "FAILED_PRECONDITION" });
    expect(rest.json.error.details[0]).toMatchObject({
      reason: "NUMBER_NOT_SMS_CAPABLE",
      metadata: { phone_number: number, capability: "SMS" },
    });
    expect((await database.db.select().from(messages)).length).toBe(before);
    expect(await unsubscribersOf(project)).toEqual([]);
  });

  it("refuses a number no instance holds: FAILED_PRECONDITION NUMBER_NOT_IN_SERVICE, nothing recorded", async () => {
    const before = (await database.db.select().from(messages)).length;
    const number = await addBlock(c, nextBlock(), 10, SMS_CAPABLE); // in inventory, not provisioned
    const e = await expectCode(
      simulator().injectIncomingMessage({ to: number, from: SENDER, body: "STOP" }),
      Code.FailedPrecondition,
    );
    expect(errorReason(e)).toBe("NUMBER_NOT_IN_SERVICE");
    const rest = await inject({ to: "+61255509999", from: SENDER, body: "hi" });
    expect(rest.status).toBe(400);
    expect(rest.json.error).toMatchObject({ status: "FAILED_PRECONDITION" });
    expect(rest.json.error.details[0]).toMatchObject({ reason: "NUMBER_NOT_IN_SERVICE" });
    expect((await database.db.select().from(messages)).length).toBe(before);
  });

  it("refuses a number whose instance is SUSPENDED, and accepts it again once resumed", async () => {
    const { project, instance, number } = await singleNumber([]);
    await c.admin.suspendPhoneNumberInstance({ name: instance });
    const e = await expectCode(
      simulator().injectIncomingMessage({ to: number, from: SENDER, body: "STOP" }),
      Code.FailedPrecondition,
    );
    expect(errorReason(e)).toBe("NUMBER_NOT_IN_SERVICE");
    expect(await messagesOf(project)).toEqual([]);
    expect(await unsubscribersOf(project)).toEqual([]);
    await c.admin.resumePhoneNumberInstance({ name: instance });
    await simulator().injectIncomingMessage({ to: number, from: SENDER, body: "hi" });
    expect(await messagesOf(project)).toHaveLength(1);
  });

  it("refuses a number whose instance was deleted", async () => {
    const { instance, number } = await singleNumber([]);
    await c.instances.deletePhoneNumberInstance({ name: instance });
    const e = await expectCode(
      simulator().injectIncomingMessage({ to: number, from: SENDER, body: "hi" }),
      Code.FailedPrecondition,
    );
    expect(errorReason(e)).toBe("NUMBER_NOT_IN_SERVICE");
  });

  describe("validation", () => {
    const valid = { to: "+61255501234", from: SENDER, body: "hi" };
    const cases: { name: string; input: Partial<typeof valid>; fields: string[] }[] = [
      { name: "no to", input: { to: "" }, fields: ["to"] },
      { name: "no from", input: { from: "" }, fields: ["from"] },
      { name: "neither", input: { to: "", from: "" }, fields: ["to", "from"] },
      { name: "to without +", input: { to: "61255501234" }, fields: ["to"] },
      { name: "to with spaces", input: { to: "+61 2 5550 1234" }, fields: ["to"] },
      { name: "to outside every numbering plan", input: { to: "+61123" }, fields: ["to"] },
      { name: "from not a number", input: { from: "ACME" }, fields: ["from"] },
      { name: "from too long", input: { from: "+6149157015612345" }, fields: ["from"] },
      { name: "a body of 1601 characters", input: { body: "a".repeat(1601) }, fields: ["body"] },
      {
        name: "a body of 1601 code points (emoji)",
        input: { body: "😀".repeat(1601) },
        fields: ["body"],
      },
      {
        name: "everything wrong",
        input: { to: "x", from: "y", body: "z".repeat(2000) },
        fields: ["to", "from", "body"],
      },
    ];
    it.each(cases)("refuses $name", async ({ input, fields }) => {
      await expectInvalid(simulator().injectIncomingMessage({ ...valid, ...input }), fields);
    });

    it("names the fields over REST too", async () => {
      const res = await inject({ to: "0255501234", from: SENDER, body: "hi" });
      expect(res.status).toBe(400);
      const fields = res.json.error.details
        .filter((d: { "@type": string }) => d["@type"].endsWith("BadRequest"))
        .flatMap((d: { fieldViolations: { field: string }[] }) => d.fieldViolations.map((v) => v.field));
      expect(fields).toEqual(["to"]);
    });

    it("accepts a body of exactly 1600 characters (11 segments)", async () => {
      const { number } = await singleNumber([]);
      const m = await simulator().injectIncomingMessage({ to: number, from: SENDER, body: "a".repeat(1600) });
      expect(m.segmentCount).toBe(11);
      expect(m.encoding).toBe(Message_MessageEncoding.GSM7);
    });
  });

  it("is the operator's only: an API key (even an owner's) and no credential are refused", async () => {
    const { project, number } = await singleNumber([]);
    const key = await newApiKey(database.db, [{ project, roles: ["roles/owner"] }]);
    await expectCode(
      createTestClient(SimulatorAdmin, database.db, systemClock, key.secret).injectIncomingMessage({
        to: number,
        from: SENDER,
        body: "STOP",
      }),
      Code.PermissionDenied,
    );
    expect((await inject({ to: number, from: SENDER, body: "STOP" }, key.secret)).status).toBe(403);
    expect((await inject({ to: number, from: SENDER, body: "STOP" }, null)).status).toBe(401);
    expect(await messagesOf(project)).toEqual([]);
    expect(await unsubscribersOf(project)).toEqual([]);
  });

  describe("Messages.GetMessage and ListMessages", () => {
    it("reads the recorded messages, newest first, page by page; only the project's own", async () => {
      const { project, number } = await singleNumber([]);
      const other = await singleNumber([]);
      const sent: string[] = [];
      for (const body of ["one", "two", "three", "héllo ✓"]) {
        sent.push((await simulator().injectIncomingMessage({ to: number, from: SENDER, body })).name);
      }
      await simulator().injectIncomingMessage({ to: other.number, from: SENDER, body: "elsewhere" });

      const key = await newApiKey(database.db, [{ project, roles: ["roles/viewer"] }]);
      const client = createTestClient(Messages, database.db, systemClock, key.secret);
      const got = await client.getMessage({ name: sent[3]! });
      expect(got).toMatchObject({
        name: sent[3],
        to: number,
        from: SENDER,
        body: "héllo ✓",
        direction: Message_Direction.INCOMING,
        status: Message_Status.RECEIVED,
        encoding: Message_MessageEncoding.UCS2,
        segmentCount: 1,
      });

      const page1 = await client.listMessages({ parent: project, pageSize: 3 });
      const page2 = await client.listMessages({
        parent: project,
        pageSize: 3,
        pageToken: page1.nextPageToken,
      });
      expect(page2.nextPageToken).toBe("");
      const names = [...page1.messages, ...page2.messages].map((m) => m.name);
      // Created in order; newest first (ids break ties of equal create times).
      expect(names.sort()).toEqual([...sent].sort());
      const times = [...page1.messages, ...page2.messages].map(
        (m) => m.createTime!.seconds * 1000n + BigInt(m.createTime!.nanos / 1e6),
      );
      expect([...times].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0))).toEqual(times);

      const elsewhere = `${other.project}/messages/${(await messagesOf(other.project))[0]!.id}`;
      await expectCode(client.getMessage({ name: elsewhere }), Code.PermissionDenied);
      await expectCode(client.getMessage({ name: `${project}/messages/nosuchmessage00` }), Code.NotFound);
      expect(
        (await client.listMessages({ parent: project, filter: "direction = INCOMING AND status = RECEIVED" }))
          .messages.length,
      ).toBe(times.length);
      expect(
        (await client.listMessages({ parent: project, filter: "direction = OUTGOING" })).messages,
      ).toEqual([]);
      await expectInvalid(client.listMessages({ parent: project, filter: "colour = red" }), ["filter"]);
    });

    it("bounds the list by start_time (inclusive) and end_time (exclusive)", async () => {
      const { project, number } = await singleNumber([]);
      const m = await simulator().injectIncomingMessage({ to: number, from: SENDER, body: "x" });
      const client = createTestClient(Messages, database.db, systemClock);
      expect((await client.listMessages({ parent: project, startTime: m.createTime })).messages).toHaveLength(
        1,
      );
      expect((await client.listMessages({ parent: project, endTime: m.createTime })).messages).toHaveLength(
        0,
      );
    });
  });
});
