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
import { Code, ConnectError } from "@connectrpc/connect";
import { expect, it } from "vitest";
import { describePostgres } from "../support/db.js";
import { useProxiedApp } from "../support/proxied-app.js";

const MESSAGE = "the database is unavailable: try again later";
/** Anything of the driver's or the socket's that must not reach a caller. */
const DRIVER = /CONNECTION_|ECONN|postgres|127\.0\.0\.1:\d/i;

describePostgres("the database out of reach", () => {
  const parent = "projects/db-away";
  const app = useProxiedApp("db-away");
  const grpc = () => app.grpc();
  const connectList = () =>
    fetch(`${app.base}/enfonica.messaging.v1.Unsubscribers/ListUnsubscribers`, {
      method: "POST",
      headers: { "content-type": "application/json", ...app.headers },
      body: JSON.stringify({ parent }),
    });
  const restList = () => fetch(`${app.base}/v1/${parent}/unsubscribers`, { headers: app.headers });

  it("is UNAVAILABLE on gRPC, Connect and REST while away, and answers again once back", async () => {
    expect((await connectList()).status).toBe(200);

    app.proxy.refuse(true);
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

    app.proxy.refuse(false);
    expect((await grpc().listUnsubscribers({ parent })).unsubscribers).toEqual([]);
    expect((await connectList()).status).toBe(200);
    expect((await restList()).status).toBe(200);
  });
});
