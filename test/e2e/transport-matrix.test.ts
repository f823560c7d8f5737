/**
 * The transport matrix: every rpc of RegulatoryListings and Unsubscribers,
 * success and error cases, over the six transports of test/e2e/transports.ts
 * (Connect JSON, Connect binary, gRPC, grpc-js, gRPC-Web, REST) against ONE
 * real listening server — same results, same codes, same field violations.
 *
 * Each case is a short list of steps (rpc, request as proto3 JSON, expected
 * outcome). It runs once per transport, each time in a fresh project with
 * its own resources (made in-process, so that no transport sets up
 * another's case), with the shared clock reset, so that timestamps are the
 * same on every transport. Outcomes are compared after masking what must
 * differ: the project, the names of the resources made for the case
 * (`{ada}`), generated ids (`{id}`) and page tokens (`{token}`). Then:
 * the six outcomes of a step must agree with each other, and with the
 * expected one.
 *
 * The domain rules themselves are tested in-process (test/numbering,
 * test/messaging); this file is about the transports.
 */
import { isDeepStrictEqual } from "node:util";
import { type DescService, fromJson, type JsonObject, type JsonValue, toJson } from "@bufbuild/protobuf";
import type { Transport } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Unsubscribers } from "../../gen/enfonica/messaging/v1/unsubscribers_pb.js";
import { RegulatoryListings } from "../../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import type { Db } from "../../src/db/client.js";
import { type App, build } from "../../src/server.js";
import {
  createTestTransport,
  newApiKey,
  newProject,
  TEST_OPERATOR_TOKEN,
  testConfig,
} from "../support/app.js";
import { TestClock } from "../support/clock.js";
import { testDatabases, useTestDatabase } from "../support/db.js";
import {
  allAdapters,
  type Outcome,
  TRANSPORT_NAMES,
  type TransportAdapter,
  type TransportName,
  unaryMethod,
} from "./transports.js";

// ---------------------------------------------------------------------------
// The table

const RL = RegulatoryListings;
const U = Unsubscribers;

const START = "2026-01-01T00:00:00.000Z";
/** The create_time of a resource made `n` seconds after START (each setup create and each step is one second). */
const t = (n: number) => new Date(Date.parse(START) + n * 1000).toISOString().replace(".000Z", "Z");
const x = (n: number) => "x".repeat(n);

const PHONE = "+61491570156";
const mobile = (i: number) => `+614120${String(i).padStart(5, "0")}`;

const AU_ADDRESS = {
  addressLines: ["Level 3, 1 George Street"],
  locality: "Sydney",
  administrativeArea: "NSW",
  postalCode: "2000",
  regionCode: "AU",
};
const US_ADDRESS = {
  addressLines: ["1600 Pennsylvania Avenue NW"],
  locality: "Washington",
  administrativeArea: "DC",
  postalCode: "20500",
  regionCode: "US",
};
const NZ_ADDRESS = {
  addressLines: ["1 Queen Street"],
  locality: "Auckland",
  administrativeArea: "Auckland",
  postalCode: "1010",
  regionCode: "NZ",
};
const GB_ADDRESS = { addressLines: ["10 Downing Street"], regionCode: "GB" };
const ADA = { givenName: "Ada", familyName: "Lovelace" };
const ACME = { business: "Acme Pty Ltd" };

/** What a step must give. */
type Expected =
  | { ok: true; json: JsonValue }
  | {
      ok: false;
      code: string;
      reason: string;
      /** Proto paths in any order (a pattern only for a single violation); none when omitted. */
      fieldViolations?: (string | RegExp)[];
      message?: string | RegExp;
    };

interface Ctx {
  /** `projects/p-...`, the project of this case on this transport. */
  project: string;
  /** The name of the resource the setup made as `key`. */
  name(key: string): string;
  /** The secret of the API key the setup made as `key`. */
  secret(key: string): string;
  /** The (unmasked) response of the previous step, `{}` when it failed. */
  last: JsonObject;
}

interface Step {
  service: DescService;
  method: string;
  request: (c: Ctx) => JsonObject;
  expect: Expected;
  /** The bearer token; the operator's when omitted, none at all when null. */
  token?: string | null | ((c: Ctx) => string);
}

interface Setup {
  project: string;
  /** Creates a regulatory listing in the case's project, one clock second later. */
  listing(key: string, listing: JsonObject): Promise<void>;
  /** Creates an unsubscriber in the case's project, one clock second later. */
  unsubscriber(key: string, unsubscriber: JsonObject): Promise<void>;
  /** Creates an API key holding `permissions` on the case's project. */
  apiKey(key: string, permissions: string[]): Promise<void>;
}

interface Case {
  name: string;
  setup?: (s: Setup) => Promise<void>;
  steps: Step[];
  /**
   * A bug of the server this case shows: the case runs as `it.fails`, so
   * the suite stays green until it is fixed, then goes red to have the
   * marker removed.
   */
  knownBug?: string;
}

const ok = (json: JsonValue): Expected => ({ ok: true, json });

const invalid = (fieldViolations: (string | RegExp)[], message?: string | RegExp): Expected => ({
  ok: false,
  code: "INVALID_ARGUMENT",
  reason: "INVALID_ARGUMENT",
  fieldViolations,
  ...(message === undefined ? {} : { message }),
});

const notFound = (name: string): Expected => ({
  ok: false,
  code: "NOT_FOUND",
  reason: "RESOURCE_NOT_FOUND",
  message: `${name} not found`,
});

const unauthenticated: Expected = {
  ok: false,
  code: "UNAUTHENTICATED",
  reason: "CREDENTIALS_MISSING",
  message: "missing credentials: send 'Authorization: Bearer <api key secret>'",
};

const step = (
  service: DescService,
  method: string,
  request: (c: Ctx) => JsonObject,
  expected: Expected,
  token?: Step["token"],
): Step => ({ service, method, request, expect: expected, ...(token === undefined ? {} : { token }) });

/** A listing as the API shows it, created `second` seconds after START. */
function listing(name: string, second: number, fields: JsonObject): JsonObject {
  return { name, createTime: t(second), valid: true, ...fields };
}

function unsubscriber(name: string, second: number, fields: JsonObject): JsonObject {
  return { name, createTime: t(second), unsubscribeMethod: "MANUAL", ...fields };
}

const NEW_LISTING = "projects/{project}/regulatoryListings/{id}";
const NEW_UNSUBSCRIBER = "projects/{project}/unsubscribers/{id}";

const REGULATORY_LISTING_CASES: Case[] = [
  {
    name: "CreateRegulatoryListing",
    steps: [
      step(
        RL,
        "CreateRegulatoryListing",
        (c) => ({
          parent: c.project,
          regulatoryListing: {
            displayName: "Ada at home",
            address: AU_ADDRESS,
            person: ADA,
            // Output only: ignored.
            createTime: "2001-02-03T04:05:06.789Z",
            valid: false,
            verified: true,
          },
        }),
        ok(listing(NEW_LISTING, 1, { displayName: "Ada at home", address: AU_ADDRESS, person: ADA })),
      ),
      step(
        RL,
        "GetRegulatoryListing",
        (c) => ({ name: c.last.name as string }),
        ok(listing(NEW_LISTING, 1, { displayName: "Ada at home", address: AU_ADDRESS, person: ADA })),
      ),
    ],
  },
  {
    name: "CreateRegulatoryListing-Business",
    steps: [
      step(
        RL,
        "CreateRegulatoryListing",
        (c) => ({ parent: c.project, regulatoryListing: { address: NZ_ADDRESS, business: ACME } }),
        ok(listing(NEW_LISTING, 1, { address: NZ_ADDRESS, business: ACME })),
      ),
    ],
  },
  {
    name: "CreateRegulatoryListing-PostalCode",
    steps: [
      step(
        RL,
        "CreateRegulatoryListing",
        (c) => ({
          parent: c.project,
          regulatoryListing: { address: { ...AU_ADDRESS, postalCode: "123" }, person: ADA },
        }),
        invalid(["regulatory_listing.address.postal_code"], /exactly 4 digits/),
      ),
      step(RL, "ListRegulatoryListings", (c) => ({ parent: c.project }), ok({})),
    ],
  },
  {
    name: "CreateRegulatoryListing-AddressLines",
    steps: [
      step(
        RL,
        "CreateRegulatoryListing",
        (c) => ({
          parent: c.project,
          regulatoryListing: { address: { ...AU_ADDRESS, addressLines: [x(201), ""] }, person: ADA },
        }),
        invalid([
          "regulatory_listing.address.address_lines[0]",
          "regulatory_listing.address.address_lines[1]",
        ]),
      ),
    ],
  },
  {
    name: "CreateRegulatoryListing-PersonNames",
    steps: [
      step(
        RL,
        "CreateRegulatoryListing",
        (c) => ({
          parent: c.project,
          regulatoryListing: { address: AU_ADDRESS, person: { givenName: x(101), familyName: "" } },
        }),
        invalid(["regulatory_listing.person.given_name", "regulatory_listing.person.family_name"]),
      ),
    ],
  },
  {
    name: "CreateRegulatoryListing-SeveralProblems",
    steps: [
      step(
        RL,
        "CreateRegulatoryListing",
        (c) => ({
          parent: c.project,
          regulatoryListing: { displayName: "ok", address: { ...AU_ADDRESS, postalCode: "1", locality: "" } },
        }),
        invalid([
          "regulatory_listing.address.locality",
          "regulatory_listing.address.postal_code",
          "regulatory_listing.entity",
        ]),
      ),
    ],
  },
  {
    name: "CreateRegulatoryListing-NoListing",
    steps: [
      step(RL, "CreateRegulatoryListing", (c) => ({ parent: c.project }), invalid(["regulatory_listing"])),
    ],
  },
  {
    name: "GetRegulatoryListing",
    setup: (s) => s.listing("ada", { displayName: "Ada", address: AU_ADDRESS, person: ADA }),
    steps: [
      step(
        RL,
        "GetRegulatoryListing",
        (c) => ({ name: c.name("ada") }),
        ok(listing("{ada}", 1, { displayName: "Ada", address: AU_ADDRESS, person: ADA })),
      ),
    ],
  },
  {
    name: "GetRegulatoryListing-NotFound",
    steps: [
      step(
        RL,
        "GetRegulatoryListing",
        (c) => ({ name: `${c.project}/regulatoryListings/unknown` }),
        notFound("projects/{project}/regulatoryListings/unknown"),
      ),
    ],
  },
  {
    name: "ListRegulatoryListings",
    setup: async (s) => {
      for (let i = 0; i < 5; i++)
        await s.listing(`l${i}`, { displayName: `n${i}`, address: AU_ADDRESS, person: ADA });
    },
    steps: [
      step(
        RL,
        "ListRegulatoryListings",
        (c) => ({ parent: c.project, pageSize: 2 }),
        ok({
          regulatoryListings: [4, 3].map((i) =>
            listing(`{l${i}}`, i + 1, { displayName: `n${i}`, address: AU_ADDRESS, person: ADA }),
          ),
          nextPageToken: "{token}",
        }),
      ),
      step(
        RL,
        "ListRegulatoryListings",
        (c) => ({ parent: c.project, pageSize: 2, pageToken: c.last.nextPageToken as string }),
        ok({
          regulatoryListings: [2, 1].map((i) =>
            listing(`{l${i}}`, i + 1, { displayName: `n${i}`, address: AU_ADDRESS, person: ADA }),
          ),
          nextPageToken: "{token}",
        }),
      ),
      step(
        RL,
        "ListRegulatoryListings",
        (c) => ({ parent: c.project, pageSize: 2, pageToken: c.last.nextPageToken as string }),
        ok({
          regulatoryListings: [listing("{l0}", 1, { displayName: "n0", address: AU_ADDRESS, person: ADA })],
        }),
      ),
    ],
  },
  {
    name: "ListRegulatoryListings-Empty",
    steps: [step(RL, "ListRegulatoryListings", (c) => ({ parent: c.project, pageSize: 100 }), ok({}))],
  },
  {
    name: "ListRegulatoryListings-NegativePageSize",
    steps: [
      step(
        RL,
        "ListRegulatoryListings",
        (c) => ({ parent: c.project, pageSize: -1 }),
        invalid(["page_size"]),
      ),
    ],
  },
  {
    name: "ListRegulatoryListings-BadPageToken",
    steps: [
      step(
        RL,
        "ListRegulatoryListings",
        (c) => ({ parent: c.project, pageToken: "not a token!" }),
        invalid(["page_token"]),
      ),
    ],
  },
  {
    name: "UpdateRegulatoryListing",
    setup: (s) => s.listing("ada", { displayName: "before", address: AU_ADDRESS, person: ADA }),
    steps: [
      step(
        RL,
        "UpdateRegulatoryListing",
        (c) => ({
          // The mask names display_name only: the other address is not looked at.
          regulatoryListing: { name: c.name("ada"), displayName: "after", address: US_ADDRESS },
          updateMask: "displayName",
        }),
        ok(listing("{ada}", 1, { displayName: "after", address: AU_ADDRESS, person: ADA })),
      ),
      step(
        RL,
        "GetRegulatoryListing",
        (c) => ({ name: c.name("ada") }),
        ok(listing("{ada}", 1, { displayName: "after", address: AU_ADDRESS, person: ADA })),
      ),
    ],
  },
  {
    name: "UpdateRegulatoryListing-NoMask",
    setup: (s) => s.listing("ada", { displayName: "before", address: AU_ADDRESS, person: ADA }),
    steps: [
      step(
        RL,
        "UpdateRegulatoryListing",
        (c) => ({ regulatoryListing: { name: c.name("ada"), displayName: "after" } }),
        ok(listing("{ada}", 1, { displayName: "after", address: AU_ADDRESS, person: ADA })),
      ),
    ],
  },
  {
    name: "UpdateRegulatoryListing-ClearedThroughMask",
    setup: (s) => s.listing("ada", { displayName: "before", address: AU_ADDRESS, person: ADA }),
    steps: [
      step(
        RL,
        "UpdateRegulatoryListing",
        (c) => ({ regulatoryListing: { name: c.name("ada") }, updateMask: "displayName" }),
        ok(listing("{ada}", 1, { address: AU_ADDRESS, person: ADA })),
      ),
    ],
  },
  {
    name: "UpdateRegulatoryListing-Immutable",
    setup: (s) => s.listing("ada", { displayName: "before", address: AU_ADDRESS, person: ADA }),
    steps: [
      step(
        RL,
        "UpdateRegulatoryListing",
        (c) => ({
          regulatoryListing: { name: c.name("ada"), displayName: "changed", address: US_ADDRESS },
          updateMask: "displayName,address",
        }),
        invalid(["regulatory_listing.address"]),
      ),
      step(
        RL,
        "GetRegulatoryListing",
        (c) => ({ name: c.name("ada") }),
        ok(listing("{ada}", 1, { displayName: "before", address: AU_ADDRESS, person: ADA })),
      ),
    ],
  },
  {
    name: "UpdateRegulatoryListing-ImmutableNested",
    setup: (s) => s.listing("ada", { displayName: "before", address: AU_ADDRESS, person: ADA }),
    steps: [
      step(
        RL,
        "UpdateRegulatoryListing",
        (c) => ({
          regulatoryListing: { name: c.name("ada"), address: { ...AU_ADDRESS, locality: "Parramatta" } },
          updateMask: "address.locality",
        }),
        invalid(["regulatory_listing.address.locality"]),
      ),
    ],
  },
  {
    name: "UpdateRegulatoryListing-ImmutableEntity",
    setup: (s) => s.listing("ada", { displayName: "before", address: AU_ADDRESS, person: ADA }),
    steps: [
      step(
        RL,
        "UpdateRegulatoryListing",
        (c) => ({ regulatoryListing: { name: c.name("ada"), displayName: "changed", business: ACME } }),
        invalid(["regulatory_listing.business"]),
      ),
    ],
  },
  {
    name: "UpdateRegulatoryListing-BadMask",
    setup: (s) => s.listing("ada", { displayName: "before", address: AU_ADDRESS, person: ADA }),
    steps: [
      step(
        RL,
        "UpdateRegulatoryListing",
        (c) => ({ regulatoryListing: { name: c.name("ada"), displayName: "x" }, updateMask: "nope" }),
        invalid(["update_mask"]),
      ),
    ],
  },
  {
    name: "UpdateRegulatoryListing-DisplayNameTooLong",
    setup: (s) => s.listing("ada", { displayName: "before", address: AU_ADDRESS, person: ADA }),
    steps: [
      step(
        RL,
        "UpdateRegulatoryListing",
        (c) => ({ regulatoryListing: { name: c.name("ada"), displayName: x(101) } }),
        invalid(["regulatory_listing.display_name"]),
      ),
    ],
  },
  {
    name: "UpdateRegulatoryListing-NotFound",
    steps: [
      step(
        RL,
        "UpdateRegulatoryListing",
        (c) => ({ regulatoryListing: { name: `${c.project}/regulatoryListings/unknown`, displayName: "x" } }),
        notFound("projects/{project}/regulatoryListings/unknown"),
      ),
    ],
  },
  {
    name: "DeleteRegulatoryListing",
    setup: async (s) => {
      await s.listing("ada", { displayName: "Ada", address: AU_ADDRESS, person: ADA });
      await s.listing("keep", { displayName: "keep", address: AU_ADDRESS, person: ADA });
    },
    steps: [
      step(RL, "DeleteRegulatoryListing", (c) => ({ name: c.name("ada") }), ok({})),
      step(RL, "DeleteRegulatoryListing", (c) => ({ name: c.name("ada") }), notFound("{ada}")),
      step(RL, "GetRegulatoryListing", (c) => ({ name: c.name("ada") }), notFound("{ada}")),
      step(
        RL,
        "ListRegulatoryListings",
        (c) => ({ parent: c.project }),
        ok({
          regulatoryListings: [
            listing("{keep}", 2, { displayName: "keep", address: AU_ADDRESS, person: ADA }),
          ],
        }),
      ),
    ],
  },
  {
    name: "SearchRegulatoryListings",
    setup: async (s) => {
      await s.listing("au1", { displayName: "au1", address: AU_ADDRESS, person: ADA });
      await s.listing("nz", { displayName: "nz", address: NZ_ADDRESS, business: ACME });
      await s.listing("au2", { displayName: "au2", address: AU_ADDRESS, business: ACME });
      await s.listing("gb", { displayName: "gb", address: GB_ADDRESS, person: ADA });
    },
    steps: [
      step(
        RL,
        "SearchRegulatoryListings",
        (c) => ({ parent: c.project, regionCode: "AU", numberType: "LOCAL", pageSize: 1 }),
        ok({
          regulatoryListings: [
            listing("{au2}", 3, { displayName: "au2", address: AU_ADDRESS, business: ACME }),
          ],
          nextPageToken: "{token}",
        }),
      ),
      step(
        RL,
        "SearchRegulatoryListings",
        (c) => ({
          parent: c.project,
          regionCode: "AU",
          numberType: "LOCAL",
          pageSize: 1,
          pageToken: c.last.nextPageToken as string,
        }),
        ok({
          regulatoryListings: [listing("{au1}", 1, { displayName: "au1", address: AU_ADDRESS, person: ADA })],
        }),
      ),
      // MOBILE numbers need a verified listing; none is.
      step(
        RL,
        "SearchRegulatoryListings",
        (c) => ({ parent: c.project, regionCode: "AU", numberType: "MOBILE" }),
        ok({}),
      ),
    ],
  },
  {
    name: "SearchRegulatoryListings-Invalid",
    steps: [
      step(
        RL,
        "SearchRegulatoryListings",
        (c) => ({ parent: c.project, regionCode: "au" }),
        invalid(["region_code", "number_type"]),
      ),
    ],
  },
];

const UNSUBSCRIBER_CASES: Case[] = [
  {
    name: "CreateUnsubscriber",
    steps: [
      step(
        U,
        "CreateUnsubscriber",
        (c) => ({
          parent: c.project,
          unsubscriber: {
            phone: PHONE,
            unsubscribeMethod: "URL",
            labels: { campaign: "spring", "a b/c": "ü" },
          },
        }),
        ok(
          unsubscriber(NEW_UNSUBSCRIBER, 1, {
            phone: PHONE,
            unsubscribeMethod: "URL",
            labels: { campaign: "spring", "a b/c": "ü" },
          }),
        ),
      ),
      step(
        U,
        "GetUnsubscriber",
        (c) => ({ name: c.last.name as string }),
        ok(
          unsubscriber(NEW_UNSUBSCRIBER, 1, {
            phone: PHONE,
            unsubscribeMethod: "URL",
            labels: { campaign: "spring", "a b/c": "ü" },
          }),
        ),
      ),
    ],
  },
  {
    name: "CreateUnsubscriber-DefaultMethod",
    steps: [
      step(
        U,
        "CreateUnsubscriber",
        (c) => ({ parent: c.project, unsubscriber: { phone: PHONE } }),
        ok(unsubscriber(NEW_UNSUBSCRIBER, 1, { phone: PHONE })),
      ),
    ],
  },
  {
    name: "CreateUnsubscriber-AlreadyExists",
    setup: (s) => s.unsubscriber("first", { phone: PHONE }),
    steps: [
      step(
        U,
        "CreateUnsubscriber",
        (c) => ({ parent: c.project, unsubscriber: { phone: PHONE, labels: { again: "yes" } } }),
        {
          ok: false,
          code: "ALREADY_EXISTS",
          reason: "RESOURCE_ALREADY_EXISTS",
          message: `${PHONE} is already an unsubscriber of projects/{project}`,
        },
      ),
    ],
  },
  {
    name: "CreateUnsubscriber-Phone",
    steps: [
      step(
        U,
        "CreateUnsubscriber",
        (c) => ({ parent: c.project, unsubscriber: { phone: "0491570156" } }),
        invalid(["unsubscriber.phone"]),
      ),
    ],
  },
  {
    name: "CreateUnsubscriber-Labels",
    steps: [
      step(
        U,
        "CreateUnsubscriber",
        (c) => ({
          parent: c.project,
          unsubscriber: {
            phone: "+6149157015612345",
            labels: { [`k${x(100)}`]: "v", "": "v", 'q"uote': x(1001), ok: "fine" },
          },
        }),
        invalid([
          "unsubscriber.phone",
          `unsubscriber.labels["k${x(100)}"]`,
          'unsubscriber.labels[""]',
          'unsubscriber.labels["q\\"uote"]',
        ]),
      ),
    ],
  },
  {
    // Errors are bounded (src/api/errors.ts): gRPC carries them in trailers,
    // which Node caps near 64 KiB; the 20,000-character key comes back clipped.
    name: "CreateUnsubscriber-HugeLabelKey",
    steps: [
      step(
        U,
        "CreateUnsubscriber",
        (c) => ({ parent: c.project, unsubscriber: { phone: PHONE, labels: { [`k${x(20_000)}`]: "v" } } }),
        // However the fix words the path (clipped or not), it names the label.
        invalid([/^unsubscriber\.labels\["kxxx/]),
      ),
    ],
  },
  {
    // 50 keys of 101 "é" (each 6 bytes once percent-encoded in grpc-message):
    // at most 25 violations come back, on every transport.
    name: "CreateUnsubscriber-ManyBadLabelKeys",
    steps: [
      step(
        U,
        "CreateUnsubscriber",
        (c) => ({
          parent: c.project,
          unsubscriber: {
            phone: PHONE,
            labels: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`${"é".repeat(100)}${i}`, "v"])),
          },
        }),
        invalid(Array.from({ length: 25 }, () => /^unsubscriber\.labels\["é{100}\d+"\]$/)),
      ),
    ],
  },
  {
    name: "CreateUnsubscriber-NoUnsubscriber",
    steps: [step(U, "CreateUnsubscriber", (c) => ({ parent: c.project }), invalid(["unsubscriber"]))],
  },
  {
    name: "GetUnsubscriber",
    setup: (s) => s.unsubscriber("u", { phone: PHONE, unsubscribeMethod: "MESSAGE", labels: { a: "1" } }),
    steps: [
      step(
        U,
        "GetUnsubscriber",
        (c) => ({ name: c.name("u") }),
        ok(unsubscriber("{u}", 1, { phone: PHONE, unsubscribeMethod: "MESSAGE", labels: { a: "1" } })),
      ),
    ],
  },
  {
    name: "GetUnsubscriber-NotFound",
    steps: [
      step(
        U,
        "GetUnsubscriber",
        (c) => ({ name: `${c.project}/unsubscribers/nobody` }),
        notFound("projects/{project}/unsubscribers/nobody"),
      ),
    ],
  },
  {
    name: "ListUnsubscribers",
    setup: async (s) => {
      for (let i = 0; i < 5; i++) await s.unsubscriber(`u${i}`, { phone: mobile(i) });
    },
    steps: [
      step(
        U,
        "ListUnsubscribers",
        (c) => ({ parent: c.project, pageSize: 3 }),
        ok({
          unsubscribers: [4, 3, 2].map((i) => unsubscriber(`{u${i}}`, i + 1, { phone: mobile(i) })),
          nextPageToken: "{token}",
        }),
      ),
      step(
        U,
        "ListUnsubscribers",
        (c) => ({ parent: c.project, pageSize: 3, pageToken: c.last.nextPageToken as string }),
        ok({ unsubscribers: [1, 0].map((i) => unsubscriber(`{u${i}}`, i + 1, { phone: mobile(i) })) }),
      ),
    ],
  },
  {
    name: "ListUnsubscribers-Phone",
    setup: async (s) => {
      await s.unsubscriber("a", { phone: PHONE });
      await s.unsubscriber("b", { phone: mobile(1) });
    },
    steps: [
      step(
        U,
        "ListUnsubscribers",
        (c) => ({ parent: c.project, phone: PHONE }),
        ok({ unsubscribers: [unsubscriber("{a}", 1, { phone: PHONE })] }),
      ),
      step(
        U,
        "ListUnsubscribers",
        (c) => ({ parent: c.project, phone: "+61 491 570 156" }),
        ok({ unsubscribers: [unsubscriber("{a}", 1, { phone: PHONE })] }),
      ),
      step(U, "ListUnsubscribers", (c) => ({ parent: c.project, phone: "not a number" }), invalid(["phone"])),
    ],
  },
  {
    name: "ListUnsubscribers-TokenOfAnotherFilter",
    setup: async (s) => {
      await s.unsubscriber("a", { phone: PHONE });
      await s.unsubscriber("b", { phone: mobile(1) });
    },
    steps: [
      step(
        U,
        "ListUnsubscribers",
        (c) => ({ parent: c.project, pageSize: 1 }),
        ok({ unsubscribers: [unsubscriber("{b}", 2, { phone: mobile(1) })], nextPageToken: "{token}" }),
      ),
      step(
        U,
        "ListUnsubscribers",
        (c) => ({ parent: c.project, phone: PHONE, pageToken: c.last.nextPageToken as string }),
        invalid(["page_token"]),
      ),
    ],
  },
  {
    name: "UpdateUnsubscriber",
    setup: (s) => s.unsubscriber("u", { phone: PHONE, unsubscribeMethod: "MESSAGE", labels: { a: "1" } }),
    steps: [
      step(
        U,
        "UpdateUnsubscriber",
        (c) => ({ unsubscriber: { name: c.name("u"), labels: { b: "2" } }, updateMask: "labels" }),
        ok(unsubscriber("{u}", 1, { phone: PHONE, unsubscribeMethod: "MESSAGE", labels: { b: "2" } })),
      ),
      step(
        U,
        "GetUnsubscriber",
        (c) => ({ name: c.name("u") }),
        ok(unsubscriber("{u}", 1, { phone: PHONE, unsubscribeMethod: "MESSAGE", labels: { b: "2" } })),
      ),
    ],
  },
  {
    name: "UpdateUnsubscriber-Immutable",
    setup: (s) => s.unsubscriber("u", { phone: PHONE, unsubscribeMethod: "MESSAGE", labels: { a: "1" } }),
    steps: [
      step(
        U,
        "UpdateUnsubscriber",
        (c) => ({ unsubscriber: { name: c.name("u"), phone: mobile(5), labels: { z: "9" } } }),
        invalid(["unsubscriber.phone"]),
      ),
      step(
        U,
        "UpdateUnsubscriber",
        (c) => ({
          unsubscriber: { name: c.name("u"), unsubscribeMethod: "URL" },
          updateMask: "unsubscribeMethod",
        }),
        invalid(["unsubscriber.unsubscribe_method"]),
      ),
      step(
        U,
        "GetUnsubscriber",
        (c) => ({ name: c.name("u") }),
        ok(unsubscriber("{u}", 1, { phone: PHONE, unsubscribeMethod: "MESSAGE", labels: { a: "1" } })),
      ),
    ],
  },
  {
    name: "UpdateUnsubscriber-Labels",
    setup: (s) => s.unsubscriber("u", { phone: PHONE }),
    steps: [
      step(
        U,
        "UpdateUnsubscriber",
        (c) => ({ unsubscriber: { name: c.name("u"), labels: { [x(101)]: "v" } } }),
        invalid([`unsubscriber.labels["${x(101)}"]`]),
      ),
    ],
  },
  {
    name: "UpdateUnsubscriber-NotFound",
    steps: [
      step(
        U,
        "UpdateUnsubscriber",
        (c) => ({ unsubscriber: { name: `${c.project}/unsubscribers/nobody`, labels: { a: "b" } } }),
        notFound("projects/{project}/unsubscribers/nobody"),
      ),
    ],
  },
  {
    name: "DeleteUnsubscriber",
    setup: async (s) => {
      await s.unsubscriber("u", { phone: PHONE, unsubscribeMethod: "URL", labels: { k: "v" } });
      await s.unsubscriber("other", { phone: mobile(1) });
    },
    steps: [
      step(
        U,
        "DeleteUnsubscriber",
        (c) => ({ name: c.name("u") }),
        ok(unsubscriber("{u}", 1, { phone: PHONE, unsubscribeMethod: "URL", labels: { k: "v" } })),
      ),
      step(U, "DeleteUnsubscriber", (c) => ({ name: c.name("u") }), notFound("{u}")),
      step(
        U,
        "ListUnsubscribers",
        (c) => ({ parent: c.project }),
        ok({ unsubscribers: [unsubscriber("{other}", 2, { phone: mobile(1) })] }),
      ),
    ],
  },
];

/** A well-formed request of every rpc, sent without a credential; a wrong one; an API key lacking a permission. */
const AUTHENTICATION_CASES: Case[] = [
  ...(
    [
      [
        RL,
        "CreateRegulatoryListing",
        (c) => ({ parent: c.project, regulatoryListing: { address: AU_ADDRESS, person: ADA } }),
      ],
      [RL, "GetRegulatoryListing", (c) => ({ name: `${c.project}/regulatoryListings/abc` })],
      [RL, "ListRegulatoryListings", (c) => ({ parent: c.project })],
      [
        RL,
        "UpdateRegulatoryListing",
        (c) => ({ regulatoryListing: { name: `${c.project}/regulatoryListings/abc`, displayName: "x" } }),
      ],
      [RL, "DeleteRegulatoryListing", (c) => ({ name: `${c.project}/regulatoryListings/abc` })],
      [RL, "SearchRegulatoryListings", (c) => ({ parent: c.project, regionCode: "AU", numberType: "LOCAL" })],
      [U, "CreateUnsubscriber", (c) => ({ parent: c.project, unsubscriber: { phone: PHONE } })],
      [U, "GetUnsubscriber", (c) => ({ name: `${c.project}/unsubscribers/abc` })],
      [U, "ListUnsubscribers", (c) => ({ parent: c.project })],
      [
        U,
        "UpdateUnsubscriber",
        (c) => ({ unsubscriber: { name: `${c.project}/unsubscribers/abc`, labels: { a: "b" } } }),
      ],
      [U, "DeleteUnsubscriber", (c) => ({ name: `${c.project}/unsubscribers/abc` })],
    ] as [DescService, string, (c: Ctx) => JsonObject][]
  ).map(([service, method, request]) => ({
    name: `${method}-Unauthenticated`,
    steps: [step(service, method, request, unauthenticated, null)],
  })),
  {
    name: "ListUnsubscribers-WrongToken",
    steps: [
      step(
        U,
        "ListUnsubscribers",
        (c) => ({ parent: c.project }),
        { ok: false, code: "UNAUTHENTICATED", reason: "CREDENTIALS_INVALID" },
        "not-the-operator-token",
      ),
    ],
  },
  {
    name: "Unsubscribers-ApiKey",
    setup: async (s) => {
      await s.unsubscriber("u", { phone: PHONE });
      await s.apiKey("reader", ["messaging.unsubscribers.get"]);
    },
    steps: [
      step(
        U,
        "GetUnsubscriber",
        (c) => ({ name: c.name("u") }),
        ok(unsubscriber("{u}", 1, { phone: PHONE })),
        (c) => c.secret("reader"),
      ),
      step(
        U,
        "CreateUnsubscriber",
        (c) => ({ parent: c.project, unsubscriber: { phone: mobile(1) } }),
        {
          ok: false,
          code: "PERMISSION_DENIED",
          reason: "PERMISSION_DENIED",
          message:
            "permission 'messaging.unsubscribers.create' denied on 'projects/{project}' (or it does not exist)",
        },
        (c) => c.secret("reader"),
      ),
      step(
        U,
        "GetUnsubscriber",
        () => ({ name: "projects/elsewhere/unsubscribers/abc" }),
        {
          ok: false,
          code: "PERMISSION_DENIED",
          reason: "PERMISSION_DENIED",
          message:
            "permission 'messaging.unsubscribers.get' denied on 'projects/elsewhere' (or it does not exist)",
        },
        (c) => c.secret("reader"),
      ),
    ],
  },
];

// ---------------------------------------------------------------------------
// Running a case

/**
 * Masks what differs from transport to transport: the resources made for
 * the case (`{key}`), the project (`{project}`), generated ids (`{id}`) and
 * non-empty page tokens (`{token}`).
 */
function masker(project: string, names: Map<string, string>): (value: JsonValue, key?: string) => JsonValue {
  const byLength = [...names].sort(([, a], [, b]) => b.length - a.length);
  const maskString = (s: string) => {
    let out = s;
    for (const [key, name] of byLength) out = out.split(name).join(`{${key}}`);
    out = out.split(project).join("projects/{project}");
    return out.replace(/\/(regulatoryListings|unsubscribers)\/[a-z][a-z0-9]{15}(?![a-z0-9])/g, "/$1/{id}");
  };
  const mask = (value: JsonValue, key?: string): JsonValue => {
    if (typeof value === "string") {
      if (key === "nextPageToken" && value !== "") return "{token}";
      return maskString(value);
    }
    if (Array.isArray(value)) return value.map((v) => mask(v));
    if (value !== null && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [maskString(k), mask(v, k)]));
    }
    return value;
  };
  return mask;
}

function maskOutcome(outcome: Outcome, mask: (value: JsonValue) => JsonValue): Outcome {
  if (outcome.ok) return { ok: true, json: mask(outcome.json) };
  // Every request has an id of its own (ErrorInfo.metadata.requestId): not compared.
  const { requestId: _requestId, ...metadata } = outcome.metadata;
  return {
    ...outcome,
    message: mask(outcome.message) as string,
    metadata: mask(metadata) as Record<string, string>,
  };
}

interface Harness {
  clock: TestClock;
  db: () => Db;
  /** In-process, for the setup of a case. */
  setupTransport: () => Transport;
}

/** Runs `kase` on `adapter` in a project of its own; returns the masked outcome of each step. */
async function runCase(h: Harness, adapter: TransportAdapter, kase: Case): Promise<Outcome[]> {
  h.clock.set(START);
  const project = await newProject(h.db());
  const names = new Map<string, string>();
  const secrets = new Map<string, string>();
  const setupCreate = async (service: DescService, method: string, key: string, json: JsonObject) => {
    h.clock.advance(1000);
    const m = unaryMethod(service, method);
    const res = await h.setupTransport().unary(m, undefined, undefined, undefined, fromJson(m.input, json));
    names.set(key, (toJson(m.output, res.message) as JsonObject).name as string);
  };
  await kase.setup?.({
    project,
    listing: (key, listingJson) =>
      setupCreate(RL, "CreateRegulatoryListing", key, { parent: project, regulatoryListing: listingJson }),
    unsubscriber: (key, unsubscriberJson) =>
      setupCreate(U, "CreateUnsubscriber", key, { parent: project, unsubscriber: unsubscriberJson }),
    apiKey: async (key, permissions) => {
      secrets.set(key, (await newApiKey(h.db(), [{ project, permissions }])).secret);
    },
  });
  const mask = masker(project, names);
  const ctx: Ctx = {
    project,
    last: {},
    name(key) {
      const name = names.get(key);
      if (name === undefined) throw new Error(`the setup of ${kase.name} made no ${key}`);
      return name;
    },
    secret(key) {
      const secret = secrets.get(key);
      if (secret === undefined) throw new Error(`the setup of ${kase.name} made no API key ${key}`);
      return secret;
    },
  };
  const outcomes: Outcome[] = [];
  for (const s of kase.steps) {
    h.clock.advance(1000);
    const token =
      s.token === null
        ? undefined
        : typeof s.token === "function"
          ? s.token(ctx)
          : (s.token ?? TEST_OPERATOR_TOKEN);
    const outcome = await adapter.call(s.service, s.method, s.request(ctx), token);
    ctx.last = outcome.ok ? (outcome.json as JsonObject) : {};
    outcomes.push(maskOutcome(outcome, mask));
  }
  return outcomes;
}

/** What of an outcome the expectation speaks about. */
function expectedView(outcome: Outcome, expected: Expected): unknown {
  if (outcome.ok || expected.ok) return outcome;
  return {
    ok: false,
    code: outcome.code,
    reason: outcome.reason,
    fieldViolations: [...outcome.fieldViolations].sort(),
    ...(expected.message === undefined ? {} : { message: outcome.message }),
  };
}

function expectedShape(expected: Expected): unknown {
  if (expected.ok) return { ok: true, json: expected.json };
  return {
    ok: false,
    code: expected.code,
    reason: expected.reason,
    fieldViolations: (expected.fieldViolations ?? [])
      .map((f) => (typeof f === "string" ? f : expect.stringMatching(f)))
      .sort(),
    ...(expected.message === undefined
      ? {}
      : {
          message:
            typeof expected.message === "string" ? expected.message : expect.stringMatching(expected.message),
        }),
  };
}

// ---------------------------------------------------------------------------

describe("Transport matrix", () => {
  const backend = testDatabases()[0]!;
  const database = useTestDatabase(backend);
  const clock = new TestClock(START);
  let app: App;
  let adapters: TransportAdapter[];
  let setupTransport: Transport;

  beforeAll(async () => {
    app = await build({ config: testConfig(), db: database.db, clock });
    const address = await app.listen(0, "127.0.0.1");
    adapters = await allAdapters(address.port, [RL, U]);
    setupTransport = createTestTransport(database.db, clock);
  });

  afterAll(async () => {
    for (const a of adapters ?? []) await a.close();
    await app?.close();
  });

  const harness: Harness = { clock, db: () => database.db, setupTransport: () => setupTransport };

  it("runs every transport", () => {
    expect(adapters.map((a) => a.name)).toEqual(TRANSPORT_NAMES);
  });

  describe.each([
    { service: "RegulatoryListings", cases: REGULATORY_LISTING_CASES },
    { service: "Unsubscribers", cases: UNSUBSCRIBER_CASES },
    { service: "Authentication", cases: AUTHENTICATION_CASES },
  ])("$service", ({ cases }) => {
    for (const kase of cases) {
      const test = kase.knownBug === undefined ? it : it.fails;
      test(kase.knownBug === undefined ? kase.name : `${kase.name} (known bug)`, async () => {
        const results = new Map<TransportName, Outcome[]>();
        for (const adapter of adapters) results.set(adapter.name, await runCase(harness, adapter, kase));
        kase.steps.forEach((s, i) => {
          const label = `step ${i + 1}: ${s.method}`;
          const byTransport = new Map([...results].map(([name, outcomes]) => [name, outcomes[i]!]));
          const reference = byTransport.get("connect-json")!;
          // The six transports agree...
          expect
            .soft(Object.fromEntries(byTransport), `${label}: the transports disagree`)
            .toEqual(Object.fromEntries([...byTransport.keys()].map((name) => [name, reference])));
          // ...and give what the table says (checked once when they agree).
          for (const [name, outcome] of byTransport) {
            if (name !== "connect-json" && isDeepStrictEqual(outcome, reference)) continue;
            expect
              .soft(expectedView(outcome, s.expect), `${label} over ${name}`)
              .toEqual(expectedShape(s.expect));
          }
        });
      });
    }
  });
});
