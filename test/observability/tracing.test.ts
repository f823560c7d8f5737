/**
 * OpenTelemetry tracing with an in-memory exporter: a server span per
 * request on every transport (REST included) continuing an incoming W3C
 * traceparent, database spans as its children, and webhook deliveries as a
 * round span with an attempt span per request whose traceparent the
 * receiver gets.
 */
import { SpanKind } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Unsubscribers } from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { enqueueWebhook } from "../../src/events/outbox.js";
import { WebhookWorker } from "../../src/events/worker.js";
import { createLogger } from "../../src/log.js";
import { loadTracingConfig } from "../../src/observability/tracing.js";
import { newApiKey, newProject } from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { type Receiver, startReceiver } from "../support/receiver.js";
import { useAppDatabase } from "../transport/helpers.js";
import { eventually, type RpcTransportName, rpcClient, startObservedApp } from "./support.js";

const parentOf = (s: ReadableSpan): string | undefined =>
  (s as unknown as { parentSpanContext?: { spanId: string } }).parentSpanContext?.spanId;

describe("Tracing", () => {
  it("is off by default and on with the standard OTEL_* variables", () => {
    expect(loadTracingConfig({}).enabled).toBe(false);
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }).enabled).toBe(true);
    expect(loadTracingConfig({ OTEL_TRACES_EXPORTER: "otlp" }).enabled).toBe(true);
    expect(
      loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" })
        .enabled,
    ).toBe(false);
    expect(
      loadTracingConfig({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c" }).enabled,
    ).toBe(false);
    expect(loadTracingConfig({ OTEL_SERVICE_NAME: "sb-eu" }).serviceName).toBe("sb-eu");
  });

  describe("with an in-memory exporter", () => {
    const database = useAppDatabase();
    const exporter = new InMemorySpanExporter();
    let app: Awaited<ReturnType<typeof startObservedApp>>;
    let receiver: Receiver;
    let project: string;
    let secret: string;

    beforeAll(async () => {
      receiver = await startReceiver();
      app = await startObservedApp(
        database.db,
        { ROLE: "api", WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: "true" },
        { spanExporter: exporter },
      );
      project = await newProject(database.db);
      secret = (await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret;
    });
    afterAll(async () => {
      await app?.close();
      await receiver?.close();
    });

    const traceparent = (n: number) =>
      `00-${"ab".repeat(15)}${String(n).padStart(2, "0")}-${"cd".repeat(8)}-01`;
    const traceIdOf = (tp: string) => tp.split("-")[1]!;

    async function serverSpan(traceId: string): Promise<ReadableSpan> {
      let found: ReadableSpan | undefined;
      await eventually(() => {
        found = exporter
          .getFinishedSpans()
          .find((s) => s.kind === SpanKind.SERVER && s.spanContext().traceId === traceId);
        return found !== undefined;
      });
      return found!;
    }

    function expectDbChildren(server: ReadableSpan): void {
      const children = exporter
        .getFinishedSpans()
        .filter((s) => parentOf(s) === server.spanContext().spanId && s.name.startsWith("db "));
      expect(children.length).toBeGreaterThan(0);
      expect(children[0]!.attributes["db.operation.name"]).toBe("select");
      expect(children[0]!.spanContext().traceId).toBe(server.spanContext().traceId);
    }

    it.each<[RpcTransportName, number]>([
      ["connect", 1],
      ["grpc", 2],
      ["grpc-web", 3],
    ])("makes a server span per request over %s, continuing the caller's trace", async (transport, n) => {
      const tp = traceparent(n);
      const c = rpcClient(Unsubscribers, transport, app.baseUrl, {
        authorization: `Bearer ${secret}`,
        traceparent: tp,
      });
      try {
        await c.client.listUnsubscribers({ parent: project });
      } finally {
        c.close();
      }
      const span = await serverSpan(traceIdOf(tp));
      expect(span.name).toBe("enfonica.messaging.v1.Unsubscribers/ListUnsubscribers");
      expect(parentOf(span)).toBe("cd".repeat(8));
      expect(span.attributes["switchboard.transport"]).toBe(transport);
      expect(span.attributes["switchboard.code"]).toBe("OK");
      expectDbChildren(span);
    });

    it("makes one server span per REST request, with database children", async () => {
      const tp = traceparent(4);
      const res = await fetch(`${app.baseUrl}/v1/${project}/unsubscribers/none`, {
        headers: { authorization: `Bearer ${secret}`, traceparent: tp },
      });
      expect(res.status).toBe(404);
      const span = await serverSpan(traceIdOf(tp));
      expect(span.name).toBe("enfonica.messaging.v1.Unsubscribers/GetUnsubscriber");
      expect(span.attributes["switchboard.transport"]).toBe("rest");
      expect(span.attributes["switchboard.code"]).toBe("NOT_FOUND");
      expect(span.status.code).toBe(2); // ERROR
      const servers = exporter
        .getFinishedSpans()
        .filter((s) => s.kind === SpanKind.SERVER && s.spanContext().traceId === traceIdOf(tp));
      expect(servers).toHaveLength(1);
      expectDbChildren(span);
    });

    it("traces a webhook round and each attempt, sending traceparent", async () => {
      const clock = new TestClock("2026-03-01T10:00:00.000Z");
      receiver.handle((req, res) => {
        res.statusCode = req.path === "/fail" ? 500 : 200;
        res.end();
      });
      const id = await enqueueWebhook(database.db, {
        projectId: project.split("/")[1]!,
        eventType: "INCOMING_MESSAGE",
        uris: [`${receiver.base}/fail`, `${receiver.base}/ok`],
        body: "{}",
        now: clock.now(),
      });
      const worker = new WebhookWorker({
        db: database.db,
        clock,
        config: app.app.config.webhooks,
        log: createLogger("silent"),
      });
      expect(await worker.runOnce()).toBe(1);
      const spans = exporter.getFinishedSpans();
      const round = spans.find(
        (s) => s.name === "webhook delivery INCOMING_MESSAGE" && s.attributes["webhook.id"] === id,
      );
      expect(round).toBeDefined();
      const attempts = spans.filter((s) => parentOf(s) === round!.spanContext().spanId);
      expect(attempts.map((s) => [s.name, s.kind, s.attributes["http.response.status_code"]])).toEqual([
        ["webhook INCOMING_MESSAGE", SpanKind.CLIENT, 500],
        ["webhook INCOMING_MESSAGE", SpanKind.CLIENT, 200],
      ]);
      const sent = receiver.requests.filter((r) => r.headers["webhook-id"] === id);
      expect(sent).toHaveLength(2);
      for (const [i, r] of sent.entries()) {
        const [, traceId, spanId] = String(r.headers.traceparent).split("-");
        expect(traceId).toBe(round!.spanContext().traceId);
        expect(spanId).toBe(attempts[i]!.spanContext().spanId);
      }
    });
  });

  // The SDK and the OTLP exporter are loaded only when tracing starts
  // (tracing.ts): this is the path a deployment with a collector takes.
  describe("with the OTLP HTTP exporter and a real collector", () => {
    const database = useAppDatabase();
    let collector: Receiver;
    let saved: string | undefined;

    beforeAll(async () => {
      collector = await startReceiver();
      saved = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
      // The exporter reads its endpoint from the process's environment.
      process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = `${collector.base}/v1/traces`;
    });
    afterAll(async () => {
      if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
      else process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = saved;
      await collector?.close();
    });

    it("exports the request's spans to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT when the server stops", async () => {
      const app = await startObservedApp(database.db, {
        ROLE: "api",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.base}/v1/traces`,
      });
      const project = await newProject(database.db);
      const secret = (await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret;
      const traceId = "ef".repeat(16);
      try {
        const res = await fetch(`${app.baseUrl}/v1/${project}/unsubscribers`, {
          headers: { authorization: `Bearer ${secret}`, traceparent: `00-${traceId}-${"12".repeat(8)}-01` },
        });
        expect(res.status).toBe(200);
      } finally {
        await app.close(); // flushes the batch
      }
      const posts = collector.requests.filter((r) => r.method === "POST" && r.path === "/v1/traces");
      expect(posts.length).toBeGreaterThan(0);
      const body = posts.map((r) => r.body).join("\n");
      expect(body).toContain(traceId);
      expect(body).toContain("enfonica.messaging.v1.Unsubscribers/ListUnsubscribers");
    });
  });
});
