/**
 * Outgoing messages end to end, on both databases: a listening server with
 * the carrier simulator on a ManualScheduler (no sleeping for message time),
 * every unary transport (Connect JSON and binary, gRPC, @grpc/grpc-js,
 * gRPC-Web, REST), status updates and replies delivered by the app's own
 * webhook worker to real HTTP receivers on 127.0.0.1 (signatures checked),
 * and the opt-out link fetched and posted with fetch.
 *
 * Proves: the unsubscriber rule (MARKETING / UNCLASSIFIED refused with
 * RECIPIENT_UNSUBSCRIBED, TRANSACTIONAL delivered), status updates in order
 * (QUEUED, SENDING, SENT, DELIVERED), APPEND_URL opt-out through the link
 * (method URL, idempotent, no side effect on GET, cross-site POST refused),
 * validation naming fields, simulator message outcomes (FAIL with a code,
 * UNDELIVERED, validity period expiry), replies to reply_url, smart
 * encoding, price, list filters and the Idempotency-Key.
 */
import { fromJsonString } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Message,
  Message_MessageClassification,
  Message_MessageEncoding,
  Message_Status,
  Message_UnsubscribeContentBehavior,
  MessageSchema,
  Messages,
} from "../../gen/enfonica/messaging/v1/messages_pb.js";
import {
  Unsubscriber_UnsubscribeMethod,
  Unsubscribers,
} from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import {
  SimulatorAdmin,
  SimulatorRoute_MessageOutcome,
} from "../../gen/switchboard/admin/v1/simulator_pb.js";
import { allAdapters, type TransportAdapter } from "../e2e/transports.js";
import { addBlock, Capability, numberingClients, provision } from "../numbering/support.js";
import { captureLog } from "../observability/support.js";
import {
  createTestClient,
  errorReason,
  expectCode,
  expectInvalid,
  newProject,
  TEST_OPERATOR_TOKEN,
} from "../support/app.js";
import { callHarness, expectSigned, keyOf, sleep } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import type { ReceivedRequest } from "../support/receiver.js";

const TERMINAL = new Set([Message_Status.DELIVERED, Message_Status.FAILED, Message_Status.UNDELIVERED]);

describe.each(testDatabases())("outgoing messages on $name", (backend) => {
  const database = useTestDatabase(backend);
  const captured = captureLog("info");
  const h = callHarness(database, { destinations: "+614915709", log: captured.logger });
  let adapters: TransportAdapter[] = [];
  let recipient = 0;

  beforeAll(async () => {
    adapters = await allAdapters(Number(new URL(h.base).port), [Messages]);
  });
  afterAll(async () => {
    for (const a of adapters) await a.close();
  });

  const messages = () => h.client(Messages);

  /** A fresh recipient without a route (the default route delivers after 1 s). */
  const nextRecipient = () => `+614915708${String(++recipient).padStart(2, "0")}`;

  /** A project with an ACTIVE SMS-capable number (its incoming messages go to the handler receiver). */
  async function sender(): Promise<{ project: string; from: string }> {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, h.scheduler.clock);
    const from = await addBlock(c, h.nextBlock(), 10, { capabilities: [Capability.SMS, Capability.VOICE] });
    await provision(c, project, from);
    return { project, from };
  }

  /** Moves message time forward until the message is in a terminal status. */
  async function runToEnd(name: string, maxSeconds = 120, step = 0.5): Promise<Message> {
    for (let t = 0; t < maxSeconds / step; t++) {
      const m = await messages().getMessage({ name });
      if (TERMINAL.has(m.status)) return m;
      await h.scheduler.advance(step);
      await sleep(1);
    }
    throw new Error(`message ${name} did not end within ${maxSeconds} s`);
  }

  /** Waits (real time) for `n` status updates of `name`; checks their signatures; returns their statuses. */
  async function statusUpdates(name: string, n: number, key: Buffer): Promise<Message[]> {
    const of = () =>
      h.states.requests.filter(
        (r) => fromJsonString(MessageSchema, r.body, { ignoreUnknownFields: true }).name === name,
      );
    for (let i = 0; i < 500 && of().length < n; i++) await sleep(10);
    await sleep(50);
    const got = of();
    expect(got).toHaveLength(n);
    return got.map((r: ReceivedRequest) => {
      expectSigned(r, key, `${h.states.base}/status`, "MESSAGE_STATUS_UPDATE");
      return fromJsonString(MessageSchema, r.body);
    });
  }

  it("refuses MARKETING and UNCLASSIFIED messages to an unsubscriber and delivers TRANSACTIONAL ones, on every transport, with status updates in order", async () => {
    const { project, from } = await sender();
    const to = nextRecipient();
    await createTestClient(Unsubscribers, database.db, h.scheduler.clock).createUnsubscriber({
      parent: project,
      unsubscriber: { phone: to },
    });
    const key = await keyOf(database.db, project);
    const sent: string[] = [];
    for (const adapter of adapters) {
      for (const classification of ["MARKETING", "UNCLASSIFIED", undefined]) {
        const refused = await adapter.call(
          Messages,
          "CreateMessage",
          {
            parent: project,
            message: { to, from, body: "50% off today", ...(classification ? { classification } : {}) },
          },
          TEST_OPERATOR_TOKEN,
        );
        expect(refused.ok, `${adapter.name} ${classification}`).toBe(false);
        if (refused.ok) continue;
        expect(refused.code, adapter.name).toBe("FAILED_PRECONDITION");
        expect(refused.reason, adapter.name).toBe("RECIPIENT_UNSUBSCRIBED");
        expect(refused.metadata.to).toBe(to);
      }
      const created = await adapter.call(
        Messages,
        "CreateMessage",
        {
          parent: project,
          message: {
            to,
            from,
            body: `Your code is 123456 (${adapter.name})`,
            classification: "TRANSACTIONAL",
            statusUpdateUrl: `${h.states.base}/status`,
          },
        },
        TEST_OPERATOR_TOKEN,
      );
      expect(created.ok, adapter.name).toBe(true);
      if (!created.ok) continue;
      const json = created.json as Record<string, unknown>;
      expect(json.status, adapter.name).toBe("QUEUED");
      expect(json.direction).toBe("OUTGOING");
      expect(json.classification).toBe("TRANSACTIONAL");
      sent.push(String(json.name));
    }
    expect(sent).toHaveLength(adapters.length);
    // Nothing was recorded for the refused ones.
    const listed = await messages().listMessages({ parent: project, pageSize: 100 });
    expect(listed.messages.map((m) => m.name).sort()).toEqual([...sent].sort());

    for (const name of sent) {
      const done = await runToEnd(name);
      expect(done.status).toBe(Message_Status.DELIVERED);
      expect(done.sendTime).toBeDefined();
      expect(done.deliverTime).toBeDefined();
      expect(done.createIdentity).toBe("operator");
      const updates = await statusUpdates(name, 4, key);
      expect(updates.map((u) => Message_Status[u.status])).toEqual([
        "QUEUED",
        "SENDING",
        "SENT",
        "DELIVERED",
      ]);
    }
    // Read back on every transport: Get, and List with a filter.
    for (const adapter of adapters) {
      const got = await adapter.call(Messages, "GetMessage", { name: sent[0]! }, TEST_OPERATOR_TOKEN);
      expect(got.ok && (got.json as Record<string, unknown>).status, adapter.name).toBe("DELIVERED");
      const listed = await adapter.call(
        Messages,
        "ListMessages",
        { parent: project, filter: "status = DELIVERED AND classification = TRANSACTIONAL", pageSize: 100 },
        TEST_OPERATOR_TOKEN,
      );
      expect(listed.ok, adapter.name).toBe(true);
      if (!listed.ok) continue;
      const names = ((listed.json as { messages?: { name: string }[] }).messages ?? []).map((m) => m.name);
      expect(names.sort(), adapter.name).toEqual([...sent].sort());
      const bad = await adapter.call(
        Messages,
        "ListMessages",
        { parent: project, filter: "status = LOST" },
        TEST_OPERATOR_TOKEN,
      );
      expect(!bad.ok && bad.fieldViolations, adapter.name).toEqual(["filter"]);
    }
  });

  it("opts a recipient out through the APPEND_URL link: a confirm page, a POST, then unsubscriber with method URL", async () => {
    const { project, from } = await sender();
    const to = nextRecipient();
    const created = await messages().createMessage({
      parent: project,
      message: {
        to,
        from,
        body: "Spring sale: 20% off",
        classification: Message_MessageClassification.MARKETING,
        unsubscribeContentBehavior: Message_UnsubscribeContentBehavior.APPEND_URL,
      },
    });
    const match = /^Spring sale: 20% off\nOpt out: (http:\/\/127\.0\.0\.1:\d+\/u\/[A-Za-z0-9_-]{22})$/.exec(
      created.body,
    );
    expect(match, created.body).not.toBeNull();
    const link = match![1]!;
    expect(link.startsWith(h.base)).toBe(true);
    expect(created.unsubscribeContentBehavior).toBe(Message_UnsubscribeContentBehavior.APPEND_URL);

    const unsubscribers = createTestClient(Unsubscribers, database.db, h.scheduler.clock);
    const mine = async () =>
      (await unsubscribers.listUnsubscribers({ parent: project, phone: to })).unsubscribers;

    // The page: a form, no side effect.
    const page = await fetch(link);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.headers.get("cache-control")).toBe("no-store");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    const html = await page.text();
    expect(html).toContain('<form method="post">');
    expect(html).toContain(from);
    expect(html).not.toContain(to);
    expect(await mine()).toHaveLength(0);

    // A POST from another site is refused and changes nothing.
    const forged = await fetch(link, { method: "POST", headers: { origin: "https://evil.example" } });
    expect(forged.status).toBe(403);
    expect(await mine()).toHaveLength(0);

    // Unknown or malformed tokens: 404, nothing changes.
    expect((await fetch(`${h.base}/u/AAAAAAAAAAAAAAAAAAAAAA`, { method: "POST" })).status).toBe(404);
    expect((await fetch(`${h.base}/u/AAAAAAAAAAAAAAAAAAAAAA`)).status).toBe(404);
    expect((await fetch(link, { method: "DELETE" })).status).toBe(405);

    // The form's POST (same origin), twice: one unsubscriber, method URL.
    for (let i = 0; i < 2; i++) {
      const posted = await fetch(link, {
        method: "POST",
        headers: { origin: h.base, "content-type": "application/x-www-form-urlencoded" },
        body: "",
      });
      expect(posted.status).toBe(200);
      expect(await posted.text()).toContain("will no longer receive marketing messages");
    }
    // The access log shows the route, never the token.
    const token = link.split("/u/")[1]!;
    const optOutLines = captured.lines.filter((l) => l.path === "/u/{token}");
    expect(optOutLines.length).toBeGreaterThanOrEqual(4);
    expect(JSON.stringify(captured.lines)).not.toContain(token);
    const after = await mine();
    expect(after).toHaveLength(1);
    expect(after[0]!.unsubscribeMethod).toBe(Unsubscriber_UnsubscribeMethod.URL);

    // The next marketing message is refused; a transactional one still goes.
    const err = await expectCode(
      messages().createMessage({
        parent: project,
        message: { to, from, body: "Last day!", classification: Message_MessageClassification.MARKETING },
      }),
      Code.FailedPrecondition,
    );
    expect(errorReason(err)).toBe("RECIPIENT_UNSUBSCRIBED");
    const receipt = await messages().createMessage({
      parent: project,
      message: { to, from, body: "Receipt #42", classification: Message_MessageClassification.TRANSACTIONAL },
    });
    expect((await runToEnd(receipt.name)).status).toBe(Message_Status.DELIVERED);
  });

  it("refuses invalid messages with INVALID_ARGUMENT naming every field, on every transport, recording nothing", async () => {
    const { project } = await sender();
    const other = await sender();
    for (const adapter of adapters) {
      const bad = await adapter.call(
        Messages,
        "CreateMessage",
        {
          parent: project,
          message: {
            to: "12345",
            from: "ACME",
            body: "",
            statusUpdateUrl: "ftp://example.com/x",
            replyUrl: "not a url",
            validityPeriodSeconds: 36001,
          },
        },
        TEST_OPERATOR_TOKEN,
      );
      expect(bad.ok).toBe(false);
      if (bad.ok) continue;
      expect(bad.code, adapter.name).toBe("INVALID_ARGUMENT");
      expect([...bad.fieldViolations].sort(), adapter.name).toEqual(
        [
          "message.body",
          "message.from",
          "message.reply_url",
          "message.status_update_url",
          "message.to",
          "message.validity_period_seconds",
        ].sort(),
      );
      // A number of another project.
      const foreign = await adapter.call(
        Messages,
        "CreateMessage",
        { parent: project, message: { to: "+61491570156", from: other.from, body: "hi" } },
        TEST_OPERATOR_TOKEN,
      );
      expect(foreign.ok).toBe(false);
      if (!foreign.ok) expect(foreign.fieldViolations, adapter.name).toEqual(["message.from"]);
    }
    await expectInvalid(
      messages().createMessage({
        parent: project,
        message: {
          to: "+61491570156",
          from: other.from,
          body: "x".repeat(1601),
          classification: 7 as Message_MessageClassification,
          unsubscribeContentBehavior: 9 as Message_UnsubscribeContentBehavior,
          labels: { "": "x" },
        },
      }),
      [
        "message.from",
        "message.body",
        "message.classification",
        "message.unsubscribe_content_behavior",
        'message.labels[""]',
      ],
    );
    expect((await messages().listMessages({ parent: project })).messages).toHaveLength(0);
  });

  it("refuses a number without the SMS capability with NUMBER_NOT_SMS_CAPABLE", async () => {
    const project = await newProject(database.db);
    const c = numberingClients(database.db, h.scheduler.clock);
    const from = await addBlock(c, h.nextBlock(), 10, { capabilities: [Capability.VOICE] });
    await provision(c, project, from);
    const err = await expectCode(
      messages().createMessage({ parent: project, message: { to: nextRecipient(), from, body: "hi" } }),
      Code.FailedPrecondition,
    );
    expect(errorReason(err)).toBe("NUMBER_NOT_SMS_CAPABLE");
  });

  it("fails a message as the simulator route says, with its error code, and posts QUEUED, SENDING, FAILED", async () => {
    const { project, from } = await sender();
    const to = await h.route({
      messageOutcome: SimulatorRoute_MessageOutcome.MESSAGE_FAIL,
      messageErrorCode: "30007",
      messageErrorMessage: "Carrier filtered the message",
    });
    const m = await messages().createMessage({
      parent: project,
      message: { to, from, body: "hello", statusUpdateUrl: `${h.states.base}/status` },
    });
    const done = await runToEnd(m.name);
    expect(done.status).toBe(Message_Status.FAILED);
    expect(done.errorCode).toBe("30007");
    expect(done.errorMessage).toBe("Carrier filtered the message");
    expect(done.deliverTime).toBeUndefined();
    const updates = await statusUpdates(m.name, 3, await keyOf(database.db, project));
    expect(updates.map((u) => Message_Status[u.status])).toEqual(["QUEUED", "SENDING", "FAILED"]);
    expect(updates[2]!.errorCode).toBe("30007");
  });

  it("ends UNDELIVERED as the route says, or when the validity period runs out before delivery", async () => {
    const { project, from } = await sender();
    const unreachable = await h.route({
      messageOutcome: SimulatorRoute_MessageOutcome.MESSAGE_UNDELIVERED,
      messageDeliverSeconds: 5,
    });
    const slow = await h.route({ messageDeliverSeconds: 600 });
    const a = await messages().createMessage({
      parent: project,
      message: { to: unreachable, from, body: "a" },
    });
    const b = await messages().createMessage({
      parent: project,
      message: { to: slow, from, body: "b", validityPeriodSeconds: 60 },
    });
    const c = await messages().createMessage({ parent: project, message: { to: slow, from, body: "c" } });
    const doneA = await runToEnd(a.name);
    expect(doneA.status).toBe(Message_Status.UNDELIVERED);
    expect(doneA.errorCode).toBe("UNREACHABLE");
    expect(doneA.sendTime).toBeDefined();
    const doneB = await runToEnd(b.name, 120, 5);
    expect(doneB.status).toBe(Message_Status.UNDELIVERED);
    expect(doneB.errorCode).toBe("VALIDITY_PERIOD_EXPIRED");
    // Without a validity period the same route delivers after its 600 s.
    const doneC = await runToEnd(c.name, 700, 50);
    expect(doneC.status).toBe(Message_Status.DELIVERED);
    expect((await messages().getMessage({ name: b.name })).status).toBe(Message_Status.UNDELIVERED);
  });

  it("posts replies from the recipient to the message's reply_url", async () => {
    const { project, from } = await sender();
    const to = nextRecipient();
    const m = await messages().createMessage({
      parent: project,
      message: { to, from, body: "Reply YES to confirm", replyUrl: `${h.handler.base}/reply` },
    });
    await runToEnd(m.name);
    const reply = await createTestClient(
      SimulatorAdmin,
      database.db,
      h.scheduler.clock,
    ).injectIncomingMessage({
      to: from,
      from: to,
      body: "YES",
    });
    for (let i = 0; i < 500 && h.handler.requests.length === 0; i++) await sleep(10);
    expect(h.handler.requests).toHaveLength(1);
    const req = h.handler.requests[0]!;
    expect(req.path).toBe("/reply");
    expectSigned(req, await keyOf(database.db, project), `${h.handler.base}/reply`, "INCOMING_MESSAGE");
    const body = fromJsonString(MessageSchema, req.body);
    expect(body.name).toBe(reply.name);
    expect(body.body).toBe("YES");
  });

  it("replaces look-alikes with smart_encoding, counts segments and prices them", async () => {
    const { project, from } = await sender();
    const text = "“Hello” – it’s\u00a0done…";
    const smart = await messages().createMessage({
      parent: project,
      message: { to: nextRecipient(), from, body: text, smartEncoding: true },
    });
    expect(smart.body).toBe('"Hello" - it\'s done...');
    expect(smart.encoding).toBe(Message_MessageEncoding.GSM7);
    expect(smart.segmentCount).toBe(1);
    expect(smart.smartEncoding).toBe(true);
    expect(smart.price).toMatchObject({ currencyCode: "AUD", units: 0n, nanos: 50_000_000 });

    const plain = await messages().createMessage({
      parent: project,
      message: { to: nextRecipient(), from, body: text.repeat(5) },
    });
    expect(plain.body).toBe(text.repeat(5));
    expect(plain.encoding).toBe(Message_MessageEncoding.UCS2);
    expect(plain.segmentCount).toBe(2);
    expect(plain.price).toMatchObject({ currencyCode: "AUD", units: 0n, nanos: 100_000_000 });
  });

  it("lists with the filter and time range, and refuses a bad filter naming it", async () => {
    const { project, from } = await sender();
    const first = await messages().createMessage({
      parent: project,
      message: { to: nextRecipient(), from, body: "1" },
    });
    await runToEnd(first.name);
    const second = await messages().createMessage({
      parent: project,
      message: {
        to: nextRecipient(),
        from,
        body: "2",
        classification: Message_MessageClassification.MARKETING,
      },
    });
    const names = async (filter: string) =>
      (await messages().listMessages({ parent: project, filter })).messages.map((m) => m.name);
    expect(await names("status = DELIVERED")).toEqual([first.name]);
    expect(await names("classification = MARKETING")).toEqual([second.name]);
    expect(await names(`direction = OUTGOING AND to = "${second.to}"`)).toEqual([second.name]);
    expect(await names("status = QUEUED OR status = DELIVERED")).toEqual([second.name, first.name]);
    const range = await messages().listMessages({ parent: project, startTime: second.createTime });
    expect(range.messages.map((m) => m.name)).toEqual([second.name]);
    await expectInvalid(messages().listMessages({ parent: project, filter: "colour = red" }), ["filter"]);
    await expectInvalid(messages().listMessages({ parent: project, filter: "status = LOST" }), ["filter"]);
  });

  it("answers a retry with the same Idempotency-Key with the same message, sending it once", async () => {
    const { project, from } = await sender();
    const to = nextRecipient();
    const send = () =>
      fetch(`${h.base}/v1/${project}/messages`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${TEST_OPERATOR_TOKEN}`,
          "content-type": "application/json",
          "idempotency-key": `msg-${to}`,
        },
        body: JSON.stringify({ to, from, body: "once" }),
      });
    const a = await send();
    const b = await send();
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    const nameA = ((await a.json()) as { name: string }).name;
    const nameB = ((await b.json()) as { name: string }).name;
    expect(nameB).toBe(nameA);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect((await messages().listMessages({ parent: project })).messages).toHaveLength(1);
  });
});
