/**
 * The proof with an independent client: google-auth-library's JWT client,
 * given a key file the service issued, gets an access token from the
 * service's token endpoint and calls a method over gRPC (TLS, @grpc/grpc-js)
 * and over REST — on each database.
 *
 * Like the official SDKs, the library hard-codes its token URL
 * (https://oauth2.googleapis.com/token, also its assertions' `aud`). A
 * deployment answers it with DNS and a certificate the client trusts; here
 * the server has OAUTH_TOKEN_URL set to that URL and a certificate for that
 * name from a CA made at test time, and the client's HTTPS agent plays DNS,
 * connecting every name to the test server (TLS still checks the name).
 * Over gRPC the token is attached by call credentials, which grpc-js sends
 * only on a TLS channel, as google-gax does.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import * as https from "node:https";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as tls from "node:tls";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { JWT } from "google-auth-library";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Projects } from "../../gen/switchboard/admin/v1/projects_pb.js";
import { ServiceAccounts } from "../../gen/switchboard/admin/v1/service_accounts_pb.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import { makeTestPki } from "../support/tls-ca.js";
import { asOperator, protoDir, type Running, startApp } from "../transport/helpers.js";

const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token";
const SCOPE = "https://messaging.api.example.com/enfonica.messaging.v1.Unsubscribers";

/** An HTTPS agent that connects every host name to the test server: DNS, as far as the client can tell. */
class TestDnsAgent extends https.Agent {
  constructor(
    private readonly port: number,
    options: https.AgentOptions,
  ) {
    super(options);
  }

  override createConnection(options: tls.ConnectionOptions): Socket {
    const servername = options.servername ?? options.host ?? undefined;
    return tls.connect({
      ...options,
      host: "127.0.0.1",
      port: this.port,
      ...(servername ? { servername } : {}),
    });
  }
}

// biome-ignore lint/suspicious/noExplicitAny: proto-loader clients are untyped
type AnyClient = grpc.Client & Record<string, any>;

describe.each(testDatabases())("google-auth-library's JWT client on $name", (backend) => {
  const database = useTestDatabase(backend);
  let dir: string;
  let ca: string;
  let server: Running;
  let agent: TestDnsAgent;
  let project: string;
  let account: string;
  // biome-ignore lint/suspicious/noExplicitAny: the key file as JSON
  let keyFile: Record<string, any>;
  let Unsubscribers: new (address: string, credentials: grpc.ChannelCredentials) => AnyClient;

  beforeAll(async () => {
    const pki = makeTestPki(["oauth2.googleapis.com", "messaging.api.example.com", "localhost"]);
    ca = pki.ca;
    dir = await mkdtemp(join(tmpdir(), "switchboard-sa-tls-"));
    await writeFile(join(dir, "cert.pem"), pki.cert);
    await writeFile(join(dir, "key.pem"), pki.key);
    server = await startApp(database.db, {
      TLS_CERT_FILE: join(dir, "cert.pem"),
      TLS_KEY_FILE: join(dir, "key.pem"),
      OAUTH_TOKEN_URL: GOOGLE_TOKEN_URL,
    });
    agent = new TestDnsAgent(server.port, { ca });

    // The operator makes a project, an account with roles/viewer on it, and a key.
    const transport = createConnectTransport({
      baseUrl: server.baseUrl,
      httpVersion: "2",
      nodeOptions: { ca },
      interceptors: asOperator,
    });
    project = `gal-${backend.name}`;
    account = `sdk-${backend.name}`;
    await createClient(Projects, transport).createProject({ projectId: project });
    const admin = createClient(ServiceAccounts, transport);
    await admin.createServiceAccount({
      serviceAccountId: account,
      serviceAccount: { bindings: [{ project: `projects/${project}`, roles: ["roles/viewer"] }] },
    });
    const key = await admin.createServiceAccountKey({ parent: `serviceAccounts/${account}` });
    keyFile = JSON.parse(key.keyFile);

    const def = await protoLoader.load(["enfonica/messaging/v1/unsubscribers.proto"], {
      includeDirs: [protoDir],
      keepCase: true,
      longs: String,
      enums: String,
      defaults: true,
    });
    // biome-ignore lint/suspicious/noExplicitAny: the loaded package is untyped
    Unsubscribers = (grpc.loadPackageDefinition(def) as any).enfonica.messaging.v1.Unsubscribers;
  });

  afterAll(async () => {
    agent?.destroy();
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * A JWT client as an SDK makes one from the key file (sub = the account,
   * as the official SDKs send). The tests share one, as an application
   * shares its SDK client: it caches its token.
   */
  let shared: JWT | undefined;
  function jwtClient(): JWT {
    return new JWT({
      email: keyFile.client_email,
      key: keyFile.private_key,
      keyId: keyFile.private_key_id,
      subject: keyFile.client_email,
      scopes: [SCOPE],
      transporterOptions: { agent },
    });
  }

  /** gRPC over TLS with the client's tokens as call credentials (as google-gax attaches them). */
  function grpcClient(jwt: JWT): AnyClient {
    const callCredentials = grpc.credentials.createFromMetadataGenerator((params, callback) => {
      jwt.getRequestHeaders(params.service_url).then(
        (headers) => {
          const metadata = new grpc.Metadata();
          for (const [name, value] of headers) metadata.add(name, value);
          callback(null, metadata);
        },
        (err: Error) => callback(err),
      );
    });
    return new Unsubscribers(
      `localhost:${server.port}`,
      grpc.credentials.combineChannelCredentials(
        grpc.credentials.createSsl(Buffer.from(ca)),
        callCredentials,
      ),
    );
  }

  function list(
    client: AnyClient,
  ): Promise<{ error?: grpc.ServiceError; response?: { unsubscribers: unknown[] } }> {
    return new Promise((resolve) => {
      client.ListUnsubscribers(
        { parent: `projects/${project}` },
        { deadline: Date.now() + 20_000 },
        (error: grpc.ServiceError | null, response: { unsubscribers: unknown[] }) =>
          resolve(error ? { error } : { response }),
      );
    });
  }

  it("gets a token with the issued key file and calls a method over gRPC with TLS", async () => {
    shared = jwtClient();
    const jwt = shared;
    const client = grpcClient(jwt);
    try {
      const out = await list(client);
      expect(out.error).toBeUndefined();
      expect(out.response?.unsubscribers).toEqual([]);
      // The token came from this service's token endpoint.
      expect(jwt.credentials.access_token).toMatch(/^sbat_/);
    } finally {
      client.close();
    }
  });

  it("gets a token for each of several clients starting together on one key file", async () => {
    // As replicas of one application do: the same claims signed in the same second are the same
    // bytes (RS256 is deterministic, the SDK sends no jti), and each client needs its token.
    const clients = [jwtClient(), jwtClient(), jwtClient()];
    const tokens = await Promise.all(clients.map((c) => c.getAccessToken()));
    for (const t of tokens) expect(t.token).toMatch(/^sbat_/);
    expect(new Set(tokens.map((t) => t.token)).size).toBe(3);
  });

  it("calls a method over REST with the token it got", async () => {
    const jwt = shared ?? jwtClient();
    const res = await jwt.request<{ unsubscribers?: unknown[] }>({
      url: `https://messaging.api.example.com/v1/projects/${project}/unsubscribers`,
      agent,
    });
    expect(res.status).toBe(200);
    expect(res.data.unsubscribers ?? []).toEqual([]);
    expect(jwt.credentials.access_token).toMatch(/^sbat_/);
  });

  it("is refused at once, with the token it holds, when the account is disabled", async () => {
    const jwt = shared ?? jwtClient();
    const client = grpcClient(jwt);
    const admin = createClient(
      ServiceAccounts,
      createConnectTransport({
        baseUrl: server.baseUrl,
        httpVersion: "2",
        nodeOptions: { ca },
        interceptors: asOperator,
      }),
    );
    try {
      expect((await list(client)).error).toBeUndefined();
      await admin.updateServiceAccount({
        serviceAccount: { name: `serviceAccounts/${account}`, disabled: true },
        updateMask: { paths: ["disabled"] },
      });
      const refused = await list(client);
      expect(refused.error?.code).toBe(grpc.status.UNAUTHENTICATED);
      // A new token is refused too: the library reports the endpoint's invalid_grant.
      await expect(jwtClient().getAccessToken()).rejects.toThrow(/invalid_grant: .*disabled/);
    } finally {
      client.close();
      await admin.updateServiceAccount({
        serviceAccount: { name: `serviceAccounts/${account}`, disabled: false },
        updateMask: { paths: ["disabled"] },
      });
    }
  });
});
