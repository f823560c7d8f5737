/**
 * gRPC server reflection (`grpc.reflection.v1.ServerReflection` and the
 * older `grpc.reflection.v1alpha.ServerReflection`, which has the same
 * messages in another package) as ordinary Connect services, so that
 * grpcurl, `buf curl`, Postman and friends can discover and call the API
 * without the protos. connect-es has none (connectrpc/connect-es#507).
 *
 * Answers come from the file descriptors embedded in the generated code:
 * protobuf-es v2 keeps each file's FileDescriptorProto (`DescFile.proto`),
 * minus source info, with dependencies and JSON names restored when the file
 * is loaded. Every file response carries the file and all its transitive
 * dependencies, google/protobuf/* and buf/validate/* included, so a client
 * can build a complete descriptor pool from one answer.
 */
import { create, type DescFile, type DescMessage, type DescService, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { file_google_rpc_status } from "../../gen/google/rpc/status_pb.js";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** The reflection services themselves, which reflection also lists. */
export const reflectionServiceDescs: readonly DescService[] = [v1.ServerReflection, v1alpha.ServerReflection];

/** What both protocol versions ask, structurally. */
export interface ReflectionRequest {
  host: string;
  messageRequest:
    | {
        case: "fileByFilename" | "fileContainingSymbol" | "allExtensionNumbersOfType" | "listServices";
        value: string;
      }
    | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
    | { case: undefined; value?: undefined };
}

/** What both protocol versions answer, structurally. */
export type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/**
 * An index of every file reachable from the served services: by file name,
 * by fully-qualified symbol, and by extendee and extension number.
 */
export class DescriptorIndex {
  readonly serviceNames: readonly string[];
  private readonly files = new Map<string, DescFile>();
  private readonly symbols = new Map<string, DescFile>();
  private readonly messages = new Map<string, DescMessage>();
  private readonly extensions = new Map<string, Map<number, DescFile>>();
  private readonly closures = new Map<DescFile, Uint8Array[]>();
  private readonly serialized = new Map<DescFile, Uint8Array>();

  /**
   * `extraFiles` are made resolvable without being any service's
   * dependency, such as the `google.rpc` error detail types that clients
   * look up to decode `grpc-status-details-bin`.
   */
  constructor(services: readonly DescService[], extraFiles: readonly DescFile[] = []) {
    const names: string[] = [];
    for (const service of services) {
      if (!names.includes(service.typeName)) names.push(service.typeName);
      this.addFile(service.file);
    }
    for (const file of extraFiles) this.addFile(file);
    this.serviceNames = names;
  }

  private addFile(file: DescFile): void {
    // DescFile.name drops the ".proto" suffix; reflection speaks in proto paths.
    const path = file.proto.name;
    if (this.files.has(path)) return;
    this.files.set(path, file);
    for (const dep of file.dependencies) this.addFile(dep);
    for (const service of file.services) {
      this.symbols.set(service.typeName, file);
      for (const method of service.methods) this.symbols.set(`${service.typeName}.${method.name}`, file);
    }
    for (const message of file.messages) this.addMessage(file, message);
    for (const e of file.enums) this.addEnum(file, e);
    for (const ext of file.extensions) this.addExtension(file, ext);
  }

  private addMessage(file: DescFile, message: DescMessage): void {
    this.symbols.set(message.typeName, file);
    this.messages.set(message.typeName, message);
    for (const field of message.fields) this.symbols.set(`${message.typeName}.${field.name}`, file);
    for (const oneof of message.oneofs) this.symbols.set(`${message.typeName}.${oneof.name}`, file);
    for (const nested of message.nestedMessages) this.addMessage(file, nested);
    for (const e of message.nestedEnums) this.addEnum(file, e);
    for (const ext of message.nestedExtensions) this.addExtension(file, ext);
  }

  private addEnum(file: DescFile, e: DescFile["enums"][number]): void {
    this.symbols.set(e.typeName, file);
    // Enum values are scoped like their enum's siblings (C++ scoping rules).
    const dot = e.typeName.lastIndexOf(".");
    const scope = dot === -1 ? "" : `${e.typeName.slice(0, dot)}.`;
    for (const value of e.values) this.symbols.set(`${scope}${value.name}`, file);
  }

  private addExtension(file: DescFile, ext: DescFile["extensions"][number]): void {
    this.symbols.set(ext.typeName, file);
    let byNumber = this.extensions.get(ext.extendee.typeName);
    if (!byNumber) {
      byNumber = new Map();
      this.extensions.set(ext.extendee.typeName, byNumber);
    }
    byNumber.set(ext.number, file);
  }

  fileByName(name: string): DescFile | undefined {
    return this.files.get(name);
  }

  fileContainingSymbol(symbol: string): DescFile | undefined {
    return this.symbols.get(symbol.startsWith(".") ? symbol.slice(1) : symbol);
  }

  fileContainingExtension(containingType: string, extensionNumber: number): DescFile | undefined {
    return this.extensions.get(trimDot(containingType))?.get(extensionNumber);
  }

  /** Extension numbers of a message type; undefined when the type is unknown. */
  extensionNumbers(typeName: string): number[] | undefined {
    const name = trimDot(typeName);
    if (!this.messages.has(name)) return undefined;
    return [...(this.extensions.get(name)?.keys() ?? [])].sort((a, b) => a - b);
  }

  /** The serialized FileDescriptorProto of `file` followed by those of its transitive dependencies. */
  withDependencies(file: DescFile): Uint8Array[] {
    let out = this.closures.get(file);
    if (!out) {
      const seen = new Set<DescFile>();
      const order: DescFile[] = [];
      const visit = (f: DescFile) => {
        if (seen.has(f)) return;
        seen.add(f);
        order.push(f);
        for (const dep of f.dependencies) visit(dep);
      };
      visit(file);
      out = order.map((f) => this.bytes(f));
      this.closures.set(file, out);
    }
    return out;
  }

  private bytes(file: DescFile): Uint8Array {
    let b = this.serialized.get(file);
    if (!b) {
      b = toBinary(FileDescriptorProtoSchema, file.proto);
      this.serialized.set(file, b);
    }
    return b;
  }

  /** The answer to one reflection request. */
  answer(req: ReflectionRequest): ReflectionAnswer {
    const r = req.messageRequest;
    switch (r.case) {
      case "fileByFilename": {
        const file = this.fileByName(r.value);
        return file ? this.fileAnswer(file) : notFound(`file ${JSON.stringify(r.value)} not found`);
      }
      case "fileContainingSymbol": {
        const file = this.fileContainingSymbol(r.value);
        return file ? this.fileAnswer(file) : notFound(`symbol ${JSON.stringify(r.value)} not found`);
      }
      case "fileContainingExtension": {
        const file = this.fileContainingExtension(r.value.containingType, r.value.extensionNumber);
        return file
          ? this.fileAnswer(file)
          : notFound(
              `extension ${r.value.extensionNumber} of ${JSON.stringify(r.value.containingType)} not found`,
            );
      }
      case "allExtensionNumbersOfType": {
        const numbers = this.extensionNumbers(r.value);
        return numbers
          ? {
              case: "allExtensionNumbersResponse",
              value: { baseTypeName: trimDot(r.value), extensionNumber: numbers },
            }
          : notFound(`type ${JSON.stringify(r.value)} not found`);
      }
      case "listServices":
        return {
          case: "listServicesResponse",
          value: { service: this.serviceNames.map((name) => ({ name })) },
        };
      default:
        return {
          case: "errorResponse",
          value: { errorCode: Code.InvalidArgument, errorMessage: "message_request is required" },
        };
    }
  }

  private fileAnswer(file: DescFile): ReflectionAnswer {
    return { case: "fileDescriptorResponse", value: { fileDescriptorProto: this.withDependencies(file) } };
  }
}

function trimDot(name: string): string {
  return name.startsWith(".") ? name.slice(1) : name;
}

function notFound(errorMessage: string): ReflectionAnswer {
  return { case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage } };
}

export interface ReflectionServices {
  index: DescriptorIndex;
  v1: ServiceImpl<typeof v1.ServerReflection>;
  v1alpha: ServiceImpl<typeof v1alpha.ServerReflection>;
}

/**
 * Reflection over `services` (the reflection services are added to the list
 * if missing, so that they describe themselves too). The error model's
 * files (`google.rpc.Status` and the error details) are always resolvable.
 */
export function createReflectionServices(
  services: readonly DescService[],
  extraFiles: readonly DescFile[] = [file_google_rpc_status, file_google_rpc_error_details],
): ReflectionServices {
  const all = [...services];
  for (const desc of reflectionServiceDescs) if (!all.includes(desc)) all.push(desc);
  const index = new DescriptorIndex(all, extraFiles);
  return {
    index,
    v1: {
      async *serverReflectionInfo(requests) {
        for await (const req of requests) {
          yield create(v1.ServerReflectionResponseSchema, {
            validHost: req.host,
            originalRequest: req,
            messageResponse: index.answer(req),
          });
        }
      },
    },
    v1alpha: {
      async *serverReflectionInfo(requests) {
        for await (const req of requests) {
          yield create(v1alpha.ServerReflectionResponseSchema, {
            validHost: req.host,
            originalRequest: req,
            messageResponse: index.answer(req),
          });
        }
      },
    },
  };
}
