/**
 * The project's webhook inspector (switchboard.webhooks.v1.WebhookDeliveries):
 * deliveries and call-control exchanges read by the project's own keys,
 * filtered, and FAILED deliveries redelivered; a refused private
 * destination recorded with its reason.
 */
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { WebhookDelivery_State } from "../../gen/switchboard/admin/v1/webhooks_pb.js";
import { WebhookDeliveries } from "../../gen/switchboard/webhooks/v1/webhook_deliveries_pb.js";
import { webhookEvents } from "../../src/db/schema/index.js";
import { enqueueWebhook } from "../../src/events/outbox.js";
import { bearer, errorReason, expectCode, expectInvalid, newApiKey, newProject } from "../support/app.js";
import { callHarness, sleep, xml } from "../support/calls.js";
import { testDatabases, useTestDatabase } from "../support/db.js";

function inspector(base: string, secret: string) {
  return createClient(
    WebhookDeliveries,
    createConnectTransport({ baseUrl: base, httpVersion: "1.1", interceptors: [bearer(secret)] }),
  );
}

describe.each(testDatabases())("Webhook inspector on $name", (backend) => {
  const database = useTestDatabase(backend);
  const harness = callHarness(database);
  const { owner, route, serve, runToEnd, createCall, handler } = harness;

  async function keys(project: string) {
    const viewer = await newApiKey(database.db, [{ project, roles: ["roles/viewer"] }]);
    const ownerKey = await newApiKey(database.db, [{ project, roles: ["roles/owner"] }]);
    return {
      viewer: inspector(harness.base, viewer.secret),
      owner: inspector(harness.base, ownerKey.secret),
    };
  }

  it("records a call-control exchange: the CallRequest, status, duration and the markup received", async () => {
    const { project, from } = await owner();
    const to = await route({ talkSeconds: 5 });
    serve({ "/start": xml("<Say>Hello from the inspector</Say>") });
    const created = await createCall(project, from, to, "/start");
    await runToEnd(created.name);
    const { viewer } = await keys(project);

    const list = await viewer.listWebhookDeliveries({
      parent: project,
      filter: `event = CALL AND call = "${created.name}"`,
    });
    expect(list.webhookDeliveries).toHaveLength(1);
    const exchange = list.webhookDeliveries[0]!;
    expect(exchange.eventType).toBe("CALL");
    expect(exchange.state).toBe(WebhookDelivery_State.DELIVERED);
    expect(exchange.call).toBe(created.name);
    expect(JSON.parse(exchange.body).call.name).toBe(created.name);
    expect(exchange.attempts).toHaveLength(1);
    expect(exchange.attempts[0]).toMatchObject({ uri: `${handler.base}/start`, statusCode: 200, error: "" });
    expect(exchange.attempts[0]!.responseBody).toContain("<Say>Hello from the inspector</Say>");
    expect(exchange.attempts[0]!.duration).toBeDefined();
    // The id the handler saw as webhook-id is the delivery's.
    const sent = handler.requests.find((r) => r.path === "/start");
    expect(sent?.headers["webhook-id"]).toBe(exchange.webhookId);

    const got = await viewer.getWebhookDelivery({ name: exchange.name });
    expect(got.webhookId).toBe(exchange.webhookId);

    // The call's state updates are found by the call too.
    const updates = await viewer.listWebhookDeliveries({
      parent: project,
      filter: `event = CALL_STATE_UPDATE AND call = "${created.name}"`,
    });
    expect(updates.webhookDeliveries.length).toBeGreaterThan(0);
    expect(updates.webhookDeliveries.every((d) => d.call === created.name)).toBe(true);

    // A call-control exchange is never redelivered.
    const { owner: ownerClient } = await keys(project);
    const e = await expectCode(
      ownerClient.redeliverWebhookDelivery({ name: exchange.name }),
      Code.FailedPrecondition,
    );
    expect(errorReason(e)).toBe("CALL_CONTROL_NOT_REDELIVERABLE");
  });

  it("filters by event, state, host and time, and refuses a bad filter", async () => {
    const project = await newProject(database.db);
    const projectId = project.split("/")[1]!;
    const now = new Date();
    await enqueueWebhook(database.db, {
      projectId,
      eventType: "INCOMING_MESSAGE",
      uris: ["https://hooks.example.com/in"],
      body: "{}",
      now: new Date(now.getTime() + 3600_000),
    });
    await enqueueWebhook(database.db, {
      projectId,
      eventType: "RECORDING_READY",
      uris: ["https://other.example.net:8443/r", "https://HOOKS.example.com/fallback"],
      body: "{}",
      now: new Date(now.getTime() + 3600_000),
    });
    const { viewer } = await keys(project);
    const count = async (filter: string) =>
      (await viewer.listWebhookDeliveries({ parent: project, filter })).webhookDeliveries.length;
    expect(await count("")).toBe(2);
    expect(await count("event = INCOMING_MESSAGE")).toBe(1);
    expect(await count("state = PENDING")).toBe(2);
    expect(await count("state = FAILED")).toBe(0);
    expect(await count('host = "hooks.example.com"')).toBe(2);
    expect(await count("host = other.example.net")).toBe(1);
    expect(await count("host != other.example.net")).toBe(1);
    expect(await count(`create_time > "${now.toISOString()}"`)).toBe(2);
    expect(await count(`create_time < "${now.toISOString()}"`)).toBe(0);
    expect(await count("NOT event = CALL AND (state = PENDING OR state = FAILED)")).toBe(2);
    await expectInvalid(viewer.listWebhookDeliveries({ parent: project, filter: "event = NOPE" }), [
      "filter",
    ]);
    await expectInvalid(viewer.listWebhookDeliveries({ parent: project, filter: "uri = x" }), ["filter"]);
    // A page token is bound to its filter.
    const page = await viewer.listWebhookDeliveries({
      parent: project,
      pageSize: 1,
      filter: "state = PENDING",
    });
    expect(page.nextPageToken).not.toBe("");
    await expectCode(
      viewer.listWebhookDeliveries({
        parent: project,
        pageSize: 1,
        pageToken: page.nextPageToken,
        filter: "",
      }),
      Code.InvalidArgument,
    );
  });

  it("shows a key its own projects only", async () => {
    const mine = await newProject(database.db);
    const theirs = await newProject(database.db);
    const theirId = theirs.split("/")[1]!;
    const id = await enqueueWebhook(database.db, {
      projectId: theirId,
      eventType: "INCOMING_MESSAGE",
      uris: ["https://hooks.example.com/in"],
      body: "{}",
      now: new Date(),
    });
    const { viewer, owner: ownerClient } = await keys(mine);
    await expectCode(viewer.listWebhookDeliveries({ parent: theirs }), Code.PermissionDenied);
    await expectCode(
      viewer.getWebhookDelivery({ name: `${theirs}/webhookDeliveries/${id}` }),
      Code.PermissionDenied,
    );
    await expectCode(
      ownerClient.redeliverWebhookDelivery({ name: `${theirs}/webhookDeliveries/${id}` }),
      Code.PermissionDenied,
    );
    // Their delivery under my project's name is not found.
    await expectCode(viewer.getWebhookDelivery({ name: `${mine}/webhookDeliveries/${id}` }), Code.NotFound);
    expect((await viewer.listWebhookDeliveries({ parent: mine })).webhookDeliveries).toHaveLength(0);
  });

  it("redelivers a FAILED delivery (owner, not viewer) and refuses other states", async () => {
    const project = await newProject(database.db);
    const projectId = project.split("/")[1]!;
    handler.handle((_req, res) => res.end("ok"));
    const id = await enqueueWebhook(database.db, {
      projectId,
      eventType: "INCOMING_MESSAGE",
      uris: [`${handler.base}/redelivered`],
      body: '{"body":"again"}',
      now: new Date(Date.now() + 86_400_000), // not due: the test fails it by hand
    });
    await database.db
      .update(webhookEvents)
      .set({ state: "FAILED", attemptCount: 9, nextAttemptTime: null, completeTime: new Date() })
      .where(eq(webhookEvents.id, id));
    const name = `${project}/webhookDeliveries/${id}`;
    const { viewer, owner: ownerClient } = await keys(project);
    await expectCode(viewer.redeliverWebhookDelivery({ name }), Code.PermissionDenied);
    const redelivered = await ownerClient.redeliverWebhookDelivery({ name });
    expect(redelivered.state).toBe(WebhookDelivery_State.PENDING);
    // The app's worker makes the round (it polls every 20 ms).
    let state = redelivered.state;
    for (let i = 0; i < 300 && state === WebhookDelivery_State.PENDING; i++) {
      await sleep(20);
      state = (await viewer.getWebhookDelivery({ name })).state;
    }
    expect(state).toBe(WebhookDelivery_State.DELIVERED);
    const after = await viewer.getWebhookDelivery({ name });
    expect(after.attempts.at(-1)).toMatchObject({ round: 10, statusCode: 200 });
    expect(handler.requests.some((r) => r.path === "/redelivered" && r.headers["webhook-id"] === id)).toBe(
      true,
    );
    const e = await expectCode(ownerClient.redeliverWebhookDelivery({ name }), Code.FailedPrecondition);
    expect(errorReason(e)).toBe("DELIVERY_NOT_FAILED");
  });
});

describe.each(testDatabases())("Webhook inspector with private destinations refused on $name", (backend) => {
  const database = useTestDatabase(backend);
  const harness = callHarness(database, { env: { WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "false" } });
  const { owner, route, runToEnd, createCall, handler } = harness;

  it("records why the handler fetch failed: a refused private destination", async () => {
    const { project, from } = await owner();
    const to = await route({ talkSeconds: 5 });
    const created = await createCall(project, from, to, "/start");
    const ended = await runToEnd(created.name);
    expect(ended.errorCode).toBe("HANDLER_UNAVAILABLE");
    const key = await newApiKey(database.db, [{ project, roles: ["roles/viewer"] }]);
    const list = await inspector(harness.base, key.secret).listWebhookDeliveries({
      parent: project,
      filter: `event = CALL AND state = FAILED AND call = "${created.name}"`,
    });
    expect(list.webhookDeliveries).toHaveLength(1);
    const attempt = list.webhookDeliveries[0]!.attempts[0]!;
    expect(attempt.uri).toBe(`${handler.base}/start`);
    expect(attempt.statusCode).toBe(0);
    expect(attempt.error).toContain("private, loopback");
    expect(attempt.error).toContain("WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS");
    expect(handler.requests).toHaveLength(0);
  });
});
