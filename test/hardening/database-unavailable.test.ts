/**
 * The database out of reach: a request that needs it is UNAVAILABLE on every
 * transport (HTTP 503 on Connect and REST), with a message of ours and
 * nothing of the driver's, and works again once the database is back (the
 * pool reconnects). UNAVAILABLE, not INTERNAL: it is what clients' retry
 * policies retry.
 *
 * Real parts: the service on a loopback port, PostgreSQL behind a TCP proxy
 * that drops every connection while the test says so
 * (test/support/pg-proxy.ts), and real clients (connect-node over gRPC and
 * Connect, fetch for REST). PostgreSQL only.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Unsubscribers } from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { Projects } from "../../gen/switchboard/admin/v1/projects_pb.js";
import { type App, build } from "../../src/server.js";
import { bearer, TEST_OPERATOR_TOKEN, testConfig } from "../support/app.js";
import { createScratchDatabase } from "../support/db.js";
import { type PgProxy, startPgProxy } from "../support/pg-proxy.js";

const MESSAGE = "the database is unavailable: try again later";
/** Anything of the driver's or the socket's that must not reach a caller. */
const DRIVER = /CONNECTION_|ECONN|postgres|127\.0\.0\.1:\d/i;

describe.runIf(process.env.TEST_DATABASE_URL)("the database out of reach", () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let proxy: PgProxy;
  let app: App;
  let base: string;
  const parent = "projects/db-away";

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
    proxy = await startPgProxy(scratch.url);
    app = await build({ config: testConfig({ DATABASE_URL: proxy.url }) });
    const address = await app.listen(0, "127.0.0.1");
    base = `http://127.0.0.1:${address.port}`;
    const transport = createConnectTransport({
      baseUrl: base,
      httpVersion: "1.1",
      interceptors: [bearer(TEST_OPERATOR_TOKEN)],
    });
    await createClient(Projects, transport).createProject({ projectId: "db-away" });
  }, 60_000);

  afterAll(async () => {
    proxy?.refuse(false);
    await app?.close();
    await proxy?.close();
    await scratch?.drop();
  });

  const grpc = () =>
    createClient(
      Unsubscribers,
      createGrpcTransport({ baseUrl: base, interceptors: [bearer(TEST_OPERATOR_TOKEN)] }),
    );
  const connectList = () =>
    fetch(`${base}/enfonica.messaging.v1.Unsubscribers/ListUnsubscribers`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TEST_OPERATOR_TOKEN}` },
      body: JSON.stringify({ parent }),
    });
  const restList = () =>
    fetch(`${base}/v1/${parent}/unsubscribers`, {
      headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` },
    });

  it("is UNAVAILABLE on gRPC, Connect and REST while away, and answers again once back", async () => {
    expect((await connectList()).status).toBe(200);

    proxy.refuse(true);
    const err = await grpc()
      .listUnsubscribers({ parent })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(err?.code).toBe(Code.Unavailable);
    expect(err?.rawMessage).toBe(MESSAGE);

    const connect = await connectList();
    expect(connect.status).toBe(503);
    const connectBody = await connect.text();
    expect(JSON.parse(connectBody)).toMatchObject({ code: "unavailable", message: MESSAGE });
    expect(connectBody).not.toMatch(DRIVER);

    const rest = await restList();
    expect(rest.status).toBe(503);
    const restBody = await rest.text();
    expect(JSON.parse(restBody)).toMatchObject({
      error: { code: 503, message: MESSAGE, status: "UNAVAILABLE" },
    });
    expect(restBody).not.toMatch(DRIVER);

    proxy.refuse(false);
    expect((await grpc().listUnsubscribers({ parent })).unsubscribers).toEqual([]);
    expect((await connectList()).status).toBe(200);
    expect((await restList()).status).toBe(200);
  });
});
