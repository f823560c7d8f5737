/**
 * An independent gRPC client for the tests: @grpc/grpc-js with the .proto
 * files loaded by @grpc/proto-loader (nothing of protobuf-es or Connect).
 */
import { fromBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { protoDir } from "./helpers.js";

export { grpc };

// biome-ignore lint/suspicious/noExplicitAny: proto-loader clients are untyped
type AnyClient = grpc.Client & Record<string, any>;
type ClientCtor = new (address: string, credentials: grpc.ChannelCredentials) => AnyClient;

export async function loadClients(): Promise<{ PhoneNumbers: ClientCtor; Health: ClientCtor }> {
  const def = await protoLoader.load(
    ["enfonica/numbering/v1beta1/phone_numbers.proto", "grpc/health/v1/health.proto"],
    { includeDirs: [protoDir], keepCase: true, longs: String, enums: String, defaults: true, oneofs: true },
  );
  const pkg = grpc.loadPackageDefinition(def);
  const lookup = (path: string) =>
    path.split(".").reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], pkg) as ClientCtor;
  return {
    PhoneNumbers: lookup("enfonica.numbering.v1beta1.PhoneNumbers"),
    Health: lookup("grpc.health.v1.Health"),
  };
}

export interface UnaryOutcome {
  // biome-ignore lint/suspicious/noExplicitAny: proto-loader messages are untyped
  response?: any;
  error?: grpc.ServiceError;
}

/**
 * Calls a unary method and settles with its response or its error; with
 * `token`, as its bearer (metadata `authorization`), otherwise without a
 * credential.
 */
export function unary(
  client: AnyClient,
  method: string,
  request: object,
  options: { token?: string; deadlineMs?: number } = {},
): Promise<UnaryOutcome> {
  const metadata = new grpc.Metadata();
  if (options.token !== undefined) metadata.set("authorization", `Bearer ${options.token}`);
  return new Promise((resolve) => {
    client[method](
      request,
      metadata,
      { deadline: Date.now() + (options.deadlineMs ?? 10_000) },
      (error: grpc.ServiceError | null, response: unknown) => {
        resolve(error ? { error } : { response });
      },
    );
  });
}

/** The fields named by the BadRequest detail of an error's `grpc-status-details-bin`. */
export function badRequestFields(error: grpc.ServiceError): string[] {
  const raw = error.metadata.get("grpc-status-details-bin")[0];
  if (raw === undefined) return [];
  const status = fromBinary(StatusSchema, raw as Buffer);
  const fields: string[] = [];
  for (const any of status.details) {
    const br = anyUnpack(any, BadRequestSchema);
    if (br) fields.push(...br.fieldViolations.map((v) => v.field));
  }
  return fields;
}
