import { create, createRegistry, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import { describe, expect, it } from "vitest";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  file_google_rpc_error_details,
} from "../../gen/google/rpc/error_details_pb.js";
import { badField, notFound } from "../../src/api/errors.js";
import { httpStatusOf, responseJson, restErrorBody, statusNameOf } from "../../src/transport/rest/respond.js";
import { buildFixture } from "./fixture.js";

const registry = createRegistry(file_google_rpc_error_details);
const allCodes = Object.values(Code).filter((c): c is Code => typeof c === "number");

describe("HTTP status per google.rpc.Code", () => {
  it.each(allCodes)("code %i is mapped as Connect maps it", (code) => {
    expect(httpStatusOf(code)).toBe(codeToHttpStatus(code));
  });

  it.each<[Code, number, string]>([
    [Code.InvalidArgument, 400, "INVALID_ARGUMENT"],
    [Code.FailedPrecondition, 400, "FAILED_PRECONDITION"],
    [Code.OutOfRange, 400, "OUT_OF_RANGE"],
    [Code.Unauthenticated, 401, "UNAUTHENTICATED"],
    [Code.PermissionDenied, 403, "PERMISSION_DENIED"],
    [Code.NotFound, 404, "NOT_FOUND"],
    [Code.AlreadyExists, 409, "ALREADY_EXISTS"],
    [Code.Aborted, 409, "ABORTED"],
    [Code.ResourceExhausted, 429, "RESOURCE_EXHAUSTED"],
    [Code.Canceled, 499, "CANCELLED"],
    [Code.Unimplemented, 501, "UNIMPLEMENTED"],
    [Code.Unavailable, 503, "UNAVAILABLE"],
    [Code.DeadlineExceeded, 504, "DEADLINE_EXCEEDED"],
  ])("%i -> %i %s", (code, status, name) => {
    expect(httpStatusOf(code)).toBe(status);
    expect(statusNameOf(code)).toBe(name);
  });
});

describe("restErrorBody", () => {
  it("writes outgoing details (thrown in-process) as JSON with @type", () => {
    const body = restErrorBody(badField("unsubscriber.phone", "too long", "string.max_len"), registry);
    expect(body).toEqual({
      error: {
        code: 400,
        status: "INVALID_ARGUMENT",
        message: "unsubscriber.phone: too long",
        details: [
          {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            reason: "INVALID_ARGUMENT",
            domain: "switchboard",
            metadata: { violations: "1" },
          },
          {
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            fieldViolations: [
              { field: "unsubscriber.phone", description: "too long", reason: "string.max_len" },
            ],
          },
        ],
      },
    });
    expect(Object.keys(body.error.details[0] as object)[0]).toBe("@type");
  });

  it("writes incoming details (decoded from the wire) the same way", () => {
    const info = create(ErrorInfoSchema, { reason: "RESOURCE_NOT_FOUND", domain: "switchboard" });
    const err = new ConnectError("projects/p1/unsubscribers/u1 not found", Code.NotFound);
    err.details.push(
      { type: "google.rpc.ErrorInfo", value: toBinary(ErrorInfoSchema, info) },
      { type: "some.unknown.Detail", value: new Uint8Array([8, 1]) },
    );
    expect(restErrorBody(err, registry)).toEqual({
      error: {
        code: 404,
        status: "NOT_FOUND",
        message: "projects/p1/unsubscribers/u1 not found",
        details: [
          {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            reason: "RESOURCE_NOT_FOUND",
            domain: "switchboard",
          },
        ],
      },
    });
  });

  it("keeps ResourceInfo of NOT_FOUND", () => {
    const body = restErrorBody(
      notFound("messaging.api.enfonica.com/Unsubscriber", "projects/p1/unsubscribers/x"),
      registry,
    );
    expect(body.error.details.map((d) => (d as Record<string, string>)["@type"])).toEqual([
      "type.googleapis.com/google.rpc.ErrorInfo",
      "type.googleapis.com/google.rpc.ResourceInfo",
    ]);
  });

  it.each([Code.Internal, Code.Unknown, Code.DataLoss])(
    "never shows the message or details of code %i",
    (code) => {
      const err = new ConnectError("connection to db:5432 refused (password=hunter2)", code, undefined, [
        { desc: BadRequestSchema, value: {} },
      ]);
      expect(restErrorBody(err, registry)).toEqual({
        error: { code: 500, status: "INTERNAL", message: "internal error", details: [] },
      });
    },
  );

  it("takes an HTTP status override", () => {
    const err = new ConnectError("too big", Code.ResourceExhausted);
    expect(restErrorBody(err, registry, 413).error).toMatchObject({
      code: 413,
      status: "RESOURCE_EXHAUSTED",
    });
  });
});

describe("responseJson", () => {
  const { Req } = buildFixture();
  const message = create(Req, { name: "n", sub: { a: "x" }, tags: ["t"] } as never);

  it("writes the whole message in lowerCamelCase proto3 JSON", () => {
    const m = create(Req, { updateMask: { paths: ["a_b"] }, big: 5n } as never);
    expect(responseJson(Req, m, undefined, registry)).toEqual({ big: "5", updateMask: "aB" });
  });

  it("writes only the response_body field when set", () => {
    const field = Req.fields.find((f) => f.name === "sub")!;
    expect(responseJson(Req, message, field, registry)).toEqual({ a: "x" });
    const tags = Req.fields.find((f) => f.name === "tags")!;
    expect(responseJson(Req, message, tags, registry)).toEqual(["t"]);
  });

  it("writes the default of an unset response_body field", () => {
    const empty = create(Req);
    const find = (name: string) => Req.fields.find((f) => f.name === name)!;
    expect(responseJson(Req, empty, find("sub"), registry)).toEqual({});
    expect(responseJson(Req, empty, find("tags"), registry)).toEqual([]);
    expect(responseJson(Req, empty, find("labels"), registry)).toEqual({});
    expect(responseJson(Req, empty, find("name"), registry)).toBe("");
    expect(responseJson(Req, empty, find("big"), registry)).toBe("0");
  });
});
