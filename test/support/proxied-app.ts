/**
 * The app on a loopback port over a scratch PostgreSQL database reached
 * through the fault proxy (test/support/pg-proxy.ts), with one project, and
 * an Unsubscribers client over gRPC: what the tests of a failing database,
 * as callers see it, share. Call inside a describe: it registers the
 * beforeAll that starts it and the afterAll that stops it.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll } from "vitest";
import { Unsubscribers } from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { Projects } from "../../gen/switchboard/admin/v1/projects_pb.js";
import { type App, build } from "../../src/server.js";
import { bearer, TEST_OPERATOR_TOKEN, testConfig } from "./app.js";
import { createScratchDatabase } from "./db.js";
import { type PgProxy, startPgProxy } from "./pg-proxy.js";

export interface ProxiedApp {
  readonly proxy: PgProxy;
  /** The app's http:// base URL. */
  readonly base: string;
  /** The scratch database's own URL (not through the proxy). */
  readonly directUrl: string;
  /** An Unsubscribers client over gRPC with the operator token. */
  grpc(): ReturnType<typeof createClient<typeof Unsubscribers>>;
  /** Headers of an operator's request (fetch). */
  readonly headers: Record<string, string>;
}

export function useProxiedApp(project: string, env: NodeJS.ProcessEnv = {}): ProxiedApp {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | undefined;
  let proxy: PgProxy | undefined;
  let app: App | undefined;
  let base = "";

  beforeAll(async () => {
    scratch = await createScratchDatabase(process.env.TEST_DATABASE_URL!);
    proxy = await startPgProxy(scratch.url);
    // A statement meeting an outage fails within a second (the pool's connect budget: startup-close.test.ts).
    app = await build({
      config: testConfig({ DATABASE_URL: proxy.url, DATABASE_CONNECT_TIMEOUT_MS: "1000", ...env }),
    });
    const address = await app.listen(0, "127.0.0.1");
    base = `http://127.0.0.1:${address.port}`;
    const transport = createConnectTransport({
      baseUrl: base,
      httpVersion: "1.1",
      interceptors: [bearer(TEST_OPERATOR_TOKEN)],
    });
    await createClient(Projects, transport).createProject({ projectId: project });
  }, 60_000);

  afterAll(async () => {
    proxy?.refuse(false);
    await app?.close();
    await proxy?.close();
    await scratch?.drop();
  });

  return {
    get proxy() {
      return proxy!;
    },
    get base() {
      return base;
    },
    get directUrl() {
      return scratch!.url;
    },
    grpc: () =>
      createClient(
        Unsubscribers,
        createGrpcTransport({ baseUrl: base, interceptors: [bearer(TEST_OPERATOR_TOKEN)] }),
      ),
    headers: { authorization: `Bearer ${TEST_OPERATOR_TOKEN}` },
  };
}
