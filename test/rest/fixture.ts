/**
 * A small synthetic service, built as a descriptor in memory, for the parts
 * of the transcoding spec the real protos do not use: additional_bindings,
 * `**`, single-segment variables, a custom HTTP method, response_body,
 * int64 / Duration / wrappers / repeated query parameters. As if written:
 *
 *     package test.v1;
 *     message Sub { string a = 1; int64 b = 2; }
 *     message Item { string name = 1; string title = 2; Sub sub = 3; }
 *     message Req {
 *       enum Color { COLOR_UNSPECIFIED = 0; RED = 1; GREEN = 2; }
 *       string name = 1; int64 big = 2; repeated string tags = 3;
 *       repeated Color colors = 4; Color color = 5; bool flag = 6;
 *       google.protobuf.Timestamp at = 7; google.protobuf.Duration wait = 8;
 *       google.protobuf.FieldMask update_mask = 9;
 *       google.protobuf.Int32Value limit = 10; Sub sub = 11;
 *       map<string, string> labels = 12; repeated Sub subs = 13;
 *       Item item = 14; string path = 15; double ratio = 16;
 *       uint64 ubig = 17; bytes data = 18;
 *     }
 *     service Things {
 *       rpc GetThing(Req) returns (Req) {
 *         get: "/v1/{name=things/*}"
 *         additional_bindings { get: "/v1/{name=shelves/*\/things/*}" } }
 *       rpc GetSpecial(Req) returns (Req) { get: "/v1/things/special" }
 *       rpc GetDeep(Req) returns (Req) { get: "/v1/{path=things/**}" }
 *       rpc CancelThing(Req) returns (Req) { post: "/v1/{name=things/*}:cancel" body: "*" }
 *       rpc UpdateThing(Req) returns (Req) { patch: "/v1/{item.name=things/*}" body: "item" }
 *       rpc ListFiles(Req) returns (Req) { get: "/v1/files/{path=**}" }
 *       rpc Probe(Req) returns (Req) { custom { kind: "HEAD" path: "/v1/probe" } }
 *       rpc Echo(Req) returns (Req) { post: "/v1/echo/{name}" body: "*" }
 *       rpc EchoSub(Req) returns (Req) { get: "/v1/echo/{name}/sub" response_body: "sub" }
 *       rpc EchoTags(Req) returns (Req) { post: "/v1/tags" body: "tags" }
 *     }
 */
import {
  create,
  createFileRegistry,
  type DescMessage,
  type DescService,
  type MessageInitShape,
  setExtension,
} from "@bufbuild/protobuf";
import {
  type FieldDescriptorProto,
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  type FieldDescriptorProtoSchema,
  FileDescriptorProtoSchema,
  file_google_protobuf_duration,
  file_google_protobuf_field_mask,
  file_google_protobuf_timestamp,
  file_google_protobuf_wrappers,
  MethodOptionsSchema,
} from "@bufbuild/protobuf/wkt";
import { http } from "../../gen/google/api/annotations_pb.js";
import { type HttpRule, HttpRuleSchema } from "../../gen/google/api/http_pb.js";

const T = FieldDescriptorProto_Type;
const L = FieldDescriptorProto_Label;

type FieldInit = MessageInitShape<typeof FieldDescriptorProtoSchema>;

function field(
  name: string,
  number: number,
  type: FieldDescriptorProto_Type,
  extra: Partial<Pick<FieldDescriptorProto, "typeName" | "label">> = {},
): FieldInit {
  const jsonName = name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  return { name, number, type, label: L.OPTIONAL, jsonName, ...extra };
}

function options(rule: MessageInitShape<typeof HttpRuleSchema>) {
  const opts = create(MethodOptionsSchema);
  setExtension(opts, http, create(HttpRuleSchema, rule) as HttpRule);
  return opts;
}

export interface Fixture {
  Things: DescService;
  Req: DescMessage;
  Item: DescMessage;
  Sub: DescMessage;
}

/** Builds the synthetic `test.v1.Things` service; its http rules as above. */
export function buildFixture(
  rules: Record<string, MessageInitShape<typeof HttpRuleSchema>> = defaultRules,
): Fixture {
  const proto = create(FileDescriptorProtoSchema, {
    name: "test/v1/things.proto",
    package: "test.v1",
    syntax: "proto3",
    dependency: [
      "google/protobuf/timestamp.proto",
      "google/protobuf/duration.proto",
      "google/protobuf/field_mask.proto",
      "google/protobuf/wrappers.proto",
    ],
    messageType: [
      { name: "Sub", field: [field("a", 1, T.STRING), field("b", 2, T.INT64)] },
      {
        name: "Item",
        field: [
          field("name", 1, T.STRING),
          field("title", 2, T.STRING),
          field("sub", 3, T.MESSAGE, { typeName: ".test.v1.Sub" }),
        ],
      },
      {
        name: "Req",
        enumType: [
          {
            name: "Color",
            value: [
              { name: "COLOR_UNSPECIFIED", number: 0 },
              { name: "RED", number: 1 },
              { name: "GREEN", number: 2 },
            ],
          },
        ],
        nestedType: [
          {
            name: "LabelsEntry",
            field: [field("key", 1, T.STRING), field("value", 2, T.STRING)],
            options: { mapEntry: true },
          },
        ],
        field: [
          field("name", 1, T.STRING),
          field("big", 2, T.INT64),
          field("tags", 3, T.STRING, { label: L.REPEATED }),
          field("colors", 4, T.ENUM, { label: L.REPEATED, typeName: ".test.v1.Req.Color" }),
          field("color", 5, T.ENUM, { typeName: ".test.v1.Req.Color" }),
          field("flag", 6, T.BOOL),
          field("at", 7, T.MESSAGE, { typeName: ".google.protobuf.Timestamp" }),
          field("wait", 8, T.MESSAGE, { typeName: ".google.protobuf.Duration" }),
          field("update_mask", 9, T.MESSAGE, { typeName: ".google.protobuf.FieldMask" }),
          field("limit", 10, T.MESSAGE, { typeName: ".google.protobuf.Int32Value" }),
          field("sub", 11, T.MESSAGE, { typeName: ".test.v1.Sub" }),
          field("labels", 12, T.MESSAGE, { label: L.REPEATED, typeName: ".test.v1.Req.LabelsEntry" }),
          field("subs", 13, T.MESSAGE, { label: L.REPEATED, typeName: ".test.v1.Sub" }),
          field("item", 14, T.MESSAGE, { typeName: ".test.v1.Item" }),
          field("path", 15, T.STRING),
          field("ratio", 16, T.DOUBLE),
          field("ubig", 17, T.UINT64),
          field("data", 18, T.BYTES),
        ],
      },
    ],
    service: [
      {
        name: "Things",
        method: Object.entries(rules).map(([name, rule]) => ({
          name,
          inputType: ".test.v1.Req",
          outputType: ".test.v1.Req",
          options: options(rule),
        })),
      },
    ],
  });
  const registry = createFileRegistry(
    proto,
    (name) =>
      ({
        "google/protobuf/timestamp.proto": file_google_protobuf_timestamp,
        "google/protobuf/duration.proto": file_google_protobuf_duration,
        "google/protobuf/field_mask.proto": file_google_protobuf_field_mask,
        "google/protobuf/wrappers.proto": file_google_protobuf_wrappers,
      })[name],
  );
  return {
    Things: registry.getService("test.v1.Things")!,
    Req: registry.getMessage("test.v1.Req")!,
    Item: registry.getMessage("test.v1.Item")!,
    Sub: registry.getMessage("test.v1.Sub")!,
  };
}

export const defaultRules: Record<string, MessageInitShape<typeof HttpRuleSchema>> = {
  GetThing: {
    pattern: { case: "get", value: "/v1/{name=things/*}" },
    additionalBindings: [{ pattern: { case: "get", value: "/v1/{name=shelves/*/things/*}" } }],
  },
  GetSpecial: { pattern: { case: "get", value: "/v1/things/special" } },
  GetDeep: { pattern: { case: "get", value: "/v1/{path=things/**}" } },
  CancelThing: { pattern: { case: "post", value: "/v1/{name=things/*}:cancel" }, body: "*" },
  UpdateThing: { pattern: { case: "patch", value: "/v1/{item.name=things/*}" }, body: "item" },
  ListFiles: { pattern: { case: "get", value: "/v1/files/{path=**}" } },
  Probe: { pattern: { case: "custom", value: { kind: "HEAD", path: "/v1/probe" } } },
  Echo: { pattern: { case: "post", value: "/v1/echo/{name}" }, body: "*" },
  EchoSub: { pattern: { case: "get", value: "/v1/echo/{name}/sub" }, responseBody: "sub" },
  EchoTags: { pattern: { case: "post", value: "/v1/tags" }, body: "tags" },
};
