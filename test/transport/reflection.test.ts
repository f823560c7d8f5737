import { create, createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import {
  type FileDescriptorProto,
  FileDescriptorProtoSchema,
  FileDescriptorSetSchema,
} from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { OPERATOR_AUTHORIZATION, type Running, runBuf, startApp, useAppDatabase } from "./helpers.js";

/**
 * Reflection is public: every reflection call here, buf curl's included,
 * is made without a credential, on purpose.
 */
const database = useAppDatabase();

type V1Request = Parameters<typeof create<typeof v1.ServerReflectionRequestSchema>>[1];

/** Sends `requests` on one v1 reflection stream and collects the answers. */
async function reflectV1(baseUrl: string, requests: V1Request[]): Promise<v1.ServerReflectionResponse[]> {
  const client = createClient(v1.ServerReflection, createGrpcTransport({ baseUrl }));
  async function* input() {
    for (const r of requests) yield create(v1.ServerReflectionRequestSchema, r);
  }
  const out: v1.ServerReflectionResponse[] = [];
  for await (const res of client.serverReflectionInfo(input())) out.push(res);
  return out;
}

function files(res: v1.ServerReflectionResponse | v1alpha.ServerReflectionResponse): FileDescriptorProto[] {
  if (res.messageResponse.case !== "fileDescriptorResponse") {
    throw new Error(`expected a file descriptor response, got ${res.messageResponse.case}`);
  }
  return res.messageResponse.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b));
}

describe("ServerReflection", () => {
  let server: Running;
  beforeAll(async () => {
    server = await startApp(database.db);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("lists every registered service, health and reflection included (v1)", async () => {
    const [res] = await reflectV1(server.baseUrl, [
      { host: "h", messageRequest: { case: "listServices", value: "" } },
    ]);
    expect(res?.validHost).toBe("h");
    expect(res?.originalRequest?.messageRequest.case).toBe("listServices");
    expect(res?.messageResponse.case).toBe("listServicesResponse");
    const names =
      res?.messageResponse.case === "listServicesResponse"
        ? res.messageResponse.value.service.map((s) => s.name)
        : [];
    for (const s of server.app.services) expect(names).toContain(s.desc.typeName);
    expect(names).toContain("grpc.health.v1.Health");
    expect(names).toContain("grpc.reflection.v1.ServerReflection");
    expect(names).toContain("grpc.reflection.v1alpha.ServerReflection");
    expect(new Set(names).size).toBe(names.length);
  });

  it("answers file_containing_symbol with the file first and its transitive dependencies (v1)", async () => {
    const answers = await reflectV1(server.baseUrl, [
      { messageRequest: { case: "fileContainingSymbol", value: "enfonica.numbering.v1beta1.PhoneNumbers" } },
      {
        messageRequest: {
          case: "fileContainingSymbol",
          value: "enfonica.numbering.v1beta1.PhoneNumbers.SearchPhoneNumbers",
        },
      },
      {
        messageRequest: {
          case: "fileContainingSymbol",
          value: "enfonica.numbering.v1beta1.SearchPhoneNumbersRequest",
        },
      },
      {
        messageRequest: {
          case: "fileContainingSymbol",
          value: "enfonica.numbering.v1beta1.PhoneNumber.PhoneNumberType",
        },
      },
      { messageRequest: { case: "fileContainingSymbol", value: "google.rpc.BadRequest.FieldViolation" } },
      { messageRequest: { case: "fileContainingSymbol", value: "google.protobuf.Timestamp" } },
    ]);
    expect(answers).toHaveLength(6);
    const [service, method, message, nestedEnum, errorDetail, wkt] = answers.map(files);
    for (const set of [service, method, message, nestedEnum]) {
      expect(set?.[0]?.name).toBe("enfonica/numbering/v1beta1/phone_numbers.proto");
    }
    expect(errorDetail?.[0]?.name).toBe("google/rpc/error_details.proto");
    expect(wkt?.[0]?.name).toBe("google/protobuf/timestamp.proto");

    const names = service!.map((f) => f.name);
    for (const dep of [
      "buf/validate/validate.proto",
      "google/api/annotations.proto",
      "google/api/http.proto",
      "google/api/client.proto",
      "google/api/field_behavior.proto",
      "google/api/resource.proto",
      "google/protobuf/descriptor.proto",
      "google/protobuf/duration.proto",
      "google/protobuf/timestamp.proto",
    ]) {
      expect(names).toContain(dep);
    }
    // The dependencies and JSON names that protobuf-es strips from embedded
    // descriptors are back.
    const phoneNumbers = service![0]!;
    expect(phoneNumbers.dependency).toContain("google/api/annotations.proto");
    const request = phoneNumbers.messageType.find((m) => m.name === "SearchPhoneNumbersRequest");
    expect(request?.field.find((f) => f.name === "country_code")?.jsonName).toBe("countryCode");
  });

  it("answers with files that link into a complete registry", async () => {
    const [res] = await reflectV1(server.baseUrl, [
      {
        messageRequest: {
          case: "fileContainingSymbol",
          value: "enfonica.numbering.v1beta1.PhoneNumberInstances",
        },
      },
    ]);
    const received = files(res!);
    // Link the answer alone, imports first; a missing import throws.
    const ordered: FileDescriptorProto[] = [];
    const visit = (name: string) => {
      if (ordered.some((f) => f.name === name)) return;
      const file = received.find((f) => f.name === name);
      if (!file) throw new Error(`${name} is missing from the answer`);
      for (const dep of file.dependency) visit(dep);
      ordered.push(file);
    };
    visit(received[0]!.name);
    expect(ordered).toHaveLength(received.length);
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: ordered }));
    const service = registry.getService("enfonica.numbering.v1beta1.PhoneNumberInstances");
    expect(service?.methods.length).toBeGreaterThan(0);
    expect(registry.getMessage("google.protobuf.FieldMask")).toBeDefined();
    expect(registry.getExtension("google.api.http")).toBeDefined();
  });

  it("answers file_by_filename, file_containing_extension and all_extension_numbers_of_type", async () => {
    const [byName, byExtension, numbers, unknownType] = await reflectV1(server.baseUrl, [
      { messageRequest: { case: "fileByFilename", value: "google/api/annotations.proto" } },
      {
        messageRequest: {
          case: "fileContainingExtension",
          value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 72295728 },
        },
      },
      { messageRequest: { case: "allExtensionNumbersOfType", value: "google.protobuf.FieldOptions" } },
      { messageRequest: { case: "allExtensionNumbersOfType", value: "no.such.Type" } },
    ]);
    expect(files(byName!).map((f) => f.name)).toEqual([
      "google/api/annotations.proto",
      "google/api/http.proto",
      "google/protobuf/descriptor.proto",
    ]);
    expect(files(byExtension!)[0]?.name).toBe("google/api/annotations.proto");
    expect(numbers?.messageResponse.case).toBe("allExtensionNumbersResponse");
    if (numbers?.messageResponse.case === "allExtensionNumbersResponse") {
      expect(numbers.messageResponse.value.baseTypeName).toBe("google.protobuf.FieldOptions");
      // google.api.field_behavior, google.api.resource_reference, buf.validate.field
      expect(numbers.messageResponse.value.extensionNumber).toEqual(
        expect.arrayContaining([1052, 1055, 1159]),
      );
    }
    expect(unknownType?.messageResponse).toMatchObject({ case: "errorResponse", value: { errorCode: 5 } });
  });

  it("answers NOT_FOUND in an ErrorResponse and keeps the stream going", async () => {
    const answers = await reflectV1(server.baseUrl, [
      { messageRequest: { case: "fileContainingSymbol", value: "no.such.Symbol" } },
      { messageRequest: { case: "fileByFilename", value: "no/such/file.proto" } },
      {
        messageRequest: {
          case: "fileContainingExtension",
          value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 1 },
        },
      },
      { messageRequest: { case: "listServices", value: "*" } },
    ]);
    for (const res of answers.slice(0, 3)) {
      expect(res.messageResponse.case).toBe("errorResponse");
      if (res.messageResponse.case === "errorResponse") {
        expect(res.messageResponse.value.errorCode).toBe(5);
        expect(res.messageResponse.value.errorMessage).not.toBe("");
      }
    }
    expect(answers[3]?.messageResponse.case).toBe("listServicesResponse");
  });

  it("answers the v1alpha protocol the same way, over Connect on HTTP/2 too", async () => {
    const client = createClient(
      v1alpha.ServerReflection,
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "2", useBinaryFormat: true }),
    );
    async function* input() {
      yield create(v1alpha.ServerReflectionRequestSchema, {
        messageRequest: { case: "listServices", value: "" },
      });
      yield create(v1alpha.ServerReflectionRequestSchema, {
        messageRequest: { case: "fileContainingSymbol", value: "grpc.health.v1.Health" },
      });
      yield create(v1alpha.ServerReflectionRequestSchema, {
        messageRequest: { case: "fileContainingSymbol", value: "no.such.Symbol" },
      });
    }
    const out: v1alpha.ServerReflectionResponse[] = [];
    for await (const res of client.serverReflectionInfo(input())) out.push(res);
    expect(out).toHaveLength(3);
    expect(out[0]?.$typeName).toBe("grpc.reflection.v1alpha.ServerReflectionResponse");
    const names =
      out[0]?.messageResponse.case === "listServicesResponse"
        ? out[0].messageResponse.value.service.map((s) => s.name)
        : [];
    expect(names).toContain("enfonica.numbering.v1beta1.PhoneNumbers");
    expect(names).toContain("grpc.reflection.v1alpha.ServerReflection");
    expect(files(out[1]!).map((f) => f.name)).toEqual(["grpc/health/v1/health.proto"]);
    expect(out[2]?.messageResponse).toMatchObject({ case: "errorResponse", value: { errorCode: 5 } });
  });
});

describe("ServerReflection with buf curl", () => {
  let server: Running;
  beforeAll(async () => {
    server = await startApp(database.db);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("lists every method through reflection", async () => {
    const out = await runBuf([
      "curl",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "--list-methods",
      server.baseUrl,
    ]);
    expect(out.stderr).toBe("");
    expect(out.code).toBe(0);
    const methods = out.stdout.trim().split("\n");
    expect(methods).toContain("enfonica.numbering.v1beta1.PhoneNumbers/SearchPhoneNumbers");
    expect(methods).toContain("grpc.health.v1.Health/Watch");
    expect(methods).toContain("grpc.reflection.v1.ServerReflection/ServerReflectionInfo");
    for (const s of server.app.services) {
      for (const m of s.desc.methods) expect(methods).toContain(`${s.desc.typeName}/${m.name}`);
    }
  });

  it("calls an RPC with JSON built from the reflected schema (gRPC)", async () => {
    const out = await runBuf([
      "curl",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-H",
      `Authorization: ${OPERATOR_AUTHORIZATION}`,
      "-d",
      '{"country_code": "au", "page_size": 5, "number_type": "MOBILE"}',
      `${server.baseUrl}/enfonica.numbering.v1beta1.PhoneNumbers/SearchPhoneNumbers`,
    ]);
    expect(out.code).not.toBe(0);
    const error = JSON.parse(out.stderr) as {
      code: string;
      message: string;
      details: Array<{ type: string }>;
    };
    expect(error.code).toBe("invalid_argument");
    expect(error.message).toBe("country_code: does not match regex pattern `^[A-Z]{2}$`");
    expect(error.details.map((d) => d.type)).toContain("google.rpc.BadRequest");
  });

  it("reflects without a credential but calls the RPC only with one", async () => {
    const out = await runBuf([
      "curl",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-d",
      '{"country_code": "au"}',
      `${server.baseUrl}/enfonica.numbering.v1beta1.PhoneNumbers/SearchPhoneNumbers`,
    ]);
    expect(out.code).not.toBe(0);
    const error = JSON.parse(out.stderr) as { code: string; message: string };
    expect(error.code).toBe("unauthenticated");
    expect(error.message).toBe("missing credentials: send 'Authorization: Bearer <api key secret>'");
  });

  it("calls health Check over gRPC and over Connect", async () => {
    for (const protocol of ["grpc", "connect"]) {
      const out = await runBuf([
        "curl",
        "--protocol",
        protocol,
        "--http2-prior-knowledge",
        "-d",
        `{"service": "enfonica.numbering.v1beta1.PhoneNumbers"}`,
        `${server.baseUrl}/grpc.health.v1.Health/Check`,
      ]);
      expect(out.stderr).toBe("");
      expect(out.code).toBe(0);
      expect(JSON.parse(out.stdout)).toEqual({ status: "SERVING" });
    }
  });

  it("rejects JSON that does not fit the reflected schema before sending it", async () => {
    const out = await runBuf([
      "curl",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-d",
      '{"no_such_field": 1}',
      `${server.baseUrl}/enfonica.numbering.v1beta1.PhoneNumbers/SearchPhoneNumbers`,
    ]);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain("no_such_field");
  });
});
