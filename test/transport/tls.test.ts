import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import * as http2 from "node:http2";
import * as https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConnectionOptions, TLSSocket } from "node:tls";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PhoneNumbers } from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { TEST_OPERATOR_TOKEN } from "../support/app.js";
import { badRequestFields, grpc, loadClients, unary } from "./grpc-js.js";
import { asOperator, type Running, rawExchange, request, startApp, useAppDatabase } from "./helpers.js";

const database = useAppDatabase();

function openssl(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile("openssl", args, { timeout: 30_000 }, (err, _stdout, stderr) =>
      err ? reject(new Error(`openssl failed: ${stderr}`)) : resolve(),
    );
  });
}

interface HttpsResult {
  status: number;
  alpn: string | false | null;
  body: string;
  headers: Record<string, unknown>;
}

function httpsGet(url: string, ca: Buffer, alpn?: string[]): Promise<HttpsResult> {
  return new Promise((resolve, reject) => {
    const options: https.RequestOptions & ConnectionOptions = { ca, agent: false };
    if (alpn) options.ALPNProtocols = alpn;
    const req = https.get(url, options, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => {
        body += d.toString();
      });
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          alpn: (res.socket as TLSSocket).alpnProtocol,
          body,
          headers: res.headers,
        }),
      );
    });
    req.on("error", reject);
  });
}

describe("TLS", () => {
  let dir: string;
  let ca: Buffer;
  let server: Running;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "switchboard-tls-"));
    const certFile = join(dir, "cert.pem");
    const keyFile = join(dir, "key.pem");
    await openssl([
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      certFile,
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
    ]);
    ca = await readFile(certFile);
    server = await startApp(database.db, { TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile });
  });

  afterAll(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("listens on https", () => {
    expect(server.baseUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  const interceptors = asOperator;
  const transports: Array<[string, () => Transport]> = [
    [
      "Connect over HTTP/2",
      () =>
        createConnectTransport({
          baseUrl: server.baseUrl,
          httpVersion: "2",
          nodeOptions: { ca },
          interceptors,
        }),
    ],
    [
      "Connect over HTTP/1.1",
      () =>
        createConnectTransport({
          baseUrl: server.baseUrl,
          httpVersion: "1.1",
          nodeOptions: { ca },
          interceptors,
        }),
    ],
    [
      "gRPC over HTTP/2",
      () => createGrpcTransport({ baseUrl: server.baseUrl, nodeOptions: { ca }, interceptors }),
    ],
    [
      "gRPC-Web over HTTP/1.1",
      () =>
        createGrpcWebTransport({
          baseUrl: server.baseUrl,
          httpVersion: "1.1",
          nodeOptions: { ca },
          interceptors,
        }),
    ],
  ];

  for (const [name, transport] of transports) {
    it(`serves ${name}`, async () => {
      const client = createClient(PhoneNumbers, transport());
      const err = await client.searchPhoneNumbers({ countryCode: "au" }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code).toBe(Code.InvalidArgument);
      expect(err?.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("country_code");
    });
  }

  it("serves @grpc/grpc-js over TLS", async () => {
    const { PhoneNumbers: Client } = await loadClients();
    const client = new Client(`127.0.0.1:${server.port}`, grpc.credentials.createSsl(ca));
    try {
      const out = await unary(
        client,
        "SearchPhoneNumbers",
        { country_code: "au" },
        { token: TEST_OPERATOR_TOKEN },
      );
      expect(out.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(badRequestFields(out.error!)).toEqual(["country_code"]);
      const anonymous = await unary(client, "SearchPhoneNumbers", { country_code: "au" });
      expect(anonymous.error?.code).toBe(grpc.status.UNAUTHENTICATED);
    } finally {
      client.close();
    }
  });

  it("negotiates http/1.1 by ALPN for an HTTP/1.1 client", async () => {
    const res = await httpsGet(`${server.baseUrl}/healthz`, ca, ["http/1.1"]);
    expect(res.alpn).toBe("http/1.1");
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ status: "SERVING" });
  });

  it("serves HTTP/1.1 to a client that offers no ALPN at all", async () => {
    const res = await httpsGet(`${server.baseUrl}/readyz`, ca);
    expect(res.alpn).toBe(false);
    expect(res.status).toBe(200);
  });

  it("negotiates h2 by ALPN for an HTTP/2 client", async () => {
    const session = http2.connect(server.baseUrl, { ca });
    try {
      const stream = session.request({ ":path": "/healthz" });
      stream.end();
      const status = await new Promise<number>((resolve, reject) => {
        stream.once("response", (h) => resolve(Number(h[":status"])));
        stream.once("error", reject);
      });
      stream.resume();
      await new Promise((r) => stream.once("end", r));
      expect(session.alpnProtocol).toBe("h2");
      expect(status).toBe(200);
    } finally {
      session.close();
    }
  });

  it("drops plain-text HTTP and garbage on the TLS port and keeps serving", async () => {
    await expect(request(`http://127.0.0.1:${server.port}/healthz`)).rejects.toThrow();
    const garbage = await rawExchange(server.port, [
      Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5]),
    ]);
    expect(garbage).not.toContain("HTTP/1.1 200");
    await rawExchange(server.port, [], { endAfterMs: 0 });
    const res = await httpsGet(`${server.baseUrl}/healthz`, ca);
    expect(res.status).toBe(200);
  });

  it("closes idle TLS keep-alive connections and h2 sessions at once on close", async () => {
    const other = await startApp(database.db, {
      TLS_CERT_FILE: join(dir, "cert.pem"),
      TLS_KEY_FILE: join(dir, "key.pem"),
    });
    const agent = new https.Agent({ keepAlive: true, ca });
    const keptSocket = await new Promise<TLSSocket>((resolve, reject) => {
      const req = https.get(`${other.baseUrl}/healthz`, { agent }, (res) => {
        const socket = res.socket as TLSSocket;
        res.resume();
        res.on("end", () => resolve(socket));
      });
      req.on("error", reject);
    });
    const keptClosed = new Promise((r) => keptSocket.once("close", r));
    const session = http2.connect(other.baseUrl, { ca });
    session.on("error", () => {});
    const sessionClosed = new Promise((r) => session.once("close", r));
    const stream = session.request({ ":path": "/healthz" });
    stream.end();
    stream.resume();
    await new Promise((r) => stream.once("end", r));

    const started = Date.now();
    await other.close();
    await Promise.all([keptClosed, sessionClosed]);
    expect(Date.now() - started).toBeLessThan(2_500); // well under the 5 s grace
    agent.destroy();
  });

  it("rejects a client that does not trust the certificate", async () => {
    const client = createClient(
      PhoneNumbers,
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
    );
    const err = await client.searchPhoneNumbers({ countryCode: "AU" }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err).toBeInstanceOf(ConnectError);
    expect(err?.message).toMatch(/certificate/i);
  });
});
