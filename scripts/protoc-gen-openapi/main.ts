/**
 * protoc-gen-openapi: OpenAPI 3.1 documents of the REST API, from the
 * `google.api.http` rules of the protos, written at `buf generate` time
 * (buf.gen.yaml runs it with `strategy: all`, so it sees every file at once).
 *
 * Two documents, for two audiences with two kinds of credentials:
 *
 * - `openapi/public.openapi.json`: the public API (every package but
 *   `switchboard.admin.*`), called with API keys;
 * - `openapi/admin.openapi.json`: the operator's admin API
 *   (`switchboard.admin.v1`, `/admin/v1/...`), called with the operator token.
 *
 * A client generated from the public document then carries no operator
 * methods. Written with @bufbuild/protoplugin's plain Plugin interface: the
 * output is JSON, not ECMAScript.
 */
import { create, createFileRegistry, type DescService } from "@bufbuild/protobuf";
import {
  type CodeGeneratorRequest,
  CodeGeneratorResponse_Feature,
  CodeGeneratorResponseSchema,
  FileDescriptorSetSchema,
} from "@bufbuild/protobuf/wkt";
import { type Plugin, runNodeJs } from "@bufbuild/protoplugin";
import { buildDocument, type DocumentSpec } from "./document.js";
import { findExtensions } from "./schemas.js";

const ADMIN_PACKAGE = "switchboard.admin.";

const DOCUMENTS: Array<DocumentSpec & { file: string; include: (s: DescService) => boolean }> = [
  {
    file: "openapi/public.openapi.json",
    title: "Switchboard API",
    description:
      "The public REST API of Switchboard: numbering (regulatory listings, phone numbers, phone number " +
      "instances), voice (SIP domains and aliases, calls, recordings) and messaging (messages, " +
      "unsubscribers). Proto3 JSON over the `google.api.http` paths of the `enfonica` protos; the same " +
      "methods are served over gRPC, gRPC-Web and Connect on the same port.",
    securityDescription: "An API key secret (`Authorization: Bearer sb_...`), created through the admin API.",
    include: (s) => !s.typeName.startsWith(ADMIN_PACKAGE),
  },
  {
    file: "openapi/admin.openapi.json",
    title: "Switchboard admin API",
    description:
      "The operator's API (`switchboard.admin.v1`): projects and their webhook signing keys, API keys, " +
      "number inventory, reviews and suspensions, webhook deliveries and the carrier simulator.",
    securityDescription: "The operator token (`SWITCHBOARD_OPERATOR_TOKEN`, or `data/operator-token`).",
    include: (s) => s.typeName.startsWith(ADMIN_PACKAGE),
  },
];

function run(request: CodeGeneratorRequest) {
  const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: request.protoFile }));
  const ext = findExtensions(registry);
  const services: DescService[] = [];
  for (const name of [...request.fileToGenerate].sort()) {
    const file = registry.getFile(name);
    if (file === undefined) throw new Error(`file ${name} is not in the request`);
    services.push(...file.services);
  }
  const file = DOCUMENTS.map((spec) => {
    const doc = buildDocument(services.filter(spec.include), ext, spec);
    return { name: spec.file, content: `${JSON.stringify(doc, null, 2)}\n` };
  });
  return create(CodeGeneratorResponseSchema, {
    supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
    file,
  });
}

const plugin: Plugin = { name: "protoc-gen-openapi", version: "1.0.0", run };
runNodeJs(plugin);
