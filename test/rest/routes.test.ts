import { describe, expect, it } from "vitest";
import { Messages } from "../../gen/enfonica/messaging/v1/messages_pb.js";
import { Unsubscribers } from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { PhoneNumberInstances } from "../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { PhoneNumbers } from "../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { RegulatoryListings } from "../../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { Aliases } from "../../gen/enfonica/voice/v1beta1/aliases_pb.js";
import { Calls } from "../../gen/enfonica/voice/v1beta1/calls_pb.js";
import { Recordings } from "../../gen/enfonica/voice/v1beta1/recordings_pb.js";
import { SipDomains } from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { compileRoutes, type Lookup, RouteConfigError } from "../../src/transport/rest/routes.js";
import { buildFixture, defaultRules } from "./fixture.js";

const table = compileRoutes(
  [
    PhoneNumbers,
    PhoneNumberInstances,
    RegulatoryListings,
    Unsubscribers,
    Messages,
    SipDomains,
    Aliases,
    Calls,
    Recordings,
  ].map((desc) => ({ desc })),
);

type Want = { rpc: string; bindings?: Record<string, string> } | { allow: string[] } | { notFound: true };

function summarize(found: Lookup): Want {
  switch (found.kind) {
    case "match":
      return {
        rpc: `${found.route.method.parent.name}.${found.route.method.name}`,
        bindings: Object.fromEntries(found.bindings.map((b) => [b.variable.fieldPath.join("."), b.value])),
      };
    case "method-not-allowed":
      return { allow: found.allow };
    case "not-found":
      return { notFound: true };
  }
}

describe("route table from the generated descriptors", () => {
  it("has a route for every rule, additional bindings included", () => {
    const recordings = table.routes
      .filter((r) => r.method.name === "ListRecordings")
      .map((r) => r.template.source);
    expect(recordings).toEqual([
      "/v1beta1/{parent=projects/*/calls/*}/recordings",
      "/v1beta1/{parent=projects/*}/recordings",
    ]);
    const create = table.routes.find((r) => r.method.name === "CreateUnsubscriber")!;
    expect(create.httpMethod).toBe("POST");
    expect(create.body).toMatchObject({ kind: "field" });
    expect(create.body.kind === "field" && create.body.field.name).toBe("unsubscriber");
    const move = table.routes.find((r) => r.method.name === "MovePhoneNumberInstance")!;
    expect(move.body.kind).toBe("all");
    const get = table.routes.find((r) => r.method.name === "GetUnsubscriber")!;
    expect(get.body.kind).toBe("none");
  });

  const cases: Array<[name: string, method: string, path: string, want: Want]> = [
    [
      "GetRegulatoryListing",
      "GET",
      "/v1beta1/projects/p1/regulatoryListings/rl1",
      {
        rpc: "RegulatoryListings.GetRegulatoryListing",
        bindings: { name: "projects/p1/regulatoryListings/rl1" },
      },
    ],
    [
      "GetRegulatoryListing-NotAllowed",
      "PUT",
      "/v1beta1/projects/p1/regulatoryListings/rl1",
      { allow: ["DELETE", "GET", "PATCH"] },
    ],
    [
      "UpdateRegulatoryListing",
      "PATCH",
      "/v1beta1/projects/p1/regulatoryListings/rl1",
      {
        rpc: "RegulatoryListings.UpdateRegulatoryListing",
        bindings: { "regulatory_listing.name": "projects/p1/regulatoryListings/rl1" },
      },
    ],
    [
      "DeleteRegulatoryListing",
      "DELETE",
      "/v1beta1/projects/p1/regulatoryListings/rl1",
      {
        rpc: "RegulatoryListings.DeleteRegulatoryListing",
        bindings: { name: "projects/p1/regulatoryListings/rl1" },
      },
    ],
    [
      "ListRegulatoryListings",
      "GET",
      "/v1beta1/projects/p1/regulatoryListings",
      { rpc: "RegulatoryListings.ListRegulatoryListings", bindings: { parent: "projects/p1" } },
    ],
    [
      "CreateRegulatoryListing",
      "POST",
      "/v1beta1/projects/p1/regulatoryListings",
      { rpc: "RegulatoryListings.CreateRegulatoryListing", bindings: { parent: "projects/p1" } },
    ],
    [
      "ListRegulatoryListings-NotAllowed",
      "DELETE",
      "/v1beta1/projects/p1/regulatoryListings",
      { allow: ["GET", "POST"] },
    ],
    [
      "SearchRegulatoryListings",
      "GET",
      "/v1beta1/projects/p1/regulatoryListings:search",
      { rpc: "RegulatoryListings.SearchRegulatoryListings", bindings: { parent: "projects/p1" } },
    ],
    [
      "SearchRegulatoryListings-NotAllowed",
      "POST",
      "/v1beta1/projects/p1/regulatoryListings:search",
      { allow: ["GET"] },
    ],
    [
      "GetRegulatoryListing (an id named search is not the verb)",
      "GET",
      "/v1beta1/projects/p1/regulatoryListings/search",
      {
        rpc: "RegulatoryListings.GetRegulatoryListing",
        bindings: { name: "projects/p1/regulatoryListings/search" },
      },
    ],
    [
      "SearchPhoneNumbers",
      "GET",
      "/v1beta1/phoneNumbers:search",
      { rpc: "PhoneNumbers.SearchPhoneNumbers", bindings: {} },
    ],
    ["SearchPhoneNumbers-NotAllowed", "POST", "/v1beta1/phoneNumbers:search", { allow: ["GET"] }],
    ["SearchPhoneNumbers-NoVerb", "GET", "/v1beta1/phoneNumbers", { notFound: true }],
    ["SearchPhoneNumbers-OtherVerb", "GET", "/v1beta1/phoneNumbers:list", { notFound: true }],
    [
      "MovePhoneNumberInstance",
      "POST",
      "/v1beta1/projects/p1/phoneNumberInstances/n1:move",
      {
        rpc: "PhoneNumberInstances.MovePhoneNumberInstance",
        bindings: { name: "projects/p1/phoneNumberInstances/n1" },
      },
    ],
    [
      "MovePhoneNumberInstance-NotAllowed",
      "GET",
      "/v1beta1/projects/p1/phoneNumberInstances/n1:move",
      { allow: ["POST"] },
    ],
    [
      "DeletePhoneNumberInstance-NotAVerb (a custom verb is never read as part of the id)",
      "DELETE",
      "/v1beta1/projects/p1/phoneNumberInstances/n1:move",
      { allow: ["POST"] },
    ],
    [
      "GetPhoneNumberInstance (a colon no route declares stays in the id)",
      "GET",
      "/v1beta1/projects/p1/phoneNumberInstances/n1:x",
      {
        rpc: "PhoneNumberInstances.GetPhoneNumberInstance",
        bindings: { name: "projects/p1/phoneNumberInstances/n1:x" },
      },
    ],
    [
      "SplitRange",
      "POST",
      "/v1beta1/projects/p1/phoneNumberInstances/n1:splitRange",
      {
        rpc: "PhoneNumberInstances.SplitRange",
        bindings: { phone_number_instance: "projects/p1/phoneNumberInstances/n1" },
      },
    ],
    [
      "UpdatePhoneNumberInstance",
      "PATCH",
      "/v1beta1/projects/p1/phoneNumberInstances/n1",
      {
        rpc: "PhoneNumberInstances.UpdatePhoneNumberInstance",
        bindings: { name: "projects/p1/phoneNumberInstances/n1" },
      },
    ],
    [
      "GetUnsubscriber",
      "GET",
      "/v1/projects/p1/unsubscribers/u1",
      { rpc: "Unsubscribers.GetUnsubscriber", bindings: { name: "projects/p1/unsubscribers/u1" } },
    ],
    [
      "UpdateUnsubscriber",
      "PATCH",
      "/v1/projects/p1/unsubscribers/u1",
      {
        rpc: "Unsubscribers.UpdateUnsubscriber",
        bindings: { "unsubscriber.name": "projects/p1/unsubscribers/u1" },
      },
    ],
    [
      "GetUnsubscriber-NotAllowed",
      "POST",
      "/v1/projects/p1/unsubscribers/u1",
      { allow: ["DELETE", "GET", "PATCH"] },
    ],
    ["GetUnsubscriber-WrongVersion", "GET", "/v1beta1/projects/p1/unsubscribers/u1", { notFound: true }],
    [
      "GetMessage",
      "GET",
      "/v1/projects/p1/messages/m1",
      { rpc: "Messages.GetMessage", bindings: { name: "projects/p1/messages/m1" } },
    ],
    [
      "VerifyCollabDirectRouting",
      "POST",
      "/v1beta1/projects/p1/sipDomains/sd1:verifyCollabDirectRouting",
      { rpc: "SipDomains.VerifyCollabDirectRouting", bindings: { sip_domain: "projects/p1/sipDomains/sd1" } },
    ],
    [
      "UpdateSipDomain",
      "PATCH",
      "/v1beta1/projects/p1/sipDomains/sd1",
      { rpc: "SipDomains.UpdateSipDomain", bindings: { "sip_domain.name": "projects/p1/sipDomains/sd1" } },
    ],
    [
      "GetAlias",
      "GET",
      "/v1beta1/projects/p1/sipDomains/sd1/aliases/a1",
      { rpc: "Aliases.GetAlias", bindings: { name: "projects/p1/sipDomains/sd1/aliases/a1" } },
    ],
    [
      "ListRecordings (of a call)",
      "GET",
      "/v1beta1/projects/p1/calls/c1/recordings",
      { rpc: "Recordings.ListRecordings", bindings: { parent: "projects/p1/calls/c1" } },
    ],
    [
      "ListRecordings (of a project, additional binding)",
      "GET",
      "/v1beta1/projects/p1/recordings",
      { rpc: "Recordings.ListRecordings", bindings: { parent: "projects/p1" } },
    ],
    [
      "GetRecording",
      "GET",
      "/v1beta1/projects/p1/calls/c1/recordings/r1",
      { rpc: "Recordings.GetRecording", bindings: { name: "projects/p1/calls/c1/recordings/r1" } },
    ],
    [
      "GetRecording-NotAllowed",
      "PATCH",
      "/v1beta1/projects/p1/calls/c1/recordings/r1",
      { allow: ["DELETE", "GET"] },
    ],
    ["Unknown", "GET", "/v2/projects/p1/unsubscribers", { notFound: true }],
    ["Root", "GET", "/", { notFound: true }],
    ["Relative", "GET", "v1/projects/p1/unsubscribers", { notFound: true }],
  ];

  it.each(cases)("%s", (_name, method, path, want) => {
    expect(summarize(table.lookup(method, path))).toEqual(want);
  });
});

describe("route table from a synthetic service", () => {
  const { Things } = buildFixture();
  const things = compileRoutes([{ desc: Things }]);

  it.each<[string, string, string, Want]>([
    ["GetThing", "GET", "/v1/things/t1", { rpc: "Things.GetThing", bindings: { name: "things/t1" } }],
    [
      "GetThing (additional binding)",
      "GET",
      "/v1/shelves/s1/things/t1",
      { rpc: "Things.GetThing", bindings: { name: "shelves/s1/things/t1" } },
    ],
    ["GetSpecial (literal beats *)", "GET", "/v1/things/special", { rpc: "Things.GetSpecial", bindings: {} }],
    [
      "GetDeep (** when * cannot match)",
      "GET",
      "/v1/things/a/b",
      { rpc: "Things.GetDeep", bindings: { path: "things/a/b" } },
    ],
    [
      "GetDeep (** matching no segment)",
      "GET",
      "/v1/things",
      { rpc: "Things.GetDeep", bindings: { path: "things" } },
    ],
    [
      "CancelThing (verb)",
      "POST",
      "/v1/things/t1:cancel",
      { rpc: "Things.CancelThing", bindings: { name: "things/t1" } },
    ],
    ["CancelThing-NotAllowed", "DELETE", "/v1/things/t1:cancel", { allow: ["POST"] }],
    ["CancelThing-NotAllowed (GET)", "GET", "/v1/things/t1:cancel", { allow: ["POST"] }],
    [
      "UpdateThing",
      "PATCH",
      "/v1/things/t1",
      { rpc: "Things.UpdateThing", bindings: { "item.name": "things/t1" } },
    ],
    ["ListFiles", "GET", "/v1/files/a/b%2Fc/d", { rpc: "Things.ListFiles", bindings: { path: "a/b%2Fc/d" } }],
    ["Probe (custom HEAD)", "HEAD", "/v1/probe", { rpc: "Things.Probe", bindings: {} }],
    ["Probe-NotAllowed", "GET", "/v1/probe", { allow: ["HEAD"] }],
    [
      "Echo (single-segment variable)",
      "POST",
      "/v1/echo/a%2Fb",
      { rpc: "Things.Echo", bindings: { name: "a/b" } },
    ],
  ])("%s", (_name, method, path, want) => {
    expect(summarize(things.lookup(method, path))).toEqual(want);
  });

  it.each<[string, Record<string, object>, RegExp]>([
    [
      "a duplicate route",
      {
        A: { pattern: { case: "get", value: "/v1/{name=x/*}" } },
        B: { pattern: { case: "get", value: "/v1/{path=x/*}" } },
      },
      /A and .*B|B and .*A/,
    ],
    ["an unknown path field", { A: { pattern: { case: "get", value: "/v1/{nope=x/*}" } } }, /nope/],
    ["a message path field", { A: { pattern: { case: "get", value: "/v1/{sub=x/*}" } } }, /singular scalar/],
    [
      "a repeated path field",
      { A: { pattern: { case: "get", value: "/v1/{tags=x/*}" } } },
      /singular scalar/,
    ],
    [
      "an unknown body field",
      { A: { pattern: { case: "post", value: "/v1/x" }, body: "nope" } },
      /body nope/,
    ],
    [
      "a nested body field",
      { A: { pattern: { case: "post", value: "/v1/x" }, body: "sub.a" } },
      /body sub\.a/,
    ],
    ["a bad template", { A: { pattern: { case: "get", value: "/v1/{name=**}/x" } } }, /\*\*/],
    [
      "nested additional bindings",
      {
        A: {
          pattern: { case: "get", value: "/v1/a" },
          additionalBindings: [
            {
              pattern: { case: "get", value: "/v1/b" },
              additionalBindings: [{ pattern: { case: "get", value: "/v1/c" } }],
            },
          ],
        },
      },
      /nest/,
    ],
  ])("fails at startup on %s", (_name, rules, message) => {
    const { Things: bad } = buildFixture(rules);
    expect(() => compileRoutes([{ desc: bad }])).toThrow(RouteConfigError);
    expect(() => compileRoutes([{ desc: bad }])).toThrow(message);
  });

  it("compiles every default rule", () => {
    expect(things.routes.map((r) => r.method.name).sort()).toEqual(
      [...Object.keys(defaultRules), "GetThing"].sort(),
    );
  });
});
