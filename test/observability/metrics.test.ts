/**
 * GET /metrics: Prometheus text behind the operator token; request counters
 * and latency histograms by service, method, transport and code after
 * traffic on every transport; database, webhook and process metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Unsubscribers } from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { enqueueWebhook } from "../../src/events/outbox.js";
import { WebhookWorker } from "../../src/events/worker.js";
import { newApiKey, newProject, TEST_OPERATOR_TOKEN } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { useAppDatabase } from "../transport/helpers.js";
import { type RpcTransportName, rpcClient, startObservedApp } from "./support.js";

/** The value of the sample `name{labels}` (labels in any order), or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have: Record<string, string> = {};
    for (const pair of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) have[pair[1]!] = pair[2]!;
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe("Metrics", () => {
  const database = useAppDatabase();
  let app: Awaited<ReturnType<typeof startObservedApp>>;
  let receiver: Receiver;
  let project: string;
  let key: { name: string; secret: string };

  beforeAll(async () => {
    receiver = await startReceiver();
    app = await startObservedApp(database.db, { ROLE: "api", WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true" });
    project = await newProject(database.db);
    key = await newApiKey(database.db, [{ project, roles: ["roles/owner"] }]);
  });
  afterAll(async () => {
    await app?.close();
    await receiver?.close();
  });

  async function scrape(): Promise<string> {
    const res = await fetch(`${app.baseUrl}/metrics`, {
      headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    return res.text();
  }

  it("refuses a scrape without the operator token", async () => {
    expect((await fetch(`${app.baseUrl}/metrics`)).status).toBe(401);
    const withKey = await fetch(`${app.baseUrl}/metrics`, {
      headers: { authorization: `Bearer ${key.secret}` },
    });
    expect(withKey.status).toBe(401);
  });

  it("counts requests and their latency by service, method, transport and code on every transport", async () => {
    const labels = (transport: string, code: string, method = "ListUnsubscribers") => ({
      service: "enfonica.messaging.v1.Unsubscribers",
      method,
      transport,
      code,
    });
    const before = await scrape();
    const transports: RpcTransportName[] = ["connect", "grpc", "grpc-web"];
    for (const t of transports) {
      const c = rpcClient(Unsubscribers, t, app.baseUrl, { authorization: `Bearer ${key.secret}` });
      try {
        await c.client.listUnsubscribers({ parent: project });
        await c.client.listUnsubscribers({ parent: project });
        await expect(c.client.getUnsubscriber({ name: `${project}/unsubscribers/none` })).rejects.toThrow();
      } finally {
        c.close();
      }
    }
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${app.baseUrl}/v1/${project}/unsubscribers`, {
        headers: { authorization: `Bearer ${key.secret}` },
      });
      expect(res.status).toBe(200);
    }
    await fetch(`${app.baseUrl}/v1/${project}/unsubscribers/none`, {
      headers: { authorization: `Bearer ${key.secret}` },
    });
    // Responses are counted when they close.
    await new Promise((r) => setTimeout(r, 50));
    const after = await scrape();
    const delta = (name: string, l: Record<string, string>) =>
      (sample(after, name, l) ?? 0) - (sample(before, name, l) ?? 0);
    for (const t of [...transports, "rest"]) {
      expect(delta("switchboard_requests_total", labels(t, "OK")), t).toBe(2);
      expect(delta("switchboard_requests_total", labels(t, "NOT_FOUND", "GetUnsubscriber")), t).toBe(1);
      expect(delta("switchboard_request_duration_seconds_count", labels(t, "OK")), t).toBe(2);
      expect(
        sample(after, "switchboard_request_duration_seconds_bucket", { ...labels(t, "OK"), le: "+Inf" }),
      ).toBeGreaterThanOrEqual(2);
    }
    expect(sample(after, "switchboard_requests_in_flight")).toBeGreaterThanOrEqual(1); // the scrape itself
    expect(
      sample(after, "switchboard_db_query_duration_seconds_count", { operation: "select", outcome: "ok" }),
    ).toBeGreaterThan(0);
    // Default process metrics.
    expect(sample(after, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(after).toContain("nodejs_eventloop_lag_seconds");
    // No project ids or resource names in labels.
    expect(after).not.toContain(project.split("/")[1]!);
  });

  it("counts webhook requests and deliveries, the delivery lag and the queue by state", async () => {
    const clock = new TestClock("2026-03-01T10:00:00.000Z");
    const projectId = project.split("/")[1]!;
    receiver.handle((req, res) => {
      res.statusCode = req.path === "/fail" ? 503 : 200;
      res.end();
    });
    const before = await scrape();
    await enqueueWebhook(database.db, {
      projectId,
      eventType: "INCOMING_MESSAGE",
      uris: [`${receiver.base}/fail`, `${receiver.base}/ok`],
      body: "{}",
      now: clock.now(),
    });
    const retried = await enqueueWebhook(database.db, {
      projectId,
      eventType: "RECORDING_READY",
      uris: [`${receiver.base}/fail`],
      body: "{}",
      now: clock.now(),
    });
    const pending = sample(await scrape(), "switchboard_webhook_queue_depth", { state: "PENDING" });
    expect(pending).toBeGreaterThanOrEqual(2);
    clock.advance(1500);
    const worker = new WebhookWorker({
      db: database.db,
      clock,
      config: app.app.config.webhooks,
      log: app.log.logger,
    });
    expect(await worker.runOnce()).toBe(2);
    const after = await scrape();
    const delta = (name: string, l: Record<string, string>) =>
      (sample(after, name, l) ?? 0) - (sample(before, name, l) ?? 0);
    expect(
      delta("switchboard_webhook_requests_total", { event: "INCOMING_MESSAGE", outcome: "http_error" }),
    ).toBe(1);
    expect(
      delta("switchboard_webhook_requests_total", { event: "INCOMING_MESSAGE", outcome: "success" }),
    ).toBe(1);
    expect(
      delta("switchboard_webhook_requests_total", { event: "RECORDING_READY", outcome: "http_error" }),
    ).toBe(1);
    expect(
      delta("switchboard_webhook_deliveries_total", { event: "INCOMING_MESSAGE", outcome: "delivered" }),
    ).toBe(1);
    expect(
      delta("switchboard_webhook_deliveries_total", { event: "RECORDING_READY", outcome: "retry" }),
    ).toBe(1);
    expect(delta("switchboard_webhook_delivery_lag_seconds_count", { event: "INCOMING_MESSAGE" })).toBe(1);
    // Due at enqueue, delivered 1.5 s later on the test clock.
    expect(delta("switchboard_webhook_delivery_lag_seconds_sum", { event: "INCOMING_MESSAGE" })).toBeCloseTo(
      1.5,
      1,
    );
    // One delivered, one waiting for its retry; DELIVERED is not counted.
    expect(sample(after, "switchboard_webhook_queue_depth", { state: "PENDING" })).toBe(pending! - 1);
    expect(sample(after, "switchboard_webhook_queue_depth", { state: "DELIVERED" })).toBeUndefined();
    expect(sample(after, "switchboard_calls_active")).toBe(0);
    // The failed round is logged with the delivery's name and what the destination answered.
    const failed = app.log.lines.find((l) => l.msg === "webhook round failed");
    expect(failed).toMatchObject({
      level: 30,
      delivery: `${project}/webhookDeliveries/${retried}`,
      eventType: "RECORDING_READY",
      round: 1,
      attempts: [{ uri: `${receiver.base}/fail`, status: 503 }],
    });
  });
});
