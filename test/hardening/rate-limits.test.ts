/**
 * Rate limits (src/api/rate-limit/) against a real listening server with an
 * injected token-bucket clock (no sleeping, no timed assertions): per
 * project, per API key, and the lower CreateCall / CreateMessage limit trip
 * and recover; REST answers 429 with Retry-After, gRPC, gRPC-Web and
 * Connect RESOURCE_EXHAUSTED with google.rpc.RetryInfo (and a retry-after
 * header); the operator is exempt. The buckets live in memory, so PGlite
 * alone serves; the cap on calls in flight (PostgreSQL and PGlite) is in
 * call-limits.test.ts.
 */
import { type Client, Code, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Messages } from "../../gen/enfonica/messaging/v1/messages_pb.js";
import { Unsubscribers } from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { ErrorInfoSchema, RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import type { MonotonicClock } from "../../src/api/rate-limit/token-bucket.js";
import { type App, build } from "../../src/server.js";
import {
  bearer,
  errorReason,
  expectCode,
  newApiKey,
  newProject,
  TEST_OPERATOR_TOKEN,
  testConfig,
} from "../support/app.js";
import { pglite, useTestDatabase } from "../support/db.js";

class ManualMonotonic implements MonotonicClock {
  ms = 0;
  nowMs(): number {
    return this.ms;
  }
}

describe("rate limits", () => {
  const database = useTestDatabase(pglite);
  const time = new ManualMonotonic();
  let app: App;
  let base: string;

  beforeAll(async () => {
    app = await build({
      db: database.db,
      rateLimitClock: time,
      config: testConfig({
        RATE_LIMIT_PROJECT_PER_SECOND: "1",
        RATE_LIMIT_PROJECT_BURST: "3",
        RATE_LIMIT_API_KEY_PER_SECOND: "2",
        RATE_LIMIT_API_KEY_BURST: "5",
        RATE_LIMIT_CREATE_CALL_PER_SECOND: "0.5",
        RATE_LIMIT_CREATE_CALL_BURST: "1",
      }),
    });
    base = `http://127.0.0.1:${(await app.listen(0, "127.0.0.1")).port}`;
  });

  afterAll(async () => {
    await app?.close();
  });

  const transport = (kind: "connect" | "grpc" | "grpc-web", token: string): Transport => {
    const interceptors = [bearer(token)];
    if (kind === "grpc") return createGrpcTransport({ baseUrl: base, interceptors });
    if (kind === "grpc-web")
      return createGrpcWebTransport({ baseUrl: base, httpVersion: "1.1", interceptors });
    return createConnectTransport({ baseUrl: base, httpVersion: "1.1", interceptors });
  };

  /** A fresh project and an owner key of it (fresh buckets). */
  async function owned(): Promise<{ project: string; secret: string }> {
    const project = await newProject(database.db);
    return { project, secret: (await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret };
  }

  const list = (secret: string, project: string) =>
    fetch(`${base}/v1/${project}/unsubscribers?pageSize=1`, {
      headers: { authorization: `Bearer ${secret}` },
    });

  it("REST: the project's burst, then 429 with Retry-After and RetryInfo; a second later one more", async () => {
    const { project, secret } = await owned();
    for (let i = 0; i < 3; i++) expect((await list(secret, project)).status).toBe(200);
    const refused = await list(secret, project);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    const body = (await refused.json()) as { error: { status: string; details: Record<string, unknown>[] } };
    expect(body.error.status).toBe("RESOURCE_EXHAUSTED");
    expect(body.error.details).toEqual([
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        reason: "RATE_LIMIT_EXCEEDED",
        domain: "switchboard",
        // The request id of observability's access log, as the response header says.
        metadata: { limit: "project", subject: project, requestId: refused.headers.get("x-request-id") },
      },
      { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "1s" },
    ]);
    time.ms += 999;
    expect((await list(secret, project)).status).toBe(429);
    time.ms += 1;
    expect((await list(secret, project)).status).toBe(200);
    expect((await list(secret, project)).status).toBe(429);
  });

  it.each(["connect", "grpc", "grpc-web"] as const)(
    "%s: RESOURCE_EXHAUSTED with RetryInfo and a retry-after header, then recovers",
    async (kind) => {
      const { project, secret } = await owned();
      const client: Client<typeof Unsubscribers> = createClient(Unsubscribers, transport(kind, secret));
      for (let i = 0; i < 3; i++) await client.listUnsubscribers({ parent: project });
      const e = await expectCode(client.listUnsubscribers({ parent: project }), Code.ResourceExhausted);
      expect(errorReason(e)).toBe("RATE_LIMIT_EXCEEDED");
      const retry = e.findDetails(RetryInfoSchema)[0];
      expect(retry?.retryDelay).toMatchObject({ seconds: 1n, nanos: 0 });
      expect(e.metadata.get("retry-after")).toBe("1");
      time.ms += 1000;
      await client.listUnsubscribers({ parent: project });
    },
  );

  it("limits an API key across its projects", async () => {
    const a = await newProject(database.db);
    const b = await newProject(database.db);
    const { secret } = await newApiKey(database.db, [
      { project: a, roles: ["roles/owner"] },
      { project: b, roles: ["roles/owner"] },
    ]);
    for (let i = 0; i < 3; i++) expect((await list(secret, a)).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await list(secret, b)).status).toBe(200);
    const refused = await list(secret, b); // b has tokens left; the key has none
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { error: { details: { metadata?: Record<string, string> }[] } };
    expect(body.error.details[0]?.metadata?.limit).toBe("api_key");
    time.ms += 500; // one key token (2/s)
    expect((await list(secret, b)).status).toBe(200);
  });

  it("refused requests take nothing: the key keeps its tokens while a project of it is limited", async () => {
    const p = await newProject(database.db);
    const q = await newProject(database.db);
    const { secret } = await newApiKey(database.db, [
      { project: p, roles: ["roles/owner"] },
      { project: q, roles: ["roles/owner"] },
    ]);
    for (let i = 0; i < 3; i++) expect((await list(secret, p)).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await list(secret, p)).status).toBe(429);
    // The key (burst 5) gave 3 tokens to p and got the refused ones back: 2 left.
    expect((await list(secret, q)).status).toBe(200);
    expect((await list(secret, q)).status).toBe(200);
    expect((await list(secret, q)).status).toBe(429);
  });

  it("has a lower limit for CreateCall and CreateMessage, per project", async () => {
    const { project, secret } = await owned();
    const messages = createClient(Messages, transport("connect", secret));
    // The first is admitted (and is INVALID_ARGUMENT: no to, from, body), the second is over the limit.
    await expectCode(messages.createMessage({ parent: project, message: {} }), Code.InvalidArgument);
    const e = await expectCode(
      messages.createMessage({ parent: project, message: {} }),
      Code.ResourceExhausted,
    );
    expect(e.findDetails(ErrorInfoSchema)[0]?.metadata).toMatchObject({ limit: "create_call" });
    expect(e.findDetails(RetryInfoSchema)[0]?.retryDelay).toMatchObject({ seconds: 2n, nanos: 0 });
    // Other methods of the project still have their tokens.
    expect((await list(secret, project)).status).toBe(200);
    time.ms += 2000;
    await expectCode(messages.createMessage({ parent: project, message: {} }), Code.InvalidArgument);
  });

  it("never limits the operator", async () => {
    const project = await newProject(database.db);
    const client = createClient(Unsubscribers, transport("grpc", TEST_OPERATOR_TOKEN));
    for (let i = 0; i < 20; i++) await client.listUnsubscribers({ parent: project });
  });
});
