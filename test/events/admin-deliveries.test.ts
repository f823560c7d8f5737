/**
 * The admin list of webhook deliveries over its fixed REST path
 * `GET /admin/v1/projects/{id}/webhookDeliveries`: each delivery with its
 * state, attempts and next attempt time; operator only; keyset pages.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { enqueueWebhook } from "../../src/events/outbox.js";
import { WebhookWorker } from "../../src/events/worker.js";
import { createLogger } from "../../src/log.js";
import { type App, build } from "../../src/server.js";
import { newApiKey, newProject, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { type Receiver, startReceiver } from "../support/receiver.js";

describe.each(testDatabases())("ListWebhookDeliveries over REST on $name", (backend) => {
  const database = useTestDatabase(backend);
  let app: App;
  let base: string;
  let receiver: Receiver;
  const env = { ROLE: "api", WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true", WEBHOOKS_TIMEOUT_MS: "500" };

  beforeAll(async () => {
    receiver = await startReceiver();
    // ROLE=api: no worker of the app's own; the test drives one on its clock.
    app = await build({ config: testConfig(env), db: database.db });
    base = `http://127.0.0.1:${(await app.listen(0, "127.0.0.1")).port}`;
  });
  afterAll(async () => {
    await app?.close();
    await receiver?.close();
  });

  async function get(path: string, token = TEST_OPERATOR_TOKEN) {
    const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
    // biome-ignore lint/suspicious/noExplicitAny: proto3 JSON read field by field
    return { status: res.status, json: (await res.json()) as Record<string, any> };
  }

  it("starts no worker with ROLE=api", () => {
    expect(app.webhooks).toBeUndefined();
  });

  it("lists deliveries newest first, with attempts, status codes, errors and next attempt time", async () => {
    const clock = new TestClock("2026-03-01T10:00:00.000Z");
    const project = await newProject(database.db);
    const projectId = project.split("/")[1]!;
    receiver.handle((req, res) => {
      res.statusCode = req.path === "/fail" ? 503 : 200;
      res.end();
    });
    const failing = await enqueueWebhook(database.db, {
      projectId,
      eventType: "CALL_STATE_UPDATE",
      uris: [`${receiver.base}/fail`, "http://127.0.0.1:1/closed"],
      body: '{"state":"RINGING"}',
      orderingKey: `${project}/calls/c1`,
      now: clock.now(),
    });
    clock.advance(1000);
    const ok = await enqueueWebhook(database.db, {
      projectId,
      eventType: "INCOMING_MESSAGE",
      uris: [`${receiver.base}/ok`],
      body: '{"body":"hi"}',
      now: clock.now(),
    });
    const worker = new WebhookWorker({
      db: database.db,
      clock,
      config: app.config.webhooks,
      log: createLogger("silent"),
    });
    expect(await worker.runOnce()).toBe(2);

    const page1 = await get(`/admin/v1/${project}/webhookDeliveries?pageSize=1`);
    expect(page1.status).toBe(200);
    expect(page1.json.webhookDeliveries).toHaveLength(1);
    const delivered = page1.json.webhookDeliveries[0];
    expect(delivered).toMatchObject({
      name: `${project}/webhookDeliveries/${ok}`,
      webhookId: ok,
      eventType: "INCOMING_MESSAGE",
      uris: [`${receiver.base}/ok`],
      state: "DELIVERED",
      roundCount: 1,
      createTime: "2026-03-01T10:00:01Z",
      completeTime: "2026-03-01T10:00:01Z",
      body: '{"body":"hi"}',
      attempts: [
        {
          round: 1,
          uri: `${receiver.base}/ok`,
          statusCode: 200,
          startTime: "2026-03-01T10:00:01Z",
          finishTime: "2026-03-01T10:00:01Z",
        },
      ],
    });
    expect(delivered.nextAttemptTime).toBeUndefined();
    expect(delivered.attempts[0].duration).toMatch(/^\d+(\.\d+)?s$/);
    expect(page1.json.nextPageToken).not.toBe("");

    const page2 = await get(
      `/admin/v1/${project}/webhookDeliveries?pageSize=1&pageToken=${page1.json.nextPageToken}`,
    );
    expect(page2.json.nextPageToken ?? "").toBe("");
    const pending = page2.json.webhookDeliveries[0];
    expect(pending).toMatchObject({
      webhookId: failing,
      eventType: "CALL_STATE_UPDATE",
      state: "PENDING",
      roundCount: 1,
      orderingKey: `${project}/calls/c1`,
      nextAttemptTime: "2026-03-01T10:00:02Z",
    });
    expect(pending.attempts).toHaveLength(2);
    expect(pending.attempts[0]).toMatchObject({ uri: `${receiver.base}/fail`, statusCode: 503 });
    expect(pending.attempts[1].statusCode ?? 0).toBe(0);
    expect(pending.attempts[1].error).toMatch(/ECONNREFUSED/);
  });

  it("is for the operator only, and NOT_FOUND for an unknown project", async () => {
    const project = await newProject(database.db);
    const key = await newApiKey(database.db, [{ project, roles: ["roles/owner"] }]);
    expect((await get(`/admin/v1/${project}/webhookDeliveries`, key.secret)).status).toBe(403);
    expect((await get(`/admin/v1/${project}/webhookDeliveries`)).json).toEqual({});
    const missing = await get("/admin/v1/projects/no-such-project/webhookDeliveries");
    expect(missing.status).toBe(404);
    expect(missing.json.error.status).toBe("NOT_FOUND");
  });
});
