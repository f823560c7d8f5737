import { describe, expect, it } from "vitest";
import {
  compareSpecificity,
  decodeKeepingSlashes,
  matchTemplate,
  parseTemplate,
  splitRequestPath,
  TemplateError,
} from "../../src/transport/rest/path-template.js";

describe("parseTemplate", () => {
  it.each([
    {
      name: "GetRegulatoryListing",
      template: "/v1beta1/{name=projects/*/regulatoryListings/*}",
      segments: ["v1beta1", "projects", "*", "regulatoryListings", "*"],
      variables: [{ fieldPath: ["name"], start: 1, end: 5, singleSegment: false }],
      verb: undefined,
    },
    {
      name: "UpdateRegulatoryListing (nested field path)",
      template: "/v1beta1/{regulatory_listing.name=projects/*/regulatoryListings/*}",
      segments: ["v1beta1", "projects", "*", "regulatoryListings", "*"],
      variables: [{ fieldPath: ["regulatory_listing", "name"], start: 1, end: 5, singleSegment: false }],
      verb: undefined,
    },
    {
      name: "SearchPhoneNumbers (literal + verb)",
      template: "/v1beta1/phoneNumbers:search",
      segments: ["v1beta1", "phoneNumbers"],
      variables: [],
      verb: "search",
    },
    {
      name: "SearchRegulatoryListings (variable + literal + verb)",
      template: "/v1beta1/{parent=projects/*}/regulatoryListings:search",
      segments: ["v1beta1", "projects", "*", "regulatoryListings"],
      variables: [{ fieldPath: ["parent"], start: 1, end: 3, singleSegment: false }],
      verb: "search",
    },
    {
      name: "MovePhoneNumberInstance (verb after a variable)",
      template: "/v1beta1/{name=projects/*/phoneNumberInstances/*}:move",
      segments: ["v1beta1", "projects", "*", "phoneNumberInstances", "*"],
      variables: [{ fieldPath: ["name"], start: 1, end: 5, singleSegment: false }],
      verb: "move",
    },
    {
      name: "VerifyCollabDirectRouting",
      template: "/v1beta1/{sip_domain=projects/*/sipDomains/*}:verifyCollabDirectRouting",
      segments: ["v1beta1", "projects", "*", "sipDomains", "*"],
      variables: [{ fieldPath: ["sip_domain"], start: 1, end: 5, singleSegment: false }],
      verb: "verifyCollabDirectRouting",
    },
    {
      name: "variable without a pattern is *",
      template: "/v1/messages/{message_id}",
      segments: ["v1", "messages", "*"],
      variables: [{ fieldPath: ["message_id"], start: 2, end: 3, singleSegment: true }],
      verb: undefined,
    },
    {
      name: "** at the end",
      template: "/v1/{name=files/**}",
      segments: ["v1", "files", "**"],
      variables: [{ fieldPath: ["name"], start: 1, end: 3, singleSegment: false }],
      verb: undefined,
    },
    {
      name: "two variables",
      template: "/v1/users/{user_id}/messages/{message_id}",
      segments: ["v1", "users", "*", "messages", "*"],
      variables: [
        { fieldPath: ["user_id"], start: 2, end: 3, singleSegment: true },
        { fieldPath: ["message_id"], start: 4, end: 5, singleSegment: true },
      ],
      verb: undefined,
    },
    {
      name: "bare wildcards outside variables",
      template: "/v1/*/x/**:do",
      segments: ["v1", "*", "x", "**"],
      variables: [],
      verb: "do",
    },
  ])("$name", ({ template, segments, variables, verb }) => {
    const t = parseTemplate(template);
    expect(
      t.segments.map((s) => (s.kind === "literal" ? s.value : s.kind === "wildcard" ? "*" : "**")),
    ).toEqual(segments);
    expect(t.variables).toEqual(variables);
    expect(t.verb).toBe(verb);
  });

  it.each([
    ["no leading slash", "v1/things"],
    ["empty segment", "/v1//things"],
    ["trailing slash", "/v1/things/"],
    ["nested variable", "/v1/{a={b}}"],
    ["unterminated variable", "/v1/{name=things/*"],
    ["stray brace", "/v1/things}"],
    ["** not last", "/v1/{name=**}/x"],
    ["empty verb", "/v1/things:"],
    ["bad field path", "/v1/{1name}"],
    ["same field twice", "/v1/{name}/{name}"],
    ["illegal literal character", "/v1/th ings"],
    ["only a slash", "/"],
  ])("rejects %s", (_name, template) => {
    expect(() => parseTemplate(template)).toThrow(TemplateError);
  });
});

describe("matchTemplate", () => {
  const cases: Array<{
    name: string;
    template: string;
    path: string;
    want: Record<string, string> | undefined;
  }> = [
    {
      name: "GetRegulatoryListing",
      template: "/v1beta1/{name=projects/*/regulatoryListings/*}",
      path: "/v1beta1/projects/p1/regulatoryListings/rl1",
      want: { name: "projects/p1/regulatoryListings/rl1" },
    },
    {
      name: "GetRegulatoryListing-NotAllowed (search verb)",
      template: "/v1beta1/{name=projects/*/regulatoryListings/*}",
      path: "/v1beta1/projects/p1/regulatoryListings:search",
      want: undefined,
    },
    {
      name: "GetRegulatoryListing-NotAllowed (too many segments)",
      template: "/v1beta1/{name=projects/*/regulatoryListings/*}",
      path: "/v1beta1/projects/p1/regulatoryListings/rl1/extra",
      want: undefined,
    },
    {
      name: "GetRegulatoryListing-NotAllowed (wrong literal)",
      template: "/v1beta1/{name=projects/*/regulatoryListings/*}",
      path: "/v1beta1/projects/p1/phoneNumberInstances/rl1",
      want: undefined,
    },
    {
      name: "GetRegulatoryListing-NotAllowed (empty segment)",
      template: "/v1beta1/{name=projects/*/regulatoryListings/*}",
      path: "/v1beta1/projects//regulatoryListings/rl1",
      want: undefined,
    },
    {
      name: "GetRegulatoryListing-NotAllowed (trailing slash)",
      template: "/v1beta1/{name=projects/*/regulatoryListings/*}",
      path: "/v1beta1/projects/p1/regulatoryListings/rl1/",
      want: undefined,
    },
    {
      name: "GetRegulatoryListing (colon kept in the id when the template has no verb)",
      template: "/v1beta1/{name=projects/*/regulatoryListings/*}",
      path: "/v1beta1/projects/p1/regulatoryListings/a:b",
      want: { name: "projects/p1/regulatoryListings/a:b" },
    },
    {
      name: "SearchRegulatoryListings",
      template: "/v1beta1/{parent=projects/*}/regulatoryListings:search",
      path: "/v1beta1/projects/p1/regulatoryListings:search",
      want: { parent: "projects/p1" },
    },
    {
      name: "SearchRegulatoryListings-NotAllowed (no verb)",
      template: "/v1beta1/{parent=projects/*}/regulatoryListings:search",
      path: "/v1beta1/projects/p1/regulatoryListings",
      want: undefined,
    },
    {
      name: "SearchRegulatoryListings-NotAllowed (other verb)",
      template: "/v1beta1/{parent=projects/*}/regulatoryListings:search",
      path: "/v1beta1/projects/p1/regulatoryListings:find",
      want: undefined,
    },
    {
      name: "SearchRegulatoryListings-NotAllowed (encoded colon is not a verb)",
      template: "/v1beta1/{parent=projects/*}/regulatoryListings:search",
      path: "/v1beta1/projects/p1/regulatoryListings%3Asearch",
      want: undefined,
    },
    {
      name: "SearchPhoneNumbers",
      template: "/v1beta1/phoneNumbers:search",
      path: "/v1beta1/phoneNumbers:search",
      want: {},
    },
    {
      name: "UpdateRegulatoryListing",
      template: "/v1beta1/{regulatory_listing.name=projects/*/regulatoryListings/*}",
      path: "/v1beta1/projects/p1/regulatoryListings/rl1",
      want: { "regulatory_listing.name": "projects/p1/regulatoryListings/rl1" },
    },
    {
      name: "MovePhoneNumberInstance",
      template: "/v1beta1/{name=projects/*/phoneNumberInstances/*}:move",
      path: "/v1beta1/projects/p1/phoneNumberInstances/pni1:move",
      want: { name: "projects/p1/phoneNumberInstances/pni1" },
    },
    {
      name: "SplitRange",
      template: "/v1beta1/{phone_number_instance=projects/*/phoneNumberInstances/*}:splitRange",
      path: "/v1beta1/projects/p1/phoneNumberInstances/pni1:splitRange",
      want: { phone_number_instance: "projects/p1/phoneNumberInstances/pni1" },
    },
    {
      name: "VerifyCollabDirectRouting",
      template: "/v1beta1/{sip_domain=projects/*/sipDomains/*}:verifyCollabDirectRouting",
      path: "/v1beta1/projects/p1/sipDomains/sd1:verifyCollabDirectRouting",
      want: { sip_domain: "projects/p1/sipDomains/sd1" },
    },
    {
      name: "VerifyCollabDirectRouting-NotAllowed (verb on the collection)",
      template: "/v1beta1/{sip_domain=projects/*/sipDomains/*}:verifyCollabDirectRouting",
      path: "/v1beta1/projects/p1/sipDomains:verifyCollabDirectRouting",
      want: undefined,
    },
    {
      name: "ListRecordings (additional binding shape)",
      template: "/v1beta1/{parent=projects/*/calls/*}/recordings",
      path: "/v1beta1/projects/p1/calls/c1/recordings",
      want: { parent: "projects/p1/calls/c1" },
    },
    {
      name: "multi-segment variable keeps %2F and decodes the rest",
      template: "/v1/{name=projects/*/unsubscribers/*}",
      path: "/v1/projects/p%201/unsubscribers/a%2Fb%2fc%3A",
      want: { name: "projects/p 1/unsubscribers/a%2Fb%2fc:" },
    },
    {
      name: "single-segment variable is fully decoded",
      template: "/v1/messages/{message_id}",
      path: "/v1/messages/a%2Fb%20c",
      want: { message_id: "a/b c" },
    },
    {
      name: "single-segment variable with malformed escape does not match",
      template: "/v1/messages/{message_id}",
      path: "/v1/messages/%zz",
      want: undefined,
    },
    {
      name: "literal compared decoded",
      template: "/v1/phoneNumbers",
      path: "/v1/phone%4Eumbers",
      want: {},
    },
    {
      name: "** matches several segments",
      template: "/v1/{name=files/**}",
      path: "/v1/files/a/b/c",
      want: { name: "files/a/b/c" },
    },
    {
      name: "** matches zero segments",
      template: "/v1/{name=files/**}",
      path: "/v1/files",
      want: { name: "files" },
    },
    {
      name: "** with a verb",
      template: "/v1/{name=files/**}:stat",
      path: "/v1/files/a/b:stat",
      want: { name: "files/a/b" },
    },
    {
      name: "two single-segment variables",
      template: "/v1/users/{user_id}/messages/{message_id}",
      path: "/v1/users/me/messages/123456",
      want: { user_id: "me", message_id: "123456" },
    },
  ];

  it.each(cases)("$name", ({ template, path, want }) => {
    const req = splitRequestPath(path)!;
    const got = matchTemplate(parseTemplate(template), req);
    if (want === undefined) {
      expect(got).toBeUndefined();
      return;
    }
    expect(got).toBeDefined();
    expect(Object.fromEntries(got!.map((b) => [b.variable.fieldPath.join("."), b.value]))).toEqual(want);
  });

  it("refuses a relative path", () => {
    expect(splitRequestPath("v1/things")).toBeUndefined();
  });
});

describe("decodeKeepingSlashes", () => {
  it.each([
    ["plain", "abc", "abc"],
    ["space", "a%20b", "a b"],
    ["upper %2F kept", "a%2Fb", "a%2Fb"],
    ["lower %2f kept", "a%2fb", "a%2fb"],
    ["utf-8", "%C3%A9", "é"],
    ["malformed", "%E2%82", undefined],
  ])("%s", (_name, input, want) => {
    expect(decodeKeepingSlashes(input)).toBe(want);
  });
});

describe("compareSpecificity", () => {
  const sorted = (templates: string[]) =>
    templates
      .map(parseTemplate)
      .sort(compareSpecificity)
      .map((t) => t.source);

  it("orders literal before * before **", () => {
    expect(sorted(["/v1/{a=things/**}", "/v1/{a=things/*}", "/v1/things/special"])).toEqual([
      "/v1/things/special",
      "/v1/{a=things/*}",
      "/v1/{a=things/**}",
    ]);
  });

  it("puts a template with a verb first", () => {
    expect(sorted(["/v1/{a=things/*}", "/v1/{a=things/*}:cancel"])).toEqual([
      "/v1/{a=things/*}:cancel",
      "/v1/{a=things/*}",
    ]);
  });

  it("decides at the first differing segment", () => {
    expect(sorted(["/v1/*/b", "/v1/a/*"])).toEqual(["/v1/a/*", "/v1/*/b"]);
  });
});
