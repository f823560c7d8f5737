/**
 * Hardening items 2-4 on every protocol of the port:
 *
 * - a request over MAX_REQUEST_BYTES (declared, streamed or after
 *   decompression) is RESOURCE_EXHAUSTED (REST: HTTP 413) long before the
 *   server has read it, and the process stays small and alive;
 * - a body that is not protobuf is INVALID_ARGUMENT in each protocol's form,
 *   leaking nothing of the parser;
 * - a gRPC, gRPC-Web or Connect call of a procedure the port does not serve
 *   is UNIMPLEMENTED as @grpc/grpc-js and connect-node clients see it; REST
 *   paths that match nothing keep their 404.
 */
import type { DescMethodUnary } from "@bufbuild/protobuf";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ListUnsubscribersRequestSchema,
  Unsubscribers,
} from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { DEFAULT_MAX_REQUEST_BYTES } from "../../src/config.js";
import { newApiKey, newProject } from "../support/app.js";
import { type Running, startApp, useAppDatabase } from "../transport/helpers.js";
import { CORRUPT_PROTOBUF, envelope, grpcWebTrailer, gzipBomb, http1, http2Request } from "./raw.js";

const database = useAppDatabase();
const LIST = "/enfonica.messaging.v1.Unsubscribers/ListUnsubscribers";
const OVERSIZE = 20 * 1024 * 1024;
/** Internals a message must never show. */
const LEAK =
  /parse binary|varint|premature EOF|stack|at .*\.js|node_modules|invalid byte sequence|SQL|select /i;

describe("Request limits, corrupt messages and unknown procedures", () => {
  let server: Running;
  let project: string;
  let auth: string;

  beforeAll(async () => {
    server = await startApp(database.db);
    project = await newProject(database.db);
    auth = `Bearer ${(await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret}`;
  }, 60_000);
  afterAll(async () => {
    await server?.close();
  });

  const listRequest = () =>
    toBinary(ListUnsubscribersRequestSchema, create(ListUnsubscribersRequestSchema, { parent: project }));

  describe("MAX_REQUEST_BYTES", () => {
    let rssBefore = 0;
    beforeAll(() => {
      rssBefore = process.memoryUsage().rss;
    });

    it("is 4 MiB by default", () => {
      expect(DEFAULT_MAX_REQUEST_BYTES).toBe(4 * 1024 * 1024);
      expect(server.app.config.maxRequestBytes).toBe(DEFAULT_MAX_REQUEST_BYTES);
    });

    it("REST: 413 RESOURCE_EXHAUSTED before the body is read", async () => {
      const res = await http1(
        `${server.baseUrl}/v1/${project}/unsubscribers`,
        "POST",
        { authorization: auth, "content-type": "application/json" },
        { head: Buffer.from('{"phone":"'), total: OVERSIZE },
      );
      expect(res.status).toBe(413);
      const json = JSON.parse(res.body.toString()) as { error: { status: string; message: string } };
      expect(json.error.status).toBe("RESOURCE_EXHAUSTED");
      expect(res.sentBeforeResponse).toBeLessThan(OVERSIZE);
    });

    it("Connect: resource_exhausted (HTTP 429) before the body is read", async () => {
      const res = await http1(
        `${server.baseUrl}${LIST}`,
        "POST",
        { authorization: auth, "content-type": "application/proto" },
        { head: listRequest(), total: OVERSIZE },
      );
      expect(res.status).toBe(429);
      const json = JSON.parse(res.body.toString()) as { code: string; message: string };
      expect(json.code).toBe("resource_exhausted");
      expect(json.message.length).toBeLessThan(300);
      expect(res.sentBeforeResponse).toBeLessThan(OVERSIZE);
    });

    it("Connect: a gzip bomb is RESOURCE_EXHAUSTED, not inflated", async () => {
      const bomb = gzipBomb(64 * 1024 * 1024);
      expect(bomb.length).toBeLessThan(200 * 1024);
      const res = await http1(
        `${server.baseUrl}${LIST}`,
        "POST",
        { authorization: auth, "content-type": "application/proto", "content-encoding": "gzip" },
        { head: bomb, total: bomb.length },
      );
      expect(res.status).toBe(429);
      expect((JSON.parse(res.body.toString()) as { code: string }).code).toBe("resource_exhausted");
    });

    it("gRPC: grpc-status 8 once the envelope declares too much", async () => {
      const res = await http2Request(
        server.baseUrl,
        LIST,
        { authorization: auth, "content-type": "application/grpc", te: "trailers" },
        { head: envelope(listRequest(), { declaredLength: OVERSIZE }), total: OVERSIZE + 5 },
      );
      const status = res.trailers["grpc-status"] ?? res.headers["grpc-status"];
      expect(status).toBe(String(Code.ResourceExhausted));
      expect(res.sentBeforeResponse).toBeLessThan(OVERSIZE);
    });

    it("gRPC: a gzip bomb in a compressed envelope is grpc-status 8", async () => {
      const bomb = gzipBomb(64 * 1024 * 1024);
      const res = await http2Request(
        server.baseUrl,
        LIST,
        { authorization: auth, "content-type": "application/grpc", te: "trailers", "grpc-encoding": "gzip" },
        { head: envelope(bomb, { flags: 1 }), total: bomb.length + 5 },
      );
      expect(res.trailers["grpc-status"] ?? res.headers["grpc-status"]).toBe(String(Code.ResourceExhausted));
    });

    it("gRPC-Web: grpc-status 8 in the trailer frame, before the body is read", async () => {
      const res = await http1(
        `${server.baseUrl}${LIST}`,
        "POST",
        { authorization: auth, "content-type": "application/grpc-web+proto" },
        { head: envelope(listRequest(), { declaredLength: OVERSIZE }), total: OVERSIZE + 5 },
      );
      expect(res.status).toBe(200);
      expect(grpcWebTrailer(res.body)["grpc-status"]).toBe(String(Code.ResourceExhausted));
      expect(res.sentBeforeResponse).toBeLessThan(OVERSIZE);
    });

    it("gRPC-Web: a gzip bomb is grpc-status 8", async () => {
      const bomb = gzipBomb(64 * 1024 * 1024);
      const res = await http1(
        `${server.baseUrl}${LIST}`,
        "POST",
        { authorization: auth, "content-type": "application/grpc-web+proto", "grpc-encoding": "gzip" },
        { head: envelope(bomb, { flags: 1 }), total: bomb.length + 5 },
      );
      expect(grpcWebTrailer(res.body)["grpc-status"]).toBe(String(Code.ResourceExhausted));
    });

    it("connect-node clients see RESOURCE_EXHAUSTED for a 5 MiB message on each protocol", async () => {
      const big = "x".repeat(5 * 1024 * 1024);
      const sessions: Http2SessionManager[] = [];
      const transports: [string, Transport][] = [
        [
          "connect",
          createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
        ],
        ["grpc-web", createGrpcWebTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" })],
        [
          "grpc",
          createGrpcTransport({
            baseUrl: server.baseUrl,
            sessionManager: sessions[sessions.push(new Http2SessionManager(server.baseUrl)) - 1]!,
          }),
        ],
      ];
      for (const [name, transport] of transports) {
        const err = await callError(transport, unaryList(), { parent: big }, auth);
        expect(Code[err.code], `${name}: ${err.rawMessage}`).toBe("ResourceExhausted");
        expect(err.findDetails(ErrorInfoSchema)[0]?.reason, `${name}: ${err.rawMessage}`).toBe(
          "REQUEST_TOO_LARGE",
        );
        expect(err.rawMessage, name).toBe(`request body exceeds ${DEFAULT_MAX_REQUEST_BYTES} bytes`);
      }
      for (const s of sessions) s.abort();
    });

    it("leaves the process small and alive", async () => {
      const grown = process.memoryUsage().rss - rssBefore;
      expect(grown).toBeLessThan(300 * 1024 * 1024);
      const health = await fetch(`${server.baseUrl}/healthz`);
      expect(health.status).toBe(200);
    });
  });

  describe("corrupt protobuf", () => {
    it("Connect binary: HTTP 400 invalid_argument, nothing internal", async () => {
      const res = await http1(
        `${server.baseUrl}${LIST}`,
        "POST",
        { authorization: auth, "content-type": "application/proto" },
        { head: CORRUPT_PROTOBUF, total: CORRUPT_PROTOBUF.length },
      );
      expect(res.status).toBe(400);
      const json = JSON.parse(res.body.toString()) as { code: string; message: string };
      expect(json.code).toBe("invalid_argument");
      expect(json.message).not.toMatch(LEAK);
    });

    it("gRPC: grpc-status 3, nothing internal", async () => {
      const res = await http2Request(
        server.baseUrl,
        LIST,
        { authorization: auth, "content-type": "application/grpc", te: "trailers" },
        { head: envelope(CORRUPT_PROTOBUF), total: CORRUPT_PROTOBUF.length + 5 },
      );
      expect(res.status).toBe(200);
      expect(res.trailers["grpc-status"]).toBe(String(Code.InvalidArgument));
      expect(decodeURIComponent(String(res.trailers["grpc-message"]))).not.toMatch(LEAK);
    });

    it("gRPC-Web: grpc-status 3 in the trailer frame", async () => {
      const res = await http1(
        `${server.baseUrl}${LIST}`,
        "POST",
        { authorization: auth, "content-type": "application/grpc-web+proto" },
        { head: envelope(CORRUPT_PROTOBUF), total: CORRUPT_PROTOBUF.length + 5 },
      );
      const trailer = grpcWebTrailer(res.body);
      expect(trailer["grpc-status"]).toBe(String(Code.InvalidArgument));
      expect(decodeURIComponent(trailer["grpc-message"] ?? "")).not.toMatch(LEAK);
    });

    it("@grpc/grpc-js: INVALID_ARGUMENT for bytes that are not the request type, and for invalid UTF-8", async () => {
      const client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
      try {
        for (const bytes of [CORRUPT_PROTOBUF, Buffer.from([0x0a, 0x02, 0xc3, 0x28])]) {
          const error = await new Promise<grpc.ServiceError | null>((resolve) => {
            const metadata = new grpc.Metadata();
            metadata.set("authorization", auth);
            client.makeUnaryRequest(
              LIST,
              () => bytes,
              (b: Buffer) => b,
              {},
              metadata,
              (err) => resolve(err),
            );
          });
          expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
          expect(error?.details).not.toMatch(LEAK);
        }
      } finally {
        client.close();
      }
    });

    it("a corrupt gzip body is INVALID_ARGUMENT", async () => {
      const res = await http1(
        `${server.baseUrl}${LIST}`,
        "POST",
        { authorization: auth, "content-type": "application/proto", "content-encoding": "gzip" },
        { head: Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x01, 0x02]), total: 6 },
      );
      expect(res.status).toBe(400);
      expect((JSON.parse(res.body.toString()) as { code: string }).code).toBe("invalid_argument");
    });
  });

  describe("unknown procedures", () => {
    const UNKNOWN_SERVICE = "/enfonica.voice.v1beta1.NoSuchService/GetSipInfo";
    const UNKNOWN_METHOD = "/enfonica.messaging.v1.Unsubscribers/GetSipInfo";

    it("@grpc/grpc-js sees UNIMPLEMENTED", async () => {
      const client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
      try {
        for (const path of [UNKNOWN_SERVICE, UNKNOWN_METHOD]) {
          const error = await new Promise<grpc.ServiceError | null>((resolve) => {
            client.makeUnaryRequest(
              path,
              (b: Buffer) => b,
              (b: Buffer) => b,
              Buffer.alloc(0),
              new grpc.Metadata(),
              (err) => resolve(err),
            );
          });
          expect(error?.code, `${path}: ${error?.details}`).toBe(grpc.status.UNIMPLEMENTED);
          expect(error?.details).toContain(path.slice(1));
        }
      } finally {
        client.close();
      }
    });

    it("connect-node clients see UNIMPLEMENTED on Connect (JSON, binary), gRPC-Web and gRPC", async () => {
      const session = new Http2SessionManager(server.baseUrl);
      const transports: [string, Transport][] = [
        ["connect-json", createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" })],
        [
          "connect-binary",
          createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
        ],
        ["grpc-web", createGrpcWebTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" })],
        ["grpc", createGrpcTransport({ baseUrl: server.baseUrl, sessionManager: session })],
      ];
      try {
        for (const [name, transport] of transports) {
          for (const method of [
            unaryList("enfonica.voice.v1beta1.NoSuchService", "GetSipInfo"),
            unaryList(undefined, "GetSipInfo"),
          ]) {
            const err = await callError(transport, method, { parent: project }, auth);
            expect(Code[err.code], `${name}: ${err.rawMessage}`).toBe("Unimplemented");
          }
        }
      } finally {
        session.abort();
      }
    });

    it("Connect answers HTTP 501 with the Connect error body", async () => {
      const res = await http1(
        `${server.baseUrl}${UNKNOWN_SERVICE}`,
        "POST",
        { "content-type": "application/json", "connect-protocol-version": "1" },
        { head: Buffer.from("{}"), total: 2 },
      );
      expect(res.status).toBe(501);
      expect((JSON.parse(res.body.toString()) as { code: string }).code).toBe("unimplemented");
    });

    it("REST paths that match nothing keep their 404 JSON", async () => {
      const res = await fetch(`${server.baseUrl}/v1beta1/nothing/here`);
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { status: string } }).error.status).toBe("NOT_FOUND");
      const post = await fetch(`${server.baseUrl}${UNKNOWN_SERVICE}`, { method: "POST", body: "{}" });
      expect(post.status).toBe(404);
    });
  });
});

/** ListUnsubscribers, or a method of that shape under another service and/or name. */
function unaryList(serviceTypeName?: string, methodName?: string): DescMethodUnary {
  const method = Unsubscribers.method.listUnsubscribers as DescMethodUnary;
  if (serviceTypeName === undefined && methodName === undefined) return method;
  return {
    ...method,
    name: methodName ?? method.name,
    parent: { ...method.parent, typeName: serviceTypeName ?? method.parent.typeName },
  } as DescMethodUnary;
}

async function callError(
  transport: Transport,
  method: DescMethodUnary,
  request: Record<string, unknown>,
  authorization: string,
): Promise<ConnectError> {
  try {
    await transport.unary(
      method,
      undefined,
      20_000,
      new Headers({ authorization }),
      create(method.input, request),
    );
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("the call should have failed");
}
