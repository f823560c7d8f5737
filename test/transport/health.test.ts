/**
 * Health is public: every call here is made without a credential, on
 * purpose (load balancers and orchestrators have none).
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PhoneNumbers } from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import {
  Health,
  type HealthCheckResponse,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";
import { pglite } from "../support/db.js";
import { grpc, loadClients, unary } from "./grpc-js.js";
import { type Running, request, startApp, useAppDatabase } from "./helpers.js";

const PHONE_NUMBERS = "enfonica.numbering.v1beta1.PhoneNumbers";

const database = useAppDatabase();

describe("Health", () => {
  let server: Running;
  beforeAll(async () => {
    server = await startApp(database.db);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("answers without a credential where another service on the same transport wants one", async () => {
    for (const transport of [
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
      createGrpcTransport({ baseUrl: server.baseUrl }),
    ]) {
      const health = createClient(Health, transport);
      expect((await health.check({ service: PHONE_NUMBERS })).status).toBe(ServingStatus.SERVING);
      const err = await createClient(PhoneNumbers, transport)
        .searchPhoneNumbers({ countryCode: "AU" })
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(err?.code).toBe(Code.Unauthenticated);
    }
  });

  it("reports SERVING for the server and every registered service over Connect", async () => {
    const client = createClient(
      Health,
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
    );
    expect((await client.check({ service: "" })).status).toBe(ServingStatus.SERVING);
    expect((await client.check({ service: PHONE_NUMBERS })).status).toBe(ServingStatus.SERVING);
    expect((await client.check({ service: "grpc.health.v1.Health" })).status).toBe(ServingStatus.SERVING);
    const registered = server.app.services.map((s) => s.desc.typeName);
    for (const name of registered) {
      expect((await client.check({ service: name })).status).toBe(ServingStatus.SERVING);
    }
  });

  it("returns NOT_FOUND for an unknown service", async () => {
    const client = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
    const err = await client.check({ service: "no.such.Service" }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.NotFound);
  });

  it("lists every status", async () => {
    const client = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
    const { statuses } = await client.list({});
    const names = Object.keys(statuses);
    expect(names).toContain("");
    expect(names).toContain(PHONE_NUMBERS);
    expect(names).toContain("grpc.health.v1.Health");
    expect(names).toContain("grpc.reflection.v1.ServerReflection");
    expect(names).toContain("grpc.reflection.v1alpha.ServerReflection");
    for (const name of server.app.services.map((s) => s.desc.typeName)) expect(names).toContain(name);
    for (const s of Object.values(statuses)) expect(s.status).toBe(ServingStatus.SERVING);
  });

  it("answers Check and List over @grpc/grpc-js", async () => {
    const { Health: Client } = await loadClients();
    const client = new Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    try {
      const all = await unary(client, "Check", { service: "" });
      expect(all.error).toBeUndefined();
      expect(all.response).toEqual({ status: "SERVING" });
      const one = await unary(client, "Check", { service: PHONE_NUMBERS });
      expect(one.response).toEqual({ status: "SERVING" });
      const unknown = await unary(client, "Check", { service: "no.such.Service" });
      expect(unknown.error?.code).toBe(grpc.status.NOT_FOUND);
      const list = await unary(client, "List", {});
      expect(list.response.statuses[""]).toEqual({ status: "SERVING" });
      expect(list.response.statuses[PHONE_NUMBERS]).toEqual({ status: "SERVING" });
    } finally {
      client.close();
    }
  });

  it("streams the current status on Watch and stays open until the client cancels", async () => {
    const client = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
    const abort = new AbortController();
    const seen: HealthCheckResponse[] = [];
    const watching = (async () => {
      for await (const res of client.watch({ service: PHONE_NUMBERS }, { signal: abort.signal })) {
        seen.push(res);
      }
    })().catch((e: unknown) => ConnectError.from(e));
    await waitFor(() => seen.length === 1);
    await new Promise((r) => setTimeout(r, 200));
    // Still open, nothing more to say.
    expect(seen.map((r) => r.status)).toEqual([ServingStatus.SERVING]);
    abort.abort();
    const outcome = await watching;
    expect(outcome).toBeInstanceOf(ConnectError);
    expect((outcome as ConnectError).code).toBe(Code.Canceled);
  });

  it("answers Watch for an unknown service with SERVICE_UNKNOWN rather than an error", async () => {
    const client = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
    const abort = new AbortController();
    const it = client.watch({ service: "no.such.Service" }, { signal: abort.signal })[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.done).toBe(false);
    expect((first.value as HealthCheckResponse).status).toBe(ServingStatus.SERVICE_UNKNOWN);
    abort.abort();
    await it.return?.();
  });

  it("serves GET /healthz and GET /readyz", async () => {
    const healthz = await fetch(`${server.baseUrl}/healthz`);
    expect(healthz.status).toBe(200);
    expect(healthz.headers.get("content-type")).toBe("application/json");
    expect(await healthz.json()).toEqual({ status: "SERVING" });
    const readyz = await fetch(`${server.baseUrl}/readyz?verbose=1`);
    expect(readyz.status).toBe(200);
    expect(await readyz.json()).toEqual({ status: "SERVING" });
    const head = await request(`${server.baseUrl}/healthz`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.body).toBe("");
  });

  it("answers 405 to other methods on the probes", async () => {
    const res = await request(`${server.baseUrl}/healthz`, { method: "POST", body: "{}" });
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe("GET, HEAD");
  });
});

describe("Health readiness and shutdown", () => {
  it("fails /readyz while the readiness check fails or throws, and keeps /healthz up", async () => {
    let ready: boolean | Error = false;
    const server = await startApp(
      database.db,
      {},
      {
        readiness: async () => {
          if (ready instanceof Error) throw ready;
          return ready;
        },
      },
    );
    try {
      const notReady = await fetch(`${server.baseUrl}/readyz`);
      expect(notReady.status).toBe(503);
      expect(await notReady.json()).toEqual({ status: "NOT_SERVING" });
      expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
      ready = true;
      expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(200);
      ready = new Error("database unreachable");
      expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(503);
    } finally {
      await server.close();
    }
  });

  it("is ready by default while the database answers, and not once it stops", async () => {
    const own = await pglite.open();
    let closed = false;
    const server = await startApp(own.db);
    try {
      expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(200);
      await own.close();
      closed = true;
      expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(503);
      expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
    } finally {
      await server.close();
      if (!closed) await own.close();
    }
  });

  it("tells watchers NOT_SERVING and ends their streams when the server closes", async () => {
    const server = await startApp(database.db);
    const client = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl }));
    const seen: ServingStatus[] = [];
    const watching = (async () => {
      for await (const res of client.watch({ service: "" })) seen.push(res.status);
      return "ended" as const;
    })();
    await waitFor(() => seen.length === 1);
    const started = Date.now();
    await server.close();
    expect(await watching).toBe("ended");
    expect(seen).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
    expect(Date.now() - started).toBeLessThan(3_000); // well under the 5 s grace
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}
