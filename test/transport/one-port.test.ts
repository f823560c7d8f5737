import * as http2 from "node:http2";
import * as net from "node:net";
import { Code, ConnectError, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PhoneNumbers } from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { classify, createOnePortServer, HTTP2_PREFACE } from "../../src/transport/one-port.js";
import { bearer, TEST_OPERATOR_TOKEN } from "../support/app.js";
import { badRequestFields, grpc, loadClients, unary } from "./grpc-js.js";
import {
  asOperator,
  OPERATOR_AUTHORIZATION,
  type Running,
  rawExchange,
  request,
  sleep,
  startApp,
  useAppDatabase,
} from "./helpers.js";

const BAD_COUNTRY_MESSAGE = "country_code: does not match regex pattern `^[A-Z]{2}$`";
const MISSING_CREDENTIALS_MESSAGE = "missing credentials: send 'Authorization: Bearer <api key secret>'";

const database = useAppDatabase();

describe("classify", () => {
  it("waits while the bytes are a prefix of the HTTP/2 preface", () => {
    expect(classify(Buffer.from(""))).toBe("undecided");
    expect(classify(Buffer.from("P"))).toBe("undecided");
    expect(classify(Buffer.from("PRI * HTTP/2.0\r\n"))).toBe("undecided");
    expect(classify(HTTP2_PREFACE.subarray(0, 23))).toBe("undecided");
  });

  it("decides HTTP/2 on the whole preface, with or without frames after it", () => {
    expect(classify(HTTP2_PREFACE)).toBe("http2");
    expect(classify(Buffer.concat([HTTP2_PREFACE, Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]))).toBe("http2");
  });

  it("decides HTTP/1.1 at the first byte that differs", () => {
    expect(classify(Buffer.from("G"))).toBe("http1");
    expect(classify(Buffer.from("PO"))).toBe("http1");
    expect(classify(Buffer.from("PUT /x HTTP/1.1"))).toBe("http1");
    expect(classify(Buffer.from([0x16, 0x03, 0x01]))).toBe("http1");
  });
});

describe("OnePort", () => {
  let server: Running;
  beforeAll(async () => {
    server = await startApp(database.db);
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Each transport, with the interceptors given (the operator's credential unless a test says otherwise). */
  const transports: Array<[string, (interceptors?: Interceptor[]) => Transport]> = [
    [
      "Connect JSON HTTP/1.1",
      (interceptors = asOperator) =>
        createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", interceptors }),
    ],
    [
      "Connect binary HTTP/1.1",
      (interceptors = asOperator) =>
        createConnectTransport({
          baseUrl: server.baseUrl,
          httpVersion: "1.1",
          useBinaryFormat: true,
          interceptors,
        }),
    ],
    [
      "Connect JSON HTTP/2",
      (interceptors = asOperator) =>
        createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "2", interceptors }),
    ],
    [
      "Connect binary HTTP/2",
      (interceptors = asOperator) =>
        createConnectTransport({
          baseUrl: server.baseUrl,
          httpVersion: "2",
          useBinaryFormat: true,
          interceptors,
        }),
    ],
    [
      "Connect GET HTTP/1.1",
      (interceptors = asOperator) =>
        createConnectTransport({
          baseUrl: server.baseUrl,
          httpVersion: "1.1",
          useHttpGet: true,
          interceptors,
        }),
    ],
    [
      "gRPC HTTP/2 (h2c)",
      (interceptors = asOperator) => createGrpcTransport({ baseUrl: server.baseUrl, interceptors }),
    ],
    [
      "gRPC-Web binary HTTP/1.1",
      (interceptors = asOperator) =>
        createGrpcWebTransport({
          baseUrl: server.baseUrl,
          httpVersion: "1.1",
          useBinaryFormat: true,
          interceptors,
        }),
    ],
    [
      "gRPC-Web JSON HTTP/1.1",
      (interceptors = asOperator) =>
        createGrpcWebTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", interceptors }),
    ],
    [
      "gRPC-Web binary HTTP/2",
      (interceptors = asOperator) =>
        createGrpcWebTransport({ baseUrl: server.baseUrl, httpVersion: "2", interceptors }),
    ],
  ];

  for (const [name, transport] of transports) {
    it(`answers UNAUTHENTICATED without a credential, before validation, over ${name}`, async () => {
      const client = createClient(PhoneNumbers, transport([]));
      const err = await client.searchPhoneNumbers({ countryCode: "au" }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code).toBe(Code.Unauthenticated);
      expect(err?.rawMessage).toBe(MISSING_CREDENTIALS_MESSAGE);
      expect(err?.findDetails(ErrorInfoSchema)[0]?.reason).toBe("CREDENTIALS_MISSING");
      expect(err?.findDetails(BadRequestSchema)).toEqual([]);
    });

    it(`answers UNAUTHENTICATED for a token it does not know over ${name}`, async () => {
      const client = createClient(PhoneNumbers, transport([bearer(`${TEST_OPERATOR_TOKEN}-not`)]));
      const err = await client.searchPhoneNumbers({ countryCode: "AU" }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code).toBe(Code.Unauthenticated);
      expect(err?.findDetails(ErrorInfoSchema)[0]?.reason).toBe("CREDENTIALS_INVALID");
    });

    it(`answers INVALID_ARGUMENT naming country_code over ${name}`, async () => {
      const client = createClient(PhoneNumbers, transport());
      const err = await client.searchPhoneNumbers({ countryCode: "au" }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code).toBe(Code.InvalidArgument);
      expect(err?.rawMessage).toBe(BAD_COUNTRY_MESSAGE);
      const fields = err?.findDetails(BadRequestSchema).flatMap((d) => d.fieldViolations.map((v) => v.field));
      expect(fields).toEqual(["country_code"]);
    });

    it(`answers valid input over ${name}`, async () => {
      const client = createClient(PhoneNumbers, transport());
      // The test database has no inventory: an empty, final page.
      const res = await client.searchPhoneNumbers({ countryCode: "AU" });
      expect(res.phoneNumbers).toEqual([]);
      expect(res.nextPageToken).toBe("");
    });
  }

  it("answers the same over @grpc/grpc-js with the .proto files", async () => {
    const { PhoneNumbers: Client } = await loadClients();
    const client = new Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    try {
      const token = TEST_OPERATOR_TOKEN;
      const bad = await unary(client, "SearchPhoneNumbers", { country_code: "au" }, { token });
      expect(bad.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(bad.error?.details).toBe(BAD_COUNTRY_MESSAGE);
      expect(badRequestFields(bad.error!)).toEqual(["country_code"]);

      const anonymous = await unary(client, "SearchPhoneNumbers", { country_code: "au" });
      expect(anonymous.error?.code).toBe(grpc.status.UNAUTHENTICATED);
      expect(anonymous.error?.details).toBe(MISSING_CREDENTIALS_MESSAGE);
      expect(badRequestFields(anonymous.error!)).toEqual([]);

      const valid = await unary(client, "SearchPhoneNumbers", { country_code: "AU" }, { token });
      expect(valid.error).toBeUndefined();
      expect(valid.response).toMatchObject({ phone_numbers: [], next_page_token: "" });
    } finally {
      client.close();
    }
  });

  it("serves plain HTTP/1.1 (curl-style) on the same port", async () => {
    const res = await request(
      `${server.baseUrl}/enfonica.numbering.v1beta1.PhoneNumbers/SearchPhoneNumbers`,
      {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: OPERATOR_AUTHORIZATION },
        body: JSON.stringify({ countryCode: "au" }),
      },
    );
    expect(res.status).toBe(400);
    const body = JSON.parse(res.body) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toBe(BAD_COUNTRY_MESSAGE);

    const anonymous = await request(
      `${server.baseUrl}/enfonica.numbering.v1beta1.PhoneNumbers/SearchPhoneNumbers`,
      {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ countryCode: "au" }),
      },
    );
    expect(anonymous.status).toBe(401);
    expect(JSON.parse(anonymous.body)).toMatchObject({
      code: "unauthenticated",
      message: MISSING_CREDENTIALS_MESSAGE,
    });
  });

  it("answers 404 for a path that is no RPC and no fallback route", async () => {
    const res = await request(`${server.baseUrl}/no/such/path`);
    expect(res.status).toBe(404);
  });

  it("accepts an HTTP/2 preface that arrives in pieces", async () => {
    const session = http2.connect(server.baseUrl, {
      createConnection: () => {
        const socket = net.connect(server.port, "127.0.0.1");
        const write = socket.write.bind(socket) as (chunk: Buffer, cb?: () => void) => boolean;
        let split = false;
        // Send the first write (preface + SETTINGS) as 3 bytes, then the rest later.
        socket.write = ((chunk: Buffer, ...rest: unknown[]) => {
          if (!split && Buffer.isBuffer(chunk) && chunk.length > 3) {
            split = true;
            write(chunk.subarray(0, 3));
            setTimeout(() => write(chunk.subarray(3), ...(rest as [])), 50);
            return true;
          }
          return write(chunk, ...(rest as []));
        }) as typeof socket.write;
        return socket;
      },
    });
    try {
      const stream = session.request({ ":path": "/healthz", ":method": "GET" });
      stream.end();
      const status = await new Promise<number>((resolve, reject) => {
        stream.on("response", (headers) => resolve(Number(headers[":status"])));
        stream.on("error", reject);
      });
      let body = "";
      stream.on("data", (d: Buffer) => {
        body += d.toString();
      });
      await new Promise((r) => stream.on("end", r));
      expect(status).toBe(200);
      expect(JSON.parse(body)).toEqual({ status: "SERVING" });
    } finally {
      session.close();
    }
  });

  it("accepts an HTTP/1.1 request that arrives byte by byte, body included", async () => {
    const body = JSON.stringify({ countryCode: "au" });
    const text = `POST /enfonica.numbering.v1beta1.PhoneNumbers/SearchPhoneNumbers HTTP/1.1\r\nHost: x\r\nAuthorization: ${OPERATOR_AUTHORIZATION}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
    const out = await rawExchange(server.port, [...text.slice(0, 12)].concat(text.slice(12)), { pauseMs: 5 });
    expect(out.startsWith("HTTP/1.1 400 ")).toBe(true);
    expect(out).toContain("country_code");
  });

  it("serves pipelined HTTP/1.1 requests in order", async () => {
    const out = await rawExchange(server.port, [
      "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ]);
    expect(out.match(/HTTP\/1\.1 200 OK/g)).toHaveLength(2);
  });

  it("survives garbage, silence and connections closed before or while classifying", async () => {
    const outcomes = await Promise.all([
      rawExchange(server.port, [], { endAfterMs: 0 }), // connect and close at once
      rawExchange(server.port, [Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0d, 0x0a, 0x0d, 0x0a])]),
      rawExchange(server.port, ["P"], { endAfterMs: 50 }), // a preface prefix, then EOF
      rawExchange(server.port, ["PRI * HTTP/2.0\r\n"], { endAfterMs: 50 }),
      rawExchange(server.port, [HTTP2_PREFACE, Buffer.from("not a frame at all, just words")]),
      rawExchange(server.port, ["GET / HTTP/9.9\r\n\r\n"]),
      rawExchange(server.port, [Buffer.alloc(64 * 1024, 0x41)]),
      rawExchange(server.port, ["\r\n\r\n\r\n"]),
    ]);
    // Garbage on HTTP/1 gets a 400 and a closed connection.
    expect(outcomes[1]).toMatch(/^HTTP\/1\.1 400 /);
    // Partial prefaces followed by EOF are dropped without an answer.
    expect(outcomes[2]).toBe("");
    expect(outcomes[3]).toBe("");
    // Resets: destroy sockets abruptly mid-classification and mid-request.
    for (let i = 0; i < 20; i++) {
      const s = net.connect(server.port, "127.0.0.1");
      s.on("error", () => {});
      s.once("connect", () => {
        s.write(i % 2 ? "PRI * HT" : "POST /x HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc");
        s.resetAndDestroy();
      });
    }
    await sleep(100);
    // Still serving.
    const res = await request(`${server.baseUrl}/healthz`);
    expect(res.status).toBe(200);
    const client = createClient(
      PhoneNumbers,
      createGrpcTransport({ baseUrl: server.baseUrl, interceptors: asOperator }),
    );
    await expect(client.searchPhoneNumbers({ countryCode: "au" })).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
  });
});

describe("OnePort shutdown", () => {
  it("closes idle keep-alive connections, HTTP/2 sessions and silent sockets at once", async () => {
    const server = await startApp(database.db);
    // An idle HTTP/1.1 keep-alive connection after one request.
    const keepAlive = net.connect(server.port, "127.0.0.1");
    keepAlive.on("error", () => {});
    const keepAliveClosed = new Promise((r) => keepAlive.once("close", r));
    await new Promise<void>((r) => keepAlive.once("connect", () => r()));
    keepAlive.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    await new Promise((r) => keepAlive.once("data", r));
    // An idle HTTP/2 session after one request.
    const session = http2.connect(server.baseUrl);
    session.on("error", () => {});
    const sessionClosed = new Promise((r) => session.once("close", r));
    const stream = session.request({ ":path": "/healthz" });
    stream.end();
    stream.resume();
    await new Promise((r) => stream.once("end", r));
    // A connection that never says anything.
    const silent = net.connect(server.port, "127.0.0.1");
    silent.on("error", () => {});
    const silentClosed = new Promise((r) => silent.once("close", r));
    await new Promise<void>((r) => silent.once("connect", () => r()));

    const started = Date.now();
    await server.close();
    await Promise.all([keepAliveClosed, sessionClosed, silentClosed]);
    expect(Date.now() - started).toBeLessThan(2_500); // well under the 5 s grace
  });

  it("lets an in-flight HTTP/1.1 request finish, then closes its connection", async () => {
    const server = await startApp(database.db);
    const socket = net.connect(server.port, "127.0.0.1");
    socket.on("error", () => {});
    let received = "";
    socket.on("data", (d: Buffer) => {
      received += d.toString();
    });
    const closed = new Promise((r) => socket.once("close", r));
    await new Promise<void>((r) => socket.once("connect", () => r()));
    const body = JSON.stringify({ countryCode: "au" });
    // Headers now, body after close() has begun.
    socket.write(
      `POST /enfonica.numbering.v1beta1.PhoneNumbers/SearchPhoneNumbers HTTP/1.1\r\nHost: x\r\nAuthorization: ${OPERATOR_AUTHORIZATION}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    await sleep(50);
    const closing = server.close();
    await sleep(100);
    socket.write(body);
    await closing;
    await closed;
    expect(received).toMatch(/^HTTP\/1\.1 400 /);
    expect(received).toContain("country_code");
  });

  it("drops a connection that stays silent past the peek timeout", async () => {
    const server = createOnePortServer({
      handler: (_req, res) => {
        res.writeHead(204);
        res.end();
      },
      peekTimeoutMs: 100,
    });
    const { port } = await server.listen(0, "127.0.0.1");
    try {
      const started = Date.now();
      const silent = await rawExchange(port, [], { endAfterMs: 5_000 });
      expect(silent).toBe("");
      expect(Date.now() - started).toBeLessThan(2_000);
      // A partial preface that never completes is dropped the same way.
      expect(await rawExchange(port, ["PRI * HTTP/2"], { endAfterMs: 5_000 })).toBe("");
      // Talking in time is served.
      const served = await rawExchange(port, ["GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"]);
      expect(served).toMatch(/^HTTP\/1\.1 204 /);
    } finally {
      await server.close();
    }
  });

  it("refuses new connections after close", async () => {
    const server = await startApp(database.db);
    await server.close();
    await expect(request(`${server.baseUrl}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
  });
});
