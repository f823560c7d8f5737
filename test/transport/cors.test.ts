import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SearchPhoneNumbersRequestSchema } from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { createOriginCheck } from "../../src/transport/cors.js";
import { OPERATOR_AUTHORIZATION, type Running, request, startApp, useAppDatabase } from "./helpers.js";

const ALLOWED = "https://app.example.com";
const DENIED = "https://evil.example.net";
const RPC = "/enfonica.numbering.v1beta1.PhoneNumbers/SearchPhoneNumbers";

const database = useAppDatabase();

function list(value: string | string[] | undefined): string[] {
  return String(value ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== "");
}

function preflight(
  baseUrl: string,
  origin: string,
  method = "POST",
  headers = "content-type,connect-protocol-version",
) {
  return request(`${baseUrl}${RPC}`, {
    method: "OPTIONS",
    headers: {
      Origin: origin,
      "Access-Control-Request-Method": method,
      "Access-Control-Request-Headers": headers,
    },
  });
}

/** A gRPC-Web request body: one uncompressed message frame. */
function grpcWebFrame(countryCode: string): Uint8Array {
  const msg = toBinary(
    SearchPhoneNumbersRequestSchema,
    create(SearchPhoneNumbersRequestSchema, { countryCode }),
  );
  const frame = new Uint8Array(5 + msg.length);
  new DataView(frame.buffer).setUint32(1, msg.length);
  frame.set(msg, 5);
  return frame;
}

describe("CORS with an allow-list", () => {
  let server: Running;
  beforeAll(async () => {
    server = await startApp(database.db, { CORS_ALLOWED_ORIGINS: `${ALLOWED}, https://other.example.com` });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("answers a preflight from an allowed origin", async () => {
    const res = await preflight(server.baseUrl, ALLOWED, "PATCH", "authorization,content-type");
    expect(res.status).toBe(204);
    expect(res.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(list(res.headers["access-control-allow-methods"])).toEqual(
      expect.arrayContaining(["get", "post", "put", "patch", "delete"]),
    );
    expect(list(res.headers["access-control-allow-headers"])).toEqual(
      expect.arrayContaining([
        "authorization",
        "content-type",
        "connect-protocol-version",
        "connect-timeout-ms",
        "x-grpc-web",
        "x-user-agent",
        "grpc-timeout",
      ]),
    );
    expect(Number(res.headers["access-control-max-age"])).toBeGreaterThan(0);
    expect(list(res.headers.vary)).toContain("origin");
  });

  it("gives a preflight from another origin no CORS fields, so the browser blocks it", async () => {
    const res = await preflight(server.baseUrl, DENIED);
    expect(res.status).toBe(204);
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
    expect(res.headers["access-control-allow-methods"]).toBeUndefined();
    expect(res.headers["access-control-allow-headers"]).toBeUndefined();
    expect(list(res.headers.vary)).toContain("origin");
  });

  it("exposes the Connect error fields on a real Connect response to an allowed origin", async () => {
    const res = await request(`${server.baseUrl}${RPC}`, {
      method: "POST",
      headers: {
        Origin: ALLOWED,
        Authorization: OPERATOR_AUTHORIZATION,
        "Content-Type": "application/json",
        "Connect-Protocol-Version": "1",
      },
      body: JSON.stringify({ countryCode: "au" }),
    });
    expect(res.status).toBe(400);
    expect(res.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(list(res.headers.vary)).toContain("origin");
    expect(JSON.parse(res.body)).toMatchObject({ code: "invalid_argument" });
  });

  it("lets an allowed origin read UNAUTHENTICATED when it sent no credential", async () => {
    const res = await request(`${server.baseUrl}${RPC}`, {
      method: "POST",
      headers: { Origin: ALLOWED, "Content-Type": "application/json", "Connect-Protocol-Version": "1" },
      body: JSON.stringify({ countryCode: "au" }),
    });
    expect(res.status).toBe(401);
    expect(res.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(JSON.parse(res.body)).toMatchObject({ code: "unauthenticated" });
  });

  it("exposes grpc-status, grpc-message and grpc-status-details-bin on a real gRPC-Web response", async () => {
    const res = await request(`${server.baseUrl}${RPC}`, {
      method: "POST",
      headers: {
        Origin: ALLOWED,
        Authorization: OPERATOR_AUTHORIZATION,
        "Content-Type": "application/grpc-web+proto",
        "X-Grpc-Web": "1",
      },
      body: grpcWebFrame("au"),
    });
    expect(res.status).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBe(ALLOWED);
    const exposed = list(res.headers["access-control-expose-headers"]);
    expect(exposed).toEqual(
      expect.arrayContaining(["grpc-status", "grpc-message", "grpc-status-details-bin", "content-encoding"]),
    );
    // connect-es sends the status in the trailer frame of the body here;
    // trailers-only answers (other servers, proxies) put it in headers, hence the exposure.
    expect(res.body).toMatch(/grpc-status: ?3\r\n/);
    expect(res.body).toMatch(/grpc-status-details-bin: ?\S+/);
  });

  it("serves a disallowed origin without CORS fields", async () => {
    const res = await request(`${server.baseUrl}/healthz`, { headers: { Origin: DENIED } });
    expect(res.status).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
    expect(res.headers["access-control-expose-headers"]).toBeUndefined();
    expect(list(res.headers.vary)).toContain("origin");
  });

  it("marks responses without an Origin as varying by Origin", async () => {
    const res = await request(`${server.baseUrl}/healthz`);
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
    expect(list(res.headers.vary)).toContain("origin");
  });

  it("does not treat an OPTIONS request without Access-Control-Request-Method as a preflight", async () => {
    const res = await request(`${server.baseUrl}/healthz`, {
      method: "OPTIONS",
      headers: { Origin: ALLOWED },
    });
    expect(res.headers["access-control-allow-methods"]).toBeUndefined();
  });
});

describe("CORS with the default *", () => {
  let server: Running;
  beforeAll(async () => {
    server = await startApp(database.db);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("allows any origin and echoes it", async () => {
    const res = await preflight(server.baseUrl, DENIED);
    expect(res.status).toBe(204);
    expect(res.headers["access-control-allow-origin"]).toBe(DENIED);
    const real = await request(`${server.baseUrl}/readyz`, { headers: { Origin: "http://localhost:5173" } });
    expect(real.headers["access-control-allow-origin"]).toBe("http://localhost:5173");
  });
});

describe("createOriginCheck", () => {
  it("matches origins exactly, ignoring case and a trailing slash", () => {
    const check = createOriginCheck(["https://App.example.com/"]);
    expect(check("https://app.example.com")).toBe(true);
    expect(check("https://app.example.com:8443")).toBe(false);
    expect(check("http://app.example.com")).toBe(false);
    expect(check("https://app.example.com.evil.net")).toBe(false);
    expect(check("null")).toBe(false);
  });

  it("allows everything with *", () => {
    expect(createOriginCheck(["*"])("null")).toBe(true);
  });
});
