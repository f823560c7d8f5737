import { createRegistry, type JsonValue, type Message, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Messages } from "../../gen/enfonica/messaging/v1/messages_pb.js";
import { Unsubscribers } from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { PhoneNumberInstances } from "../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { PhoneNumbers } from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { RegulatoryListings } from "../../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { buildRequest } from "../../src/transport/rest/request.js";
import { compileRoutes, type RouteTable } from "../../src/transport/rest/routes.js";
import { buildFixture } from "./fixture.js";

const real = compileRoutes(
  [PhoneNumbers, PhoneNumberInstances, RegulatoryListings, Unsubscribers, Messages].map((desc) => ({ desc })),
);
const fixture = buildFixture();
const synthetic = compileRoutes([{ desc: fixture.Things }]);
const registry = createRegistry(fixture.Things.file);

function map(
  table: RouteTable,
  method: string,
  url: string,
  body = "",
): { message: Message; json: JsonValue } {
  const q = url.indexOf("?");
  const path = q < 0 ? url : url.slice(0, q);
  const found = table.lookup(method, path);
  if (found.kind !== "match") throw new Error(`no route for ${method} ${path}: ${found.kind}`);
  const message = buildRequest(
    found.route,
    { bindings: found.bindings, query: q < 0 ? "" : url.slice(q + 1), body: new TextEncoder().encode(body) },
    registry,
  );
  return { message, json: toJson(found.route.method.input, message, { registry }) };
}

/** The INVALID_ARGUMENT the mapping throws, as { message, fields, reason }. */
function mapError(table: RouteTable, method: string, url: string, body = "") {
  try {
    map(table, method, url, body);
  } catch (err) {
    if (!(err instanceof ConnectError)) throw err;
    expect(err.code).toBe(Code.InvalidArgument);
    const [badRequest] = err.findDetails(BadRequestSchema);
    const [info] = err.findDetails(ErrorInfoSchema);
    return {
      message: err.rawMessage,
      fields: badRequest?.fieldViolations.map((v) => v.field) ?? [],
      reason: info?.reason,
    };
  }
  throw new Error("expected an error");
}

describe("query parameters -> request message", () => {
  it.each<[string, string, string, JsonValue]>([
    [
      "ListUnsubscribers (paging, lowerCamelCase)",
      "GET",
      "/v1/projects/p1/unsubscribers?pageSize=5&pageToken=abc&phone=%2B61491570156",
      { parent: "projects/p1", pageSize: 5, pageToken: "abc", phone: "+61491570156" },
    ],
    [
      "ListUnsubscribers (proto names)",
      "GET",
      "/v1/projects/p1/unsubscribers?page_size=5&page_token=abc",
      { parent: "projects/p1", pageSize: 5, pageToken: "abc" },
    ],
    [
      "ListUnsubscribers (+ is a space in a query, as in any form encoding)",
      "GET",
      "/v1/projects/p1/unsubscribers?phone=+61",
      { parent: "projects/p1", phone: " 61" },
    ],
    [
      "SearchRegulatoryListings (enum by name)",
      "GET",
      "/v1beta1/projects/p1/regulatoryListings:search?regionCode=AU&numberType=MOBILE",
      { parent: "projects/p1", regionCode: "AU", numberType: "MOBILE" },
    ],
    [
      "SearchRegulatoryListings (enum by number)",
      "GET",
      "/v1beta1/projects/p1/regulatoryListings:search?region_code=AU&number_type=4",
      { parent: "projects/p1", regionCode: "AU", numberType: "TOLL_FREE" },
    ],
    [
      "SearchPhoneNumbers (bools)",
      "GET",
      "/v1beta1/phoneNumbers:search?countryCode=AU&supportsVoice=true&supports_sms=1&supportsMms=FALSE",
      { countryCode: "AU", supportsVoice: true, supportsSms: true },
    ],
    [
      "ListMessages (Timestamps, RFC 3339)",
      "GET",
      "/v1/projects/p1/messages?startTime=2024-01-02T03:04:05Z&end_time=2024-01-02T13:04:05.5%2B10:00",
      { parent: "projects/p1", startTime: "2024-01-02T03:04:05Z", endTime: "2024-01-02T03:04:05.500Z" },
    ],
    [
      "UpdateUnsubscriber (FieldMask, lowerCamelCase parameter and paths)",
      "PATCH",
      "/v1/projects/p1/unsubscribers/u1?updateMask=labels,unsubscribeMethod",
      { unsubscriber: { name: "projects/p1/unsubscribers/u1" }, updateMask: "labels,unsubscribeMethod" },
    ],
    [
      "UpdateUnsubscriber (FieldMask, proto names)",
      "PATCH",
      "/v1/projects/p1/unsubscribers/u1?update_mask=labels,unsubscribe_method",
      { unsubscriber: { name: "projects/p1/unsubscribers/u1" }, updateMask: "labels,unsubscribeMethod" },
    ],
    [
      "UpdateUnsubscriber (FieldMask *)",
      "PATCH",
      "/v1/projects/p1/unsubscribers/u1?update_mask=*",
      { unsubscriber: { name: "projects/p1/unsubscribers/u1" }, updateMask: "*" },
    ],
    [
      "UpdateUnsubscriber (FieldMask in both spellings is one parameter)",
      "PATCH",
      "/v1/projects/p1/unsubscribers/u1?update_mask=labels&updateMask=phone",
      { unsubscriber: { name: "projects/p1/unsubscribers/u1" }, updateMask: "labels,phone" },
    ],
    [
      "GetThing (64-bit, repeated, enums, WKTs, nested)",
      "GET",
      "/v1/things/t1?big=-9007199254740993&ubig=18446744073709551615&tags=a&tags=b%20c&colors=RED&colors=2" +
        "&color=GREEN&flag=true&at=2024-05-06T07:08:09.123Z&wait=1.5s&updateMask=sub.a,item.title" +
        "&limit=7&sub.a=x&sub.b=-5&ratio=1.5&data=aGk&item.sub.b=3",
      {
        name: "things/t1",
        big: "-9007199254740993",
        ubig: "18446744073709551615",
        tags: ["a", "b c"],
        colors: ["RED", "GREEN"],
        color: "GREEN",
        flag: true,
        at: "2024-05-06T07:08:09.123Z",
        wait: "1.500s",
        updateMask: "sub.a,item.title",
        limit: 7,
        sub: { a: "x", b: "-5" },
        item: { sub: { b: "3" } },
        ratio: 1.5,
        data: "aGk=",
      },
    ],
    [
      "GetThing (additional binding, JSON names for nested fields)",
      "GET",
      "/v1/shelves/s1/things/t1?updateMask=sub&item.title=hello",
      { name: "shelves/s1/things/t1", updateMask: "sub", item: { title: "hello" } },
    ],
    ["ListFiles (** keeps %2F)", "GET", "/v1/files/a/b%2Fc?tags=x", { path: "a/b%2Fc", tags: ["x"] }],
    ["Echo (single segment fully decoded)", "POST", "/v1/echo/a%2Fb%20c", { name: "a/b c" }],
  ])("%s", (_name, method, url, want) => {
    expect(map(pick(url), method, url).json).toEqual(want);
  });

  it.each<[string, string, string, string[], RegExp]>([
    [
      "unknown parameter",
      "GET",
      "/v1/projects/p1/unsubscribers?bogus=1",
      ["bogus"],
      /unknown query parameter/,
    ],
    [
      "unknown nested parameter",
      "GET",
      "/v1/things/t1?sub.bogus=1",
      ["sub.bogus"],
      /no field "bogus" in test\.v1\.Sub/,
    ],
    ["bad int32", "GET", "/v1/projects/p1/unsubscribers?pageSize=ten", ["page_size"], /int32/],
    [
      "int32 out of range",
      "GET",
      "/v1/projects/p1/unsubscribers?pageSize=3000000000",
      ["page_size"],
      /int32/,
    ],
    ["bad int64", "GET", "/v1/things/t1?big=1.5", ["big"], /int64/],
    [
      "a non-repeated field twice",
      "GET",
      "/v1/projects/p1/unsubscribers?pageSize=1&page_size=2",
      ["page_size"],
      /more than once/,
    ],
    [
      "unknown enum name",
      "GET",
      "/v1beta1/projects/p1/regulatoryListings:search?numberType=PURPLE",
      ["number_type"],
      /PhoneNumberType/,
    ],
    [
      "bad bool",
      "GET",
      "/v1beta1/phoneNumbers:search?supportsVoice=yes",
      ["supports_voice"],
      /true or false/,
    ],
    ["bad Timestamp", "GET", "/v1/projects/p1/messages?startTime=yesterday", ["start_time"], /RFC 3339/],
    ["bad Duration", "GET", "/v1/things/t1?wait=forever", ["wait"], /invalid query parameter/],
    ["bad wrapper", "GET", "/v1/things/t1?limit=abc", ["limit"], /int32/],
    ["message field", "GET", "/v1/things/t1?sub=x", ["sub"], /not a primitive field/],
    ["map field", "GET", "/v1/things/t1?labels=x", ["labels"], /not a primitive field/],
    ["through a repeated message", "GET", "/v1/things/t1?subs.a=x", ["subs.a"], /not a message field/],
    ["a path field", "GET", "/v1/projects/p1/unsubscribers/u1?name=x", ["name"], /bound by the URL path/],
    [
      "a field inside the body field",
      "PATCH",
      "/v1/projects/p1/unsubscribers/u1?unsubscriber.phone=x",
      ["unsubscriber.phone"],
      /request body/,
    ],
    [
      "any parameter with body *",
      "POST",
      "/v1beta1/projects/p1/phoneNumberInstances/n1:move?destinationParent=projects/p2",
      ["destinationParent"],
      /request body carries every field/,
    ],
  ])("rejects %s", (_name, method, url, fields, message) => {
    const err = mapError(pick(url), method, url);
    expect(err.fields).toEqual(fields);
    expect(err.message).toMatch(message);
  });
});

/** The synthetic service's paths, or the real ones. */
function pick(url: string): RouteTable {
  return /^\/v1\/(things|shelves|files|echo|tags)\b/.test(url) ? synthetic : real;
}

describe("body -> request message", () => {
  it("maps body: <field> to that field, path variables into it, the query to the rest", () => {
    const { json } = map(
      real,
      "PATCH",
      "/v1/projects/p1/unsubscribers/u1?updateMask=labels",
      JSON.stringify({ name: "projects/other/unsubscribers/zz", labels: { a: "b" } }),
    );
    // The path wins over the same field in the body.
    expect(json).toEqual({
      unsubscriber: { name: "projects/p1/unsubscribers/u1", labels: { a: "b" } },
      updateMask: "labels",
    });
  });

  it("accepts proto names and lowerCamelCase names in the body", () => {
    const a = map(
      real,
      "POST",
      "/v1/projects/p1/unsubscribers",
      '{"phone":"+61","unsubscribe_method":"URL"}',
    );
    const b = map(real, "POST", "/v1/projects/p1/unsubscribers", '{"phone":"+61","unsubscribeMethod":2}');
    expect(a.json).toEqual({
      parent: "projects/p1",
      unsubscriber: { phone: "+61", unsubscribeMethod: "URL" },
    });
    expect(b.json).toEqual({
      parent: "projects/p1",
      unsubscriber: { phone: "+61", unsubscribeMethod: "MESSAGE" },
    });
  });

  it("maps body: * to the whole request, the path winning", () => {
    const { json } = map(
      real,
      "POST",
      "/v1beta1/projects/p1/phoneNumberInstances/n1:move",
      '{"destinationParent":"projects/p2","name":"projects/x/phoneNumberInstances/y"}',
    );
    expect(json).toEqual({ name: "projects/p1/phoneNumberInstances/n1", destinationParent: "projects/p2" });
  });

  it("maps a body to a repeated field", () => {
    expect(map(synthetic, "POST", "/v1/tags", '["a","b"]').json).toEqual({ tags: ["a", "b"] });
  });

  it("maps a nested path variable into a body message", () => {
    const { json } = map(
      synthetic,
      "PATCH",
      "/v1/things/t1?updateMask=title",
      '{"title":"T","sub":{"b":"7"}}',
    );
    expect(json).toEqual({ item: { name: "things/t1", title: "T", sub: { b: "7" } }, updateMask: "title" });
  });

  it("treats an empty body as no fields", () => {
    expect(map(real, "POST", "/v1/projects/p1/unsubscribers", "").json).toEqual({ parent: "projects/p1" });
    expect(map(real, "POST", "/v1beta1/projects/p1/phoneNumberInstances/n1:move", " \n").json).toEqual({
      name: "projects/p1/phoneNumberInstances/n1",
    });
  });

  it.each<[string, string, string, string, { fields?: string[]; reason?: string; message: RegExp }]>([
    [
      "unknown field",
      "POST",
      "/v1/projects/p1/unsubscribers",
      '{"phone":"+61","bogus":1}',
      {
        fields: ["unsubscriber.bogus"],
        message: /unknown field "bogus" in enfonica\.messaging\.v1\.Unsubscriber/,
      },
    ],
    [
      "unknown nested field",
      "POST",
      "/v1beta1/projects/p1/regulatoryListings",
      '{"address":{"regionCode":"AU","bogus":1}}',
      { fields: ["regulatory_listing.address.bogus"], message: /unknown field "bogus"/ },
    ],
    [
      "unknown top-level field with body *",
      "POST",
      "/v1beta1/projects/p1/phoneNumberInstances/n1:move",
      '{"destination":"projects/p2"}',
      { fields: ["destination"], message: /unknown field "destination"/ },
    ],
    [
      "wrong type",
      "POST",
      "/v1/projects/p1/unsubscribers",
      '{"phone":61}',
      { fields: ["unsubscriber.phone"], message: /expected string/ },
    ],
    [
      "wrong type in a list",
      "POST",
      "/v1beta1/projects/p1/regulatoryListings",
      '{"address":{"addressLines":["a",2]}}',
      { fields: ["regulatory_listing.address.address_lines"], message: /list item #2/ },
    ],
    [
      "two members of a oneof",
      "POST",
      "/v1beta1/projects/p1/regulatoryListings",
      '{"person":{"givenName":"a"},"business":{"business":"b"}}',
      { fields: ["regulatory_listing.entity"], message: /oneof/ },
    ],
    [
      "unknown enum name",
      "POST",
      "/v1/projects/p1/unsubscribers",
      '{"unsubscribeMethod":"FAX"}',
      { fields: ["unsubscriber.unsubscribe_method"], message: /UnsubscribeMethod/ },
    ],
    [
      "duplicate key",
      "POST",
      "/v1/projects/p1/unsubscribers",
      '{"phone":"a","phone":"b"}',
      { message: /duplicate/ },
    ],
    [
      "a field set by both names",
      "POST",
      "/v1/projects/p1/unsubscribers",
      '{"unsubscribe_method":"URL","unsubscribeMethod":"URL"}',
      { fields: ["unsubscriber.unsubscribe_method"], message: /multiple times/ },
    ],
    [
      "bad JSON",
      "POST",
      "/v1/projects/p1/unsubscribers",
      '{"phone":',
      { reason: "INVALID_JSON", message: /invalid JSON/ },
    ],
    ["not an object", "POST", "/v1/projects/p1/unsubscribers", "[1]", { message: /Array|\[1\]|expected/ }],
    [
      "a body where none is allowed",
      "DELETE",
      "/v1/projects/p1/unsubscribers/u1",
      "{}",
      { reason: "BODY_NOT_ALLOWED", message: /takes no request body/ },
    ],
    ["a non-array for a repeated body", "POST", "/v1/tags", '"a"', { fields: ["tags"], message: /Array/ }],
    [
      "bad Timestamp",
      "POST",
      "/v1/echo/e1",
      '{"at":"yesterday"}',
      { fields: ["at"], message: /^at: invalid RFC 3339 string$/ },
    ],
    [
      "bad Duration in an item",
      "PATCH",
      "/v1beta1/projects/p1/phoneNumberInstances/n1",
      '{"createTime":"2024-01-01T00:00:00Z","deleteTime":"never"}',
      { fields: ["phone_number_instance.delete_time"], message: /RFC 3339/ },
    ],
    [
      "bad value in the second list item",
      "POST",
      "/v1/echo/e1",
      '{"subs":[{"b":"1"},{"b":"x"}]}',
      { fields: ["subs[1].b"], message: /int64/ },
    ],
    [
      "bad value in a nested message",
      "POST",
      "/v1/echo/e1",
      '{"sub":{"a":"ok"},"item":{"sub":{"a":1}}}',
      { fields: ["item.sub.a"], message: /expected string/ },
    ],
    [
      "oneof set twice in the second of two objects",
      "POST",
      "/v1beta1/projects/p1/regulatoryListings",
      '{"person":{"givenName":"a","familyName":"b"},"address":{"regionCode":"AU"},"business":{"business":"b"}}',
      { fields: ["regulatory_listing.entity"], message: /oneof set multiple times/ },
    ],
  ])("rejects %s", (_name, method, url, body, want) => {
    const err = mapError(pick(url), method, url, body);
    if (want.fields !== undefined) expect(err.fields).toEqual(want.fields);
    if (want.reason !== undefined) expect(err.reason).toBe(want.reason);
    expect(err.message).toMatch(want.message);
  });

  it("rejects a body that is not UTF-8", () => {
    const found = real.lookup("POST", "/v1/projects/p1/unsubscribers");
    if (found.kind !== "match") throw new Error("no route");
    expect(() =>
      buildRequest(
        found.route,
        { bindings: found.bindings, query: "", body: new Uint8Array([0x7b, 0xff, 0x7d]) },
        registry,
      ),
    ).toThrow(/UTF-8/);
  });
});
